package graph_test

import (
	"context"
	"fmt"

	"github.com/graphserver/graphserver/graph"
)

// Typed reducers start from their type's zero value, and a Topic collects
// what the nodes of a step publish.
func ExampleReducerOf() {
	g := graph.New(graph.Channels{
		"total": graph.ReducerOf(func(a, b float64) float64 { return a + b }),
		"log":   graph.Topic(true), // accumulates across steps
	})
	g.AddNode("count", func(ctx context.Context, s graph.State) (any, error) {
		fmt.Println("total before:", s["total"]) // 0, not absent
		return graph.Update{"total": 2, "log": []string{"counted", "twice"}}, nil
	})
	g.AddNode("again", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"total": 3, "log": "again"}, nil
	})
	g.AddEdge(graph.Start, "count")
	g.AddEdge("count", "again")
	c, err := g.Compile(graph.CompileOptions{})
	if err != nil {
		panic(err)
	}
	out, err := c.Invoke(context.Background(), map[string]any{}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// total before: 0
	// map[log:[counted twice again] total:5]
}

// An EphemeralValue passes a value to the next step only.
func ExampleEphemeralValue() {
	g := graph.New(graph.Channels{"hint": graph.EphemeralValue(true), "answer": graph.LastValue()})
	g.AddNode("plan", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"hint": "be brief"}, nil
	})
	g.AddNode("answer", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"answer": "ok (" + s.String("hint") + ")"}, nil
	})
	g.AddEdge(graph.Start, "plan")
	g.AddEdge("plan", "answer")
	c, err := g.Compile(graph.CompileOptions{})
	if err != nil {
		panic(err)
	}
	out, err := c.Invoke(context.Background(), map[string]any{}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// map[answer:ok (be brief)]
}
