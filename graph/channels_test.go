package graph_test

import (
	"context"
	"testing"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/stretchr/testify/require"
)

// node returns a node writing upd and recording the state it read.
func node(upd graph.Update, seen *[]graph.State) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (any, error) {
		if seen != nil {
			*seen = append(*seen, s)
		}
		return upd, nil
	}
}

// fanGraph runs a and b in parallel from Start, then c after both.
func fanGraph(t *testing.T, chans graph.Channels, a, b, c graph.Update, seen *[]graph.State) *harness {
	t.Helper()
	g := graph.New(chans)
	g.AddNode("a", node(a, nil))
	g.AddNode("b", node(b, nil))
	g.AddNode("c", node(c, seen))
	g.AddEdge(graph.Start, "a")
	g.AddEdge(graph.Start, "b")
	g.AddJoinEdge([]string{"a", "b"}, "c")
	return newHarness(t, compile(t, g, graph.CompileOptions{}))
}

func values(st *graphserver.ThreadState) map[string]any { return st.Values.(map[string]any) }

// A Topic collects the step's writes, a list write contributing its
// elements; without accumulate it empties in the next step that does not
// write it, and reads as absent when empty; with accumulate it keeps them
// (LangGraph channels/topic.py: update resets values unless accumulate,
// extends with the flattened writes; get raises EmptyChannelError when
// empty; apply_writes calls update([]) on channels a step did not write).
func TestTopicChannel(t *testing.T) {
	t.Parallel()
	var seen []graph.State
	h := fanGraph(t, graph.Channels{"t": graph.Topic(false), "done": graph.LastValue()},
		graph.Update{"t": "x"}, graph.Update{"t": []any{"y", "z"}}, graph.Update{"done": true}, &seen)
	h.input(`{}`)
	require.Equal(t, []any{"x", "y", "z"}, seen[0]["t"])
	_, present := values(h.state())["t"]
	require.False(t, present, "a Topic without accumulate empties in a step that does not write it")

	seen = nil
	h = fanGraph(t, graph.Channels{"t": graph.Topic(true)},
		graph.Update{"t": "x"}, graph.Update{"t": []any{"y", "z"}}, graph.Update{"t": "w"}, &seen)
	h.input(`{"t": "in"}`)
	require.Equal(t, []any{"in", "x", "y", "z"}, seen[0]["t"])
	require.Equal(t, []any{"in", "x", "y", "z", "w"}, values(h.state())["t"])
	h.input(`{"t": ["again"]}`)
	require.Equal(t, []any{"in", "x", "y", "z", "w", "again", "x", "y", "z", "w"}, values(h.state())["t"])
}

// An EphemeralValue holds the value written in the step before and clears
// after; with guard two writes in a step are an InvalidUpdateError, without
// the last one is kept (LangGraph channels/ephemeral_value.py).
func TestEphemeralValueChannel(t *testing.T) {
	t.Parallel()
	var seen []graph.State
	h := fanGraph(t, graph.Channels{"e": graph.EphemeralValue(true), "other": graph.LastValue()},
		graph.Update{"e": "hi"}, graph.Update{"other": 1}, graph.Update{}, &seen)
	h.input(`{}`)
	require.Equal(t, "hi", seen[0]["e"])
	_, present := values(h.state())["e"]
	require.False(t, present)

	h = fanGraph(t, graph.Channels{"e": graph.EphemeralValue(true)}, graph.Update{"e": 1}, graph.Update{"e": 2}, graph.Update{}, nil)
	_, err := h.run(graphserver.GraphRun{Input: []byte(`{}`)})
	require.Equal(t, "InvalidUpdateError", graphserver.ErrorName(err))
	require.Contains(t, err.Error(), "At key 'e': EphemeralValue(guard=True) can receive only one value per step.")

	seen = nil
	h = fanGraph(t, graph.Channels{"e": graph.EphemeralValue(false)}, graph.Update{"e": 1}, graph.Update{"e": 2}, graph.Update{}, &seen)
	h.input(`{}`)
	require.Equal(t, 2.0, seen[0]["e"], "the last write (in task order) is kept")
}

// An UntrackedValue is read by the nodes of the run that wrote it but never
// saved: the thread's state, its history and the next run do not see it
// (LangGraph channels/untracked_value.py: checkpoint() is MISSING).
func TestUntrackedValueChannel(t *testing.T) {
	t.Parallel()
	var seen []graph.State
	g := graph.New(graph.Channels{"u": graph.UntrackedValue(true), "n": graph.LastValue()})
	g.AddNode("a", func(ctx context.Context, s graph.State) (any, error) {
		if s["n"] == nil {
			return graph.Update{"u": "secret"}, nil
		}
		return nil, nil
	})
	g.AddNode("b", node(graph.Update{"n": 1}, nil))
	g.AddNode("c", node(graph.Update{"n": 2}, &seen))
	g.AddEdge(graph.Start, "a")
	g.AddEdge(graph.Start, "b")
	g.AddJoinEdge([]string{"a", "b"}, "c")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	rec := h.input(`{}`, "values")
	require.Equal(t, "secret", seen[0]["u"])
	_, present := values(h.state())["u"]
	require.False(t, present, "not saved")
	for _, st := range h.history() {
		_, present := values(st)["u"]
		require.False(t, present)
	}
	last := rec.of("values")
	require.Equal(t, "secret", last[len(last)-1].(map[string]any)["u"], "the run's own stream reads its live channels")

	h.input(`{"n": 3}`)
	_, present = seen[1]["u"]
	require.False(t, present, "a later run does not see it")
}

// An AnyValue takes several writes in a step (keeping the last) and clears
// in a step that does not write it (LangGraph channels/any_value.py).
func TestAnyValueChannel(t *testing.T) {
	t.Parallel()
	var seen []graph.State
	h := fanGraph(t, graph.Channels{"v": graph.AnyValue()}, graph.Update{"v": "same"}, graph.Update{"v": "same"}, graph.Update{}, &seen)
	h.input(`{}`)
	require.Equal(t, "same", seen[0]["v"])
	_, present := values(h.state())["v"]
	require.False(t, present)
}

// A NamedBarrierValue reads as absent until every name was written, then
// as null; another value is an InvalidUpdateError (LangGraph
// channels/named_barrier_value.py).
func TestNamedBarrierValueChannel(t *testing.T) {
	t.Parallel()
	g := graph.New(graph.Channels{"bar": graph.NamedBarrierValue("a", "b")})
	var seen []graph.State
	g.AddNode("a", node(graph.Update{"bar": "a"}, nil))
	g.AddNode("b", node(graph.Update{"bar": "b"}, &seen))
	g.AddNode("c", node(graph.Update{}, &seen))
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", "c")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	h.input(`{}`)
	_, present := seen[0]["bar"]
	require.False(t, present, "only a was written")
	v, present := seen[1]["bar"]
	require.True(t, present)
	require.Nil(t, v)
	v, present = values(h.state())["bar"]
	require.True(t, present)
	require.Nil(t, v)

	_, err := h.run(graphserver.GraphRun{Input: []byte(`{"bar": "z"}`)})
	require.Equal(t, "InvalidUpdateError", graphserver.ErrorName(err))
	require.Contains(t, err.Error(), "At key 'bar': Value \"z\" not in [a b]")
}

type point struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// A typed reducer starts from its type's zero value, present in the state
// before any write, and reduces every write into it (LangGraph
// channels/binop.py: BinaryOperatorAggregate's value starts as typ(), so
// Annotated[int, operator.add] reads 0 and Annotated[list, operator.add]
// reads []).
func TestReducerOfZeroValues(t *testing.T) {
	t.Parallel()
	g := graph.New(graph.Channels{
		"total": graph.ReducerOf(func(a, b float64) float64 { return a + b }),
		"tags":  graph.ReducerOf(func(a, b []string) []string { return append(a, b...) }),
		"meta": graph.ReducerOf(func(a, b map[string]any) map[string]any {
			m := map[string]any{}
			for k, v := range a {
				m[k] = v
			}
			for k, v := range b {
				m[k] = v
			}
			return m
		}),
		"pos":  graph.ReducerOf(func(a, b point) point { return point{a.X + b.X, a.Y + b.Y} }),
		"name": graph.LastValue(),
	})
	var seen []graph.State
	g.AddNode("first", node(graph.Update{}, &seen))
	g.AddNode("second", node(graph.Update{"total": 2, "tags": []string{"b"}, "meta": map[string]any{"k": "v"}, "pos": point{1, 2}}, nil))
	g.AddEdge(graph.Start, "first")
	g.AddEdge("first", "second")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	h.input(`{"total": 1, "name": "n"}`)
	require.Equal(t, 1.0, seen[0]["total"], "the zero value reduced with the input")
	require.Equal(t, []any{}, seen[0]["tags"])
	require.Equal(t, map[string]any{}, seen[0]["meta"])
	require.Equal(t, map[string]any{"x": 0.0, "y": 0.0}, seen[0]["pos"])
	st := values(h.state())
	require.Equal(t, 3.0, st["total"])
	require.Equal(t, []any{"b"}, st["tags"])
	require.Equal(t, map[string]any{"k": "v"}, st["meta"])
	require.Equal(t, map[string]any{"x": 1.0, "y": 2.0}, st["pos"])

	_, err := h.run(graphserver.GraphRun{Input: []byte(`{"total": "many"}`)})
	require.Equal(t, "InvalidUpdateError", graphserver.ErrorName(err))
}

// A reducer write that leaves the value as it was still updates the
// channel: the values stream emits the state after the step
// (BinaryOperatorAggregate.update returns True for any write, and the loop
// emits values when an output channel was updated).
func TestNoOpReducerWriteIsAnUpdate(t *testing.T) {
	t.Parallel()
	keep := graph.ReducerOf(func(a, b float64) float64 { return max(a, b) })
	g := graph.New(graph.Channels{"best": keep})
	g.AddNode("lower", node(graph.Update{"best": 1}, nil))
	g.AddEdge(graph.Start, "lower")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	rec := h.input(`{"best": 5}`, "values")
	require.Equal(t, []any{
		map[string]any{"best": 5.0},
		map[string]any{"best": 5.0},
	}, rec.of("values"))
}
