package graph_test

import (
	"context"
	"testing"

	"github.com/graphserver/graphserver/graph"
	"github.com/stretchr/testify/require"
)

// Each interrupted task emits its own updates chunk {"__interrupt__":
// [its interrupts]} when it stops, and the paused step ends with one values
// part carrying all of them (LangGraph pregel/_loop.py output_writes: an
// INTERRUPT write of a task emits {INTERRUPT: (its interrupts)} on the
// updates stream; the server's values part is kept for the wire).
func TestInterruptEmittedPerTask(t *testing.T) {
	t.Parallel()
	g := graph.New(graph.Channels{"log": graph.Append()})
	ask := func(q string) graph.NodeFunc {
		return func(ctx context.Context, s graph.State) (any, error) {
			if _, err := graph.Interrupt(ctx, q); err != nil {
				return nil, err
			}
			return graph.Update{"log": q}, nil
		}
	}
	g.AddNode("a", ask("first?"))
	g.AddNode("b", ask("second?"))
	g.AddNode("c", func(ctx context.Context, s graph.State) (any, error) { return graph.Update{"log": "c"}, nil })
	g.AddEdge(graph.Start, "a")
	g.AddEdge(graph.Start, "b")
	g.AddEdge(graph.Start, "c")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	rec := h.input(`{}`, "updates", "values")
	var intr [][]any
	var nodes []string
	for _, u := range rec.of("updates") {
		m := u.(map[string]any)
		if l, ok := m["__interrupt__"]; ok {
			intr = append(intr, l.([]any))
			continue
		}
		for k := range m {
			nodes = append(nodes, k)
		}
	}
	require.Len(t, intr, 2, "one chunk per interrupted task")
	values := func(l []any) (out []any) {
		for _, i := range l {
			out = append(out, i.(map[string]any)["value"])
		}
		return out
	}
	require.ElementsMatch(t, []any{[]any{"first?"}, []any{"second?"}}, []any{values(intr[0]), values(intr[1])})
	require.Equal(t, []string{"c"}, nodes)
	vs := rec.of("values")
	require.ElementsMatch(t, []any{"first?", "second?"}, values(vs[len(vs)-1].(map[string]any)["__interrupt__"].([]any)))
	require.Len(t, h.state().Interrupts, 2)
}
