package main

import (
	"context"

	"github.com/graphserver/graphserver/graph"
)

// weatherGraph is reference-graphs.md's "weather": a router whose
// weather_graph node is a subgraph compiled with a breakpoint before
// weather_node.
func weatherGraph() (*graph.Compiled, error) {
	sub := graph.New(graph.Channels{
		"messages": graph.AddMessages(),
		"city":     graph.LastValue().WithSchema(`{"type": "string"}`),
	})
	sub.AddNode("model_node", func(ctx context.Context, s graph.State) (any, error) {
		// A model would ask for the get_weather tool with this city.
		return graph.Update{"city": "San Francisco"}, nil
	})
	sub.AddNode("weather_node", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"messages": []graph.Message{graph.AI("It's sunny in " + s.String("city") + "!")}}, nil
	})
	sub.AddEdge(graph.Start, "model_node")
	sub.AddEdge("model_node", "weather_node")
	sub.AddEdge("weather_node", graph.End)
	weather, err := sub.Compile(graph.CompileOptions{Name: "weather_graph", InterruptBefore: []string{"weather_node"}})
	if err != nil {
		return nil, err
	}

	g := graph.New(graph.Channels{
		"messages": graph.AddMessages(),
		"route":    graph.LastValue().WithSchema(`{"type": "string", "enum": ["weather", "other"]}`),
	})
	g.AddNode("router_node", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"route": "weather"}, nil
	})
	g.AddNode("normal_llm_node", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"messages": []graph.Message{graph.AI("Hello")}}, nil
	})
	g.AddNode("weather_graph", weather)
	g.AddEdge(graph.Start, "router_node")
	g.AddConditionalEdgesMap("router_node", func(ctx context.Context, s graph.State) any {
		if s.String("route") == "weather" {
			return "weather_graph"
		}
		return "normal_llm_node"
	}, map[string]string{"weather_graph": "weather_graph", "normal_llm_node": "normal_llm_node"})
	g.AddEdge("weather_graph", graph.End)
	g.AddEdge("normal_llm_node", graph.End)
	return g.Compile(graph.CompileOptions{Name: "weather"})
}
