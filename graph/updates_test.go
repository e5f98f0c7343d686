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

// An Overwrite replaces the value of a reducer channel instead of being
// reduced into it; writes after it in the step are ignored, and a second
// one is an InvalidUpdateError (LangGraph channels/binop.py
// BinaryOperatorAggregate.update with _get_overwrite).
func TestOverwrite(t *testing.T) {
	t.Parallel()
	sum := graph.Reducer(func(old, new any) any {
		o, _ := old.(float64)
		n, _ := new.(float64)
		return o + n
	})
	g := graph.New(graph.Channels{"items": graph.Append(), "messages": graph.AddMessages(), "total": sum})
	g.AddNode("reset", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{
			"items":    graph.Overwrite{Value: []any{"only"}},
			"messages": graph.Overwrite{Value: []any{graph.AI("fresh start")}},
			"total":    graph.Overwrite{Value: 100},
		}, nil
	})
	g.AddEdge(graph.Start, "reset")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	h.input(`{"items": ["a", "b"], "messages": ["hi"], "total": 5}`)
	st := h.state()
	require.Equal(t, []any{"only"}, st.Values.(map[string]any)["items"])
	require.Equal(t, []string{"fresh start"}, contents(st, "messages"))
	require.Equal(t, 100.0, st.Values.(map[string]any)["total"])

	// the JSON form, in a Command update: before it replaced, after it ignored
	_, err := h.run(graphserver.GraphRun{Command: &graphserver.RunCommand{
		Update: json.RawMessage(`[["items", "x"], ["items", {"__overwrite__": ["y"]}], ["items", "z"], ["total", {"type": "__overwrite__", "value": 1}]]`),
	}})
	require.NoError(t, err)
	st = h.state()
	require.Equal(t, []any{"y"}, st.Values.(map[string]any)["items"])
	require.Equal(t, 1.0, st.Values.(map[string]any)["total"])

	_, err = h.run(graphserver.GraphRun{Command: &graphserver.RunCommand{
		Update: json.RawMessage(`[["items", {"__overwrite__": ["1"]}], ["items", {"__overwrite__": ["2"]}]]`),
	}})
	require.Equal(t, "InvalidUpdateError", graphserver.ErrorName(err))
	require.Contains(t, err.Error(), "Can receive only one Overwrite value per super-step.")
	require.Equal(t, []any{"y"}, h.state().Values.(map[string]any)["items"])
}

// A Command.update the channels reject fails the run, naming the error,
// and changes nothing, where it was dropped silently before (LangGraph's
// _first applies the null writes and raises).
func TestCommandUpdateRejected(t *testing.T) {
	t.Parallel()
	g := graph.New(graph.Channels{"messages": graph.AddMessages(), "k": graph.LastValue()})
	g.AddNode("ask", func(ctx context.Context, s graph.State) (any, error) {
		v, err := graph.Interrupt(ctx, "ok?")
		if err != nil {
			return nil, err
		}
		return graph.Update{"messages": graph.AI(v.(string))}, nil
	})
	g.AddEdge(graph.Start, "ask")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	h.input(`{"messages": ["hi"]}`)
	before := h.state()
	require.Equal(t, []string{"ask"}, before.Next)

	for _, tc := range []struct{ update, name, message string }{
		{`{"messages": [{"type": "remove", "id": "nope"}]}`, "ValueError", "Attempting to delete a message with an ID that doesn't exist ('nope')"},
		{`[["k", 1], ["k", 2]]`, "InvalidUpdateError", "At key 'k': Can receive only one value per step."},
		{`"not an object"`, "InvalidUpdateError", "Expected dict"},
	} {
		_, err := h.run(graphserver.GraphRun{Command: &graphserver.RunCommand{Update: json.RawMessage(tc.update), Resume: json.RawMessage(`"yes"`)}})
		require.Error(t, err, tc.update)
		require.Equal(t, tc.name, graphserver.ErrorName(err), tc.update)
		require.Contains(t, err.Error(), tc.message)
		require.JSONEq(t, jsonOf(t, before), jsonOf(t, h.state()), "nothing changed")
	}
	_, err := h.run(graphserver.GraphRun{Command: &graphserver.RunCommand{Update: json.RawMessage(`{"k": 1}`), Resume: json.RawMessage(`"yes"`)}})
	require.NoError(t, err)
	require.Equal(t, []string{"hi", "yes"}, contents(h.state(), "messages"))
}

// Replaying from a checkpoint named by id reruns its tasks, although their
// writes were saved there; resuming the latest state reuses them (LangGraph
// _loop.py: skip_done_tasks is off when the config has a checkpoint_id).
func TestReplayRerunsTasks(t *testing.T) {
	t.Parallel()
	runs := map[string]int{}
	var mu sync.Mutex
	count := func(n string) {
		mu.Lock()
		defer mu.Unlock()
		runs[n]++
	}
	g := graph.New(graph.Channels{"log": graph.Append()})
	for _, n := range []string{"a", "b", "c"} {
		g.AddNode(n, func(ctx context.Context, s graph.State) (any, error) {
			count(n)
			return graph.Update{"log": n}, nil
		})
	}
	g.AddEdge(graph.Start, "a").AddEdge(graph.Start, "b").AddEdge("a", "c")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	h.input(`{"log": []}`)
	require.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1}, runs)

	// the step of a and b: both finished, their writes saved there
	var step *graphserver.ThreadState
	for _, st := range h.history() {
		if len(st.Next) == 2 {
			step = st
		}
	}
	require.NotNil(t, step)
	require.Equal(t, []string{"a", "b"}, step.Next)
	require.NotNil(t, step.Tasks[0].Result, "a's writes are saved at the checkpoint")

	_, err := h.run(graphserver.GraphRun{Config: graphserver.Object{"configurable": map[string]any{"checkpoint_id": *step.CheckpointID}}})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"a": 2, "b": 2, "c": 2}, runs, "a replay reruns the step's tasks")
	require.Equal(t, []any{"a", "b", "c"}, h.state().Values.(map[string]any)["log"])
}
