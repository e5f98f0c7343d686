package main

import (
	"context"

	"github.com/graphserver/graphserver/graph"
)

// concat is the nested graphs' reducer: a list is appended element-wise, any
// other value appended as one element.
func concat() *graph.Channel {
	return graph.Append().WithSchema(`{"type": "array", "items": {"type": "string"}}`)
}

// enter returns a node adding "Entered <name> node" to messages.
func enter(name string) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"messages": []string{"Entered " + name + " node"}}, nil
	}
}

// nestedGraph is reference-graphs.md's "nested": grandparent, parent and
// child graphs, for subgraph introspection.
func nestedGraph() (*graph.Compiled, error) {
	child := graph.New(graph.Channels{
		"messages": concat(),
		"child":    graph.LastValue().WithSchema(`{"type": "string", "enum": ["child_one", "child_two"]}`),
	})
	child.AddNode("c_one", enter("c_one"))
	child.AddNode("c_two", enter("c_two"))
	child.AddEdge(graph.Start, "c_one")
	child.AddEdge("c_one", "c_two")
	child.AddEdge("c_two", graph.End)
	c, err := child.Compile(graph.CompileOptions{Name: "child"})
	if err != nil {
		return nil, err
	}

	parent := graph.New(graph.Channels{
		"messages": concat(),
		"parent":   graph.LastValue().WithSchema(`{"type": "string", "enum": ["parent_one", "parent_two"]}`),
	})
	parent.AddNode("p_one", enter("p_one"))
	parent.AddNode("p_two", c)
	parent.AddEdge(graph.Start, "p_one")
	parent.AddEdge("p_one", "p_two")
	parent.AddEdge("p_two", graph.End)
	p, err := parent.Compile(graph.CompileOptions{Name: "parent"})
	if err != nil {
		return nil, err
	}

	gp := graph.New(graph.Channels{"messages": concat()})
	gp.AddNode("gp_one", enter("gp_one"))
	gp.AddNode("gp_two", p)
	gp.AddEdge(graph.Start, "gp_one")
	gp.AddEdge("gp_one", "gp_two")
	gp.AddEdge("gp_two", graph.End)
	return gp.Compile(graph.CompileOptions{Name: "nested"})
}
