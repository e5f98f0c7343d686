package graph_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/stretchr/testify/require"
)

// memoryGraphs returns a parent graph whose node "inner" is a subgraph
// appending the parent's "msg" to its own "seen", reporting it as
// "history", and counting its calls.
func memoryGraphs(t *testing.T, persistent bool, ask bool) *graph.Compiled {
	sub := graph.New(graph.Channels{"msg": graph.LastValue(), "seen": graph.Append(), "history": graph.LastValue(),
		"calls": graph.ReducerOf(func(a, b float64) float64 { return a + b })})
	sub.AddNode("remember", func(ctx context.Context, s graph.State) (any, error) {
		if ask {
			if _, err := graph.Interrupt(ctx, "ok to remember "+s.String("msg")+"?"); err != nil {
				return nil, err
			}
		}
		seen, _ := s["seen"].([]any)
		return graph.Update{"seen": s["msg"], "history": append(seen, s["msg"]), "calls": 1}, nil
	})
	sub.AddEdge(graph.Start, "remember")
	inner := compile(t, sub, graph.CompileOptions{Name: "inner", Persistent: persistent})
	g := graph.New(graph.Channels{"msg": graph.LastValue(), "history": graph.LastValue()})
	g.AddNode("inner", inner)
	g.AddEdge(graph.Start, "inner")
	return compile(t, g, graph.CompileOptions{Name: "outer"})
}

// A subgraph compiled with its own memory keeps its state across calls on
// the same thread, in a namespace named after its node; without it each
// call starts afresh in the task's namespace (LangGraph
// compile(checkpointer=True): Pregel.stream recasts the subgraph's
// checkpoint_ns, dropping task ids, so the next call loads the last
// checkpoint of that namespace and applies its input on top).
func TestPersistentSubgraphMemory(t *testing.T) {
	t.Parallel()
	h := newHarness(t, memoryGraphs(t, true, false))
	h.input(`{"msg": "one"}`)
	h.input(`{"msg": "two"}`)
	h.input(`{"msg": "three"}`)
	require.Equal(t, []any{"one", "two", "three"}, values(h.state())["history"], "the subgraph remembers earlier calls")
	st, err := h.g.State(context.Background(), &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: h.thread, CheckpointNS: "inner"}, Checkpointer: h.cp})
	require.NoError(t, err)
	require.Equal(t, 3.0, values(st)["calls"])

	h = newHarness(t, memoryGraphs(t, false, false))
	h.input(`{"msg": "one"}`)
	h.input(`{"msg": "two"}`)
	require.Equal(t, []any{"two"}, values(h.state())["history"], "without memory each call starts afresh")
}

// A persistent subgraph that interrupts continues where it paused when the
// run resumes, then keeps its memory for the next call; its stream parts
// carry its stable namespace.
func TestPersistentSubgraphInterrupt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, memoryGraphs(t, true, true))
	rec, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{"msg": "one"}`), StreamModes: []string{"updates"}, Subgraphs: true})
	require.NoError(t, err)
	require.NotEmpty(t, rec.of("updates|inner"), "parts of the subgraph are under its stable namespace")
	st := h.state()
	require.Len(t, st.Interrupts, 1)
	require.Equal(t, "ok to remember one?", st.Interrupts[0].Value)
	require.Equal(t, "inner", st.Tasks[0].Checkpoint.CheckpointNS)
	resume := func() {
		_, err := h.run(graphserver.GraphRun{Command: &graphserver.Command{Resume: json.RawMessage(`true`)}})
		require.NoError(t, err)
	}
	resume()
	require.Equal(t, []any{"one"}, values(h.state())["history"])

	h.input(`{"msg": "two"}`)
	require.Equal(t, "ok to remember two?", h.state().Interrupts[0].Value)
	resume()
	require.Equal(t, []any{"one", "two"}, values(h.state())["history"])
}
