package main

import (
	"context"
	"encoding/json"

	"github.com/graphserver/graphserver"
)

// chatGraph is a tiny hand-written graph that answers with what it was
// given: its output values are its input. It keeps no state between runs.
// It stands in for a real chat graph until the graph engine is wired in.
type chatGraph struct{}

var _ graphserver.Graph = chatGraph{}

// Run emits the input back as the run's values.
func (chatGraph) Run(_ context.Context, req *graphserver.GraphRun, emit func(graphserver.StreamPart)) error {
	values := req.Input
	if len(values) == 0 {
		values = json.RawMessage("null")
	}
	emit(graphserver.StreamPart{Event: "values", Data: values})
	return nil
}

// State returns an empty state: the echo graph keeps none.
func (chatGraph) State(context.Context, *graphserver.StateRequest) (*graphserver.ThreadState, error) {
	return &graphserver.ThreadState{Values: map[string]any{}}, nil
}

// History returns no checkpoints.
func (chatGraph) History(context.Context, *graphserver.HistoryRequest) ([]*graphserver.ThreadState, error) {
	return []*graphserver.ThreadState{}, nil
}

// UpdateState is not supported by the echo graph.
func (chatGraph) UpdateState(context.Context, *graphserver.UpdateStateRequest) (*graphserver.Checkpoint, error) {
	return nil, graphserver.Errorf(graphserver.EBADREQUEST, "The chat example graph keeps no state")
}

// Drawing returns start -> echo -> end.
func (chatGraph) Drawing(context.Context, graphserver.Object, int) (*graphserver.Drawing, error) {
	return &graphserver.Drawing{
		Nodes: []graphserver.DrawingNode{
			{ID: "__start__", Type: "schema", Data: "__start__"},
			{ID: "echo", Type: "runnable", Data: "echo"},
			{ID: "__end__", Type: "schema", Data: "__end__"},
		},
		Edges: []graphserver.DrawingEdge{{Source: "__start__", Target: "echo"}, {Source: "echo", Target: "__end__"}},
	}, nil
}

// Schemas returns no schemas.
func (chatGraph) Schemas(context.Context, graphserver.Object) (*graphserver.GraphSchemas, error) {
	return &graphserver.GraphSchemas{GraphID: "chat"}, nil
}

// Subgraphs returns none.
func (chatGraph) Subgraphs(context.Context, graphserver.Object, string, bool) (map[string]*graphserver.GraphSchemas, error) {
	return map[string]*graphserver.GraphSchemas{}, nil
}
