package main

import (
	"context"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
)

// dynamicGraph is reference-graphs.md's "dynamic": a graph built for each
// call from config.configurable.nodeName (default "default"), with one node
// of that name. State reads and updates rebuild it from the thread's config,
// which the server passes in each request.
type dynamicGraph struct{}

var _ graphserver.Graph = dynamicGraph{}

// build compiles the graph config asks for. It is cheap (a one-node graph),
// so nothing is cached.
func (dynamicGraph) build(config graphserver.Object) (*graph.Compiled, error) {
	name := "default"
	var configurable map[string]any
	switch c := config["configurable"].(type) {
	case map[string]any:
		configurable = c
	case graphserver.Object:
		configurable = c
	}
	if n, ok := configurable["nodeName"].(string); ok && n != "" {
		name = n
	}
	g := graph.New(graph.Channels{
		"node":     graph.LastValue().WithSchema(`{"type": "string"}`),
		"messages": graph.Append().WithSchema(`{"type": "array", "items": {"type": "string"}}`),
	})
	g.AddNode(name, func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"node": name, "messages": []string{name}}, nil
	})
	g.AddEdge(graph.Start, name)
	g.AddEdge(name, graph.End)
	return g.Compile(graph.CompileOptions{Name: "dynamic"})
}

func (d dynamicGraph) Run(ctx context.Context, req *graphserver.GraphRun, emit func(graphserver.StreamPart)) error {
	g, err := d.build(req.Config)
	if err != nil {
		return err
	}
	return g.Run(ctx, req, emit)
}

func (d dynamicGraph) State(ctx context.Context, req *graphserver.StateRequest) (*graphserver.ThreadState, error) {
	g, err := d.build(req.Config)
	if err != nil {
		return nil, err
	}
	return g.State(ctx, req)
}

func (d dynamicGraph) History(ctx context.Context, req *graphserver.HistoryRequest) ([]*graphserver.ThreadState, error) {
	g, err := d.build(req.Config)
	if err != nil {
		return nil, err
	}
	return g.History(ctx, req)
}

func (d dynamicGraph) UpdateState(ctx context.Context, req *graphserver.UpdateStateRequest) (*graphserver.Checkpoint, error) {
	g, err := d.build(req.Config)
	if err != nil {
		return nil, err
	}
	return g.UpdateState(ctx, req)
}

func (d dynamicGraph) Drawing(ctx context.Context, config graphserver.Object, xray int) (*graphserver.Drawing, error) {
	g, err := d.build(config)
	if err != nil {
		return nil, err
	}
	return g.Drawing(ctx, config, xray)
}

func (d dynamicGraph) Schemas(ctx context.Context, config graphserver.Object) (*graphserver.GraphSchemas, error) {
	g, err := d.build(config)
	if err != nil {
		return nil, err
	}
	return g.Schemas(ctx, config)
}

func (d dynamicGraph) Subgraphs(ctx context.Context, config graphserver.Object, namespace string, recurse bool) (map[string]*graphserver.GraphSchemas, error) {
	g, err := d.build(config)
	if err != nil {
		return nil, err
	}
	return g.Subgraphs(ctx, config, namespace, recurse)
}
