// Package testgraph holds hand-written graphserver.Graph fakes for tests.
package testgraph

import (
	"context"

	"github.com/graphserver/graphserver"
)

// Nop is a Graph that cannot run: every method but Drawing, Schemas and
// Subgraphs returns EBADREQUEST. It lets tests register graph ids (and so
// system assistants) without an engine.
type Nop struct{}

var _ graphserver.Graph = Nop{}

var errNop = graphserver.Errorf(graphserver.EBADREQUEST, "testgraph.Nop cannot run")

// Run returns EBADREQUEST.
func (Nop) Run(context.Context, *graphserver.GraphRun, func(graphserver.StreamPart)) error {
	return errNop
}

// State returns EBADREQUEST.
func (Nop) State(context.Context, *graphserver.StateRequest) (*graphserver.ThreadState, error) {
	return nil, errNop
}

// History returns EBADREQUEST.
func (Nop) History(context.Context, *graphserver.HistoryRequest) ([]*graphserver.ThreadState, error) {
	return nil, errNop
}

// UpdateState returns EBADREQUEST.
func (Nop) UpdateState(context.Context, *graphserver.UpdateStateRequest) (*graphserver.Checkpoint, error) {
	return nil, errNop
}

// Drawing returns an empty drawing.
func (Nop) Drawing(context.Context, graphserver.Object, int) (*graphserver.Drawing, error) {
	return &graphserver.Drawing{}, nil
}

// Schemas returns no schemas.
func (Nop) Schemas(context.Context, graphserver.Object) (*graphserver.GraphSchemas, error) {
	return &graphserver.GraphSchemas{}, nil
}

// Subgraphs returns no subgraphs.
func (Nop) Subgraphs(context.Context, graphserver.Object, string, bool) (map[string]*graphserver.GraphSchemas, error) {
	return map[string]*graphserver.GraphSchemas{}, nil
}
