package main

import (
	"context"
	"strconv"
	"time"

	"github.com/graphserver/graphserver/graph"
)

// errorGraph is reference-graphs.md's "error": its only node fails after one
// second with CustomError "Boo!".
func errorGraph() (*graph.Compiled, error) {
	g := graph.New(graph.Channels{"messages": graph.AddMessages()})
	g.AddNode("error_node", func(ctx context.Context, s graph.State) (any, error) {
		if err := sleep(ctx, time.Second); err != nil {
			return nil, err
		}
		return nil, &graph.NodeError{Name: "CustomError", Message: "Boo!"}
	})
	g.AddEdge(graph.Start, "error_node")
	return g.Compile(graph.CompileOptions{Name: "error"})
}

// delayGraph is reference-graphs.md's "delay": long_running sleeps "delay"
// milliseconds, then reports it.
func delayGraph() (*graph.Compiled, error) {
	g := graph.New(graph.Channels{
		"messages": graph.AddMessages(),
		"delay":    graph.LastValue().WithSchema(`{"type": "number"}`),
	})
	g.AddNode("long_running", func(ctx context.Context, s graph.State) (any, error) {
		d := s.Number("delay")
		if err := sleep(ctx, time.Duration(d*float64(time.Millisecond))); err != nil {
			return nil, err
		}
		return graph.Update{"messages": []any{"finished after " + strconv.FormatFloat(d, 'f', -1, 64) + "ms"}}, nil
	})
	g.AddEdge(graph.Start, "long_running")
	g.AddEdge("long_running", graph.End)
	return g.Compile(graph.CompileOptions{Name: "delay"})
}

// simpleRuntimeGraph is reference-graphs.md's "simple_runtime": its node
// copies the run's context model into the state.
func simpleRuntimeGraph() (*graph.Compiled, error) {
	const model = `{"type": "object", "properties": {"model": {"type": "string", "enum": ["anthropic", "openai", "unknown"]}}}`
	g := graph.New(graph.Channels{
		"message": graph.LastValue().WithSchema(`{"type": "string"}`),
		"model":   graph.LastValue().WithSchema(`{"type": "string", "enum": ["anthropic", "openai", "unknown"]}`),
	})
	g.SetSchema("config", model)
	g.SetSchema("context", model)
	g.AddNode("use_context", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"model": graph.RuntimeContext(ctx)["model"]}, nil
	})
	g.AddEdge(graph.Start, "use_context")
	return g.Compile(graph.CompileOptions{Name: "simple_runtime"})
}

// stateSchemaGraph, zodRegistryGraph and plainZodGraph are only introspected:
// their schemas mirror the JS graphs defined with StateSchema, zod with
// jsonSchemaExtra, and plain zod.
func stateSchemaGraph() (*graph.Compiled, error) {
	g := graph.New(graph.Channels{
		"messages": graph.AddMessages(),
		"count":    graph.LastValue().WithDefault(0).WithSchema(`{"type": "number", "default": 0}`),
	})
	g.AddNode("process", func(ctx context.Context, s graph.State) (any, error) {
		n := s.Number("count") + 1
		return graph.Update{"messages": []graph.Message{graph.AI("Response " + strconv.FormatFloat(n, 'f', -1, 64))}, "count": n}, nil
	})
	g.AddEdge(graph.Start, "process")
	g.AddEdge("process", graph.End)
	return g.Compile(graph.CompileOptions{Name: "state_schema_graph"})
}

func zodRegistryGraph() (*graph.Compiled, error) {
	g := graph.New(graph.Channels{
		"messages": graph.Append().WithSchema(`{"type": "array", "items": {"type": "string"}, "default": [], "langgraph_type": "messages"}`),
		"count":    graph.LastValue().WithDefault(0).WithSchema(`{"type": "number", "default": 0}`),
		"status":   graph.LastValue().WithDefault("idle").WithSchema(`{"type": "string", "enum": ["idle", "processing", "done"], "default": "idle"}`),
	})
	g.AddNode("process", func(ctx context.Context, s graph.State) (any, error) {
		n := s.Number("count") + 1
		return graph.Update{"messages": "Message " + strconv.FormatFloat(n, 'f', -1, 64), "count": n, "status": "processing"}, nil
	})
	g.AddEdge(graph.Start, "process")
	g.AddEdge("process", graph.End)
	return g.Compile(graph.CompileOptions{Name: "zod_registry_graph"})
}

func plainZodGraph() (*graph.Compiled, error) {
	g := graph.New(graph.Channels{
		"items":   graph.LastValue().WithDefault([]any{}).WithSchema(`{"type": "array", "items": {"type": "string"}, "default": []}`),
		"counter": graph.LastValue().WithDefault(0).WithSchema(`{"type": "number", "default": 0}`),
		"label":   graph.LastValue().WithSchema(`{"type": "string"}`),
	})
	g.AddNode("process", func(ctx context.Context, s graph.State) (any, error) {
		n := s.Number("counter") + 1
		items, _ := s["items"].([]any)
		items = append(append([]any{}, items...), "Item "+strconv.FormatFloat(n, 'f', -1, 64))
		return graph.Update{"items": items, "counter": n, "label": "processed"}, nil
	})
	g.AddEdge(graph.Start, "process")
	g.AddEdge("process", graph.End)
	return g.Compile(graph.CompileOptions{Name: "plain_zod_graph"})
}
