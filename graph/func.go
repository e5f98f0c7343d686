package graph

import (
	"context"
)

// Func turns a plain function into a one-node graph named name: the run's
// input is passed to fn as is (JSON-native), and fn's result becomes the
// thread's values and the run's output. Use Interrupt, StreamWriter and the
// other runtime helpers from fn as from any node.
func Func(name string, fn func(ctx context.Context, input any) (any, error)) *Compiled {
	g := New(Channels{chRoot: LastValue()})
	g.root = true
	g.AddNode(name, func(ctx context.Context, s State) (any, error) { return fn(ctx, s[chRoot]) })
	g.AddEdge(Start, name)
	g.AddEdge(name, End)
	c, err := g.Compile(CompileOptions{Name: name})
	if err != nil {
		panic(err) // unreachable: the graph is well-formed unless name is invalid
	}
	return c
}
