package graph_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/stretchr/testify/require"
)

// fanIn builds start -> a, start -> b1 -> b2 and a join [a, b2] -> c (or two
// plain edges a -> c, b2 -> c when join is false); every node logs its name.
// b2 interrupts once when interrupt is set.
func fanIn(t *testing.T, join, interrupt bool, runs *sync.Map) *graph.Compiled {
	g := graph.New(graph.Channels{"log": graph.Append()})
	for _, n := range []string{"a", "b1", "b2", "c"} {
		g.AddNode(n, func(ctx context.Context, s graph.State) (any, error) {
			if n == "b2" && interrupt {
				if _, err := graph.Interrupt(ctx, "go on?"); err != nil {
					return nil, err
				}
			}
			v, _ := runs.LoadOrStore(n, new(int))
			*v.(*int)++
			return graph.Update{"log": n}, nil
		})
	}
	g.AddEdge(graph.Start, "a").AddEdge(graph.Start, "b1").AddEdge("b1", "b2").AddEdge("c", graph.End)
	if join {
		g.AddJoinEdge([]string{"a", "b2"}, "c")
	} else {
		g.AddEdge("a", "c").AddEdge("b2", "c")
	}
	return compile(t, g, graph.CompileOptions{})
}

func count(runs *sync.Map, n string) int {
	v, ok := runs.Load(n)
	if !ok {
		return 0
	}
	return *v.(*int)
}

// A join edge runs its target once after all the nodes it waits for, also
// when they finish in different supersteps, where two plain edges run it
// twice (LangGraph's add_edge([a, b], c): a NamedBarrierValue channel,
// available once every name was written, consumed when read).
func TestJoinEdge(t *testing.T) {
	t.Parallel()
	t.Run("plain edges run the target twice", func(t *testing.T) {
		t.Parallel()
		runs := &sync.Map{}
		h := newHarness(t, fanIn(t, false, false, runs))
		h.input(`{"log": []}`)
		require.Equal(t, 2, count(runs, "c"))
	})
	t.Run("a join runs it once, after the longer branch", func(t *testing.T) {
		t.Parallel()
		runs := &sync.Map{}
		h := newHarness(t, fanIn(t, true, false, runs))
		rec := h.input(`{"log": []}`, "tasks")
		require.Equal(t, 1, count(runs, "c"))
		require.Equal(t, []any{"a", "b1", "b2", "c"}, h.state().Values.(map[string]any)["log"])
		var cTriggers any
		for _, p := range rec.of("tasks") {
			if m := p.(map[string]any); m["name"] == "c" && m["triggers"] != nil {
				cTriggers = m["triggers"]
			}
		}
		require.Equal(t, []any{"join:a+b2:c"}, cTriggers)
		hist := h.history()
		require.Equal(t, [][]string{{}, {"c"}, {"b2"}, {"a", "b1"}, {"__start__"}}, nexts(hist))
	})
	t.Run("the join survives a pause between its branches", func(t *testing.T) {
		t.Parallel()
		runs := &sync.Map{}
		h := newHarness(t, fanIn(t, true, true, runs))
		h.input(`{"log": []}`)
		require.Equal(t, []string{"b2"}, h.state().Next)
		require.Equal(t, 0, count(runs, "c"))
		_, err := h.run(graphserver.GraphRun{Command: &graphserver.RunCommand{Resume: json.RawMessage(`"yes"`)}})
		require.NoError(t, err)
		require.Equal(t, 1, count(runs, "c"))
		require.Equal(t, []any{"a", "b1", "b2", "c"}, h.state().Values.(map[string]any)["log"])
	})
}

// A join waits anew once its target ran: in a loop, the target runs once
// per round, after both branches of that round.
func TestJoinEdgeInLoop(t *testing.T) {
	t.Parallel()
	g := graph.New(graph.Channels{"log": graph.Append(), "round": graph.LastValue()})
	g.AddNode("fork", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"round": s.Number("round") + 1}, nil
	})
	for _, n := range []string{"left", "right", "right2"} {
		g.AddNode(n, func(ctx context.Context, s graph.State) (any, error) { return graph.Update{"log": n}, nil })
	}
	g.AddNode("merge", func(ctx context.Context, s graph.State) (any, error) { return graph.Update{"log": "merge"}, nil })
	g.AddEdge(graph.Start, "fork").AddEdge("fork", "left").AddEdge("fork", "right").AddEdge("right", "right2")
	g.AddJoinEdge([]string{"left", "right2"}, "merge")
	g.AddConditionalEdges("merge", func(ctx context.Context, s graph.State) any {
		if s.Number("round") < 2 {
			return "fork"
		}
		return graph.End
	}, "fork", graph.End)
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	h.input(`{"log": []}`)
	require.Equal(t, []any{"left", "right", "right2", "merge", "left", "right", "right2", "merge"}, h.state().Values.(map[string]any)["log"])
}

func nexts(hist []*graphserver.ThreadState) [][]string {
	out := make([][]string, len(hist))
	for i, h := range hist {
		out[i] = h.Next
	}
	return out
}

func TestJoinEdgeUnknownNode(t *testing.T) {
	t.Parallel()
	g := graph.New(graph.Channels{"x": graph.LastValue()})
	g.AddNode("a", func(ctx context.Context, s graph.State) (any, error) { return nil, nil })
	g.AddEdge(graph.Start, "a").AddJoinEdge([]string{"a", "nope"}, "a")
	_, err := g.Compile(graph.CompileOptions{})
	require.Equal(t, graphserver.EINVALID, graphserver.ErrorCode(err))
	require.Contains(t, err.Error(), `join edge from unknown node "nope"`)
}
