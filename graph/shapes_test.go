package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/stretchr/testify/require"
)

// twoWrites is a graph whose node "w" writes channel items twice, channel
// k once and a key that is no channel; "out" is the only output channel.
func twoWrites(t *testing.T) *graph.Compiled {
	g := graph.New(graph.Channels{"items": graph.Append(), "k": graph.LastValue(), "out": graph.LastValue()})
	g.AddNode("w", func(ctx context.Context, s graph.State) (any, error) {
		return []any{[]any{"items", "a"}, []any{"items", "b"}, []any{"k", 1}, []any{"nochannel", true}}, nil
	})
	g.AddNode("o", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"out": "x", "k": 2, "nochannel": 1}, nil
	})
	g.AddEdge(graph.Start, "w").AddEdge("w", "o").AddEdge("o", graph.End)
	g.SetOutput("out")
	return compile(t, g, graph.CompileOptions{})
}

// The result of a task in tasks and debug task_result parts is an object
// channel -> value, repeated writes folded as {"$writes": [...]}, only the
// graph's channels (LangGraph pregel/debug.py map_task_result_writes and
// map_debug_task_results).
func TestTaskResultFoldsWrites(t *testing.T) {
	t.Parallel()
	h := newHarness(t, twoWrites(t))
	rec := h.input(`{}`, "tasks", "debug")
	var results []any
	for _, p := range rec.of("tasks") {
		if r, ok := p.(map[string]any)["result"]; ok {
			results = append(results, r)
		}
	}
	require.Equal(t, []any{
		map[string]any{"items": map[string]any{"$writes": []any{"a", "b"}}, "k": 1.0},
		map[string]any{"out": "x", "k": 2.0},
	}, results)
	var debugResults []any
	for _, p := range rec.of("debug") {
		if d := p.(map[string]any); d["type"] == "task_result" {
			debugResults = append(debugResults, d["payload"].(map[string]any)["result"])
		}
	}
	require.Equal(t, results, debugResults)
}

// The updates stream shows a node's writes to output channels only; a node
// writing none shows null, and several writes to one channel a list of
// one-key objects (LangGraph pregel/_io.py map_output_updates).
func TestUpdatesShowOutputWrites(t *testing.T) {
	t.Parallel()
	h := newHarness(t, twoWrites(t))
	rec := h.input(`{}`, "updates")
	require.Equal(t, []any{map[string]any{"w": nil}, map[string]any{"o": map[string]any{"out": "x"}}}, rec.of("updates"))

	g := graph.New(graph.Channels{"items": graph.Append(), "k": graph.LastValue()})
	g.AddNode("w", func(ctx context.Context, s graph.State) (any, error) {
		return []any{[]any{"items", "a"}, []any{"k", 1}, []any{"items", "b"}, []any{"private", 0}}, nil
	})
	g.AddEdge(graph.Start, "w")
	h = newHarness(t, compile(t, g, graph.CompileOptions{}))
	rec = h.input(`{}`, "updates")
	require.Equal(t, []any{map[string]any{"w": []any{
		map[string]any{"items": "a"}, map[string]any{"k": 1.0}, map[string]any{"items": "b"},
	}}}, rec.of("updates"))
}

// State values hold every channel of the state, the values stream only the
// output channels (LangGraph's _prepare_state_snapshot reads the graph's
// stream channels, the loop's values output its output channels); a state
// task's result folds repeated writes as the task parts do (tasks_w_writes).
func TestStateShowsEveryChannel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, twoWrites(t))
	rec := h.input(`{}`, "values")
	require.Equal(t, map[string]any{"out": "x"}, rec.of("values")[len(rec.of("values"))-1])
	require.Equal(t, map[string]any{"items": []any{"a", "b"}, "k": 2.0, "out": "x"}, h.state().Values)

	// a failed sibling keeps the step open: the finished task's result
	fail := graph.New(graph.Channels{"items": graph.Append()})
	fail.AddNode("w", func(ctx context.Context, s graph.State) (any, error) {
		return []any{[]any{"items", "a"}, []any{"items", "b"}}, nil
	})
	fail.AddNode("bad", func(ctx context.Context, s graph.State) (any, error) {
		return nil, &graph.NodeError{Name: "CustomError", Message: "Boo!"}
	})
	fail.AddEdge(graph.Start, "w").AddEdge(graph.Start, "bad")
	h = newHarness(t, compile(t, fail, graph.CompileOptions{}))
	_, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{}`)})
	require.Error(t, err)
	st := h.state()
	require.Equal(t, "w", st.Tasks[1].Name)
	require.Equal(t, map[string]any{"items": map[string]any{"$writes": []any{"a", "b"}}}, st.Tasks[1].Result)
	require.Equal(t, []any{"a", "b"}, st.Values.(map[string]any)["items"], "the finished task's writes are applied")
}

// checkpointTasks collects the tasks of the checkpoints and debug
// checkpoint parts of rec.
func checkpointTasks(rec *recorder, event string) (checkpoints, debug [][]any) {
	for _, p := range rec.of(event) {
		checkpoints = append(checkpoints, p.(map[string]any)["tasks"].([]any))
	}
	for _, p := range rec.of("debug") {
		if d := p.(map[string]any); d["type"] == "checkpoint" {
			debug = append(debug, d["payload"].(map[string]any)["tasks"].([]any))
		}
	}
	return checkpoints, debug
}

// Each task of a checkpoints or debug checkpoint part carries state: null
// outside subgraphs, the subgraph's config for a subgraph task; the debug
// mode turns that config into a checkpoint {thread_id, checkpoint_ns}, as
// the API server does. A failed task is {id, name, error, state}
// (LangGraph pregel/debug.py map_debug_checkpoint; langgraph_api
// stream.py _preproces_debug_checkpoint_task).
func TestCheckpointPartTasksCarryState(t *testing.T) {
	t.Parallel()
	h := newHarness(t, weatherGraph(t))
	rec, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{"messages": [{"role": "user", "content": "sf"}]}`), StreamModes: []string{"checkpoints", "debug"}})
	require.NoError(t, err)
	cps, dbg := checkpointTasks(rec, "checkpoints")
	require.Len(t, cps, 3) // input, after router_node, after the start of weather_graph
	require.Equal(t, cps[0], dbg[0])
	start := cps[0][0].(map[string]any)
	require.Equal(t, map[string]any{"id": start["id"], "name": "__start__", "interrupts": []any{}, "state": nil}, start)
	router := cps[1][0].(map[string]any)
	require.Equal(t, map[string]any{"id": router["id"], "name": "router_node", "interrupts": []any{}, "state": nil}, router)
	sub := cps[2][0].(map[string]any)
	ref := map[string]any{"thread_id": h.thread, "checkpoint_ns": "weather_graph:" + sub["id"].(string)}
	require.Equal(t, map[string]any{"id": sub["id"], "name": "weather_graph", "interrupts": []any{}, "state": map[string]any{"configurable": ref}}, sub)
	require.Equal(t, map[string]any{"id": sub["id"], "name": "weather_graph", "interrupts": []any{}, "checkpoint": ref}, dbg[2][0])

	// a failed task, seen in the checkpoint a resumed run starts from
	g := graph.New(graph.Channels{"items": graph.Append()})
	fails := true
	g.AddNode("bad", func(ctx context.Context, s graph.State) (any, error) {
		if fails {
			return nil, &graph.NodeError{Name: "CustomError", Message: "Boo!"}
		}
		return graph.Update{"items": "ok"}, nil
	})
	g.AddNode("good", func(ctx context.Context, s graph.State) (any, error) { return graph.Update{"items": "good"}, nil })
	g.AddEdge(graph.Start, "bad").AddEdge(graph.Start, "good")
	h = newHarness(t, compile(t, g, graph.CompileOptions{}))
	_, err = h.run(graphserver.GraphRun{Input: json.RawMessage(`{}`)})
	require.Error(t, err)
	fails = false
	rec, err = h.run(graphserver.GraphRun{StreamModes: []string{"checkpoints", "debug"}})
	require.NoError(t, err)
	cps, dbg = checkpointTasks(rec, "checkpoints")
	first := cps[0]
	require.Len(t, first, 2)
	bad, good := first[0].(map[string]any), first[1].(map[string]any)
	require.Equal(t, map[string]any{"id": bad["id"], "name": "bad", "error": "CustomError('Boo!')", "state": nil}, bad)
	require.Equal(t, map[string]any{"id": good["id"], "name": "good", "interrupts": []any{}, "result": map[string]any{"items": "good"}, "state": nil}, good)
	require.Equal(t, first, dbg[0])
}

// GET state and the history agree on a checkpoint: one function builds both,
// and the latest checkpoint shows the writes of the tasks that finished
// there folded in (LangGraph's get_state), in the history too. A failed
// task's error is in tasks[].error, also when the failure was in applying
// the step's writes (a reducer rejecting the input).
func TestStateAndHistoryAgree(t *testing.T) {
	t.Parallel()
	t.Run("failed sibling", func(t *testing.T) {
		t.Parallel()
		g := graph.New(graph.Channels{"items": graph.Append()})
		g.AddNode("bad", func(ctx context.Context, s graph.State) (any, error) {
			return nil, &graph.NodeError{Name: "CustomError", Message: "Boo!"}
		})
		g.AddNode("good", func(ctx context.Context, s graph.State) (any, error) { return graph.Update{"items": "good"}, nil })
		g.AddEdge(graph.Start, "bad").AddEdge(graph.Start, "good")
		h := newHarness(t, compile(t, g, graph.CompileOptions{}))
		_, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{}`)})
		require.Error(t, err)
		st, hist := h.state(), h.history()
		require.JSONEq(t, jsonOf(t, st), jsonOf(t, hist[0]))
		require.Equal(t, []string{"bad"}, st.Next)
		require.Equal(t, "CustomError('Boo!')", *st.Tasks[0].Error)
		require.Equal(t, []any{"good"}, st.Values.(map[string]any)["items"])

		// the same checkpoint by id reads the same
		byID, err := h.g.State(context.Background(), &graphserver.StateRequest{Checkpoint: *st.Checkpoint, Checkpointer: h.cp})
		require.NoError(t, err)
		require.JSONEq(t, jsonOf(t, st), jsonOf(t, byID))
	})
	t.Run("rejected input", func(t *testing.T) {
		t.Parallel()
		g := graph.New(graph.Channels{"messages": graph.AddMessages()})
		g.AddNode("chat", func(ctx context.Context, s graph.State) (any, error) {
			return graph.Update{"messages": graph.AI("hi")}, nil
		})
		g.AddEdge(graph.Start, "chat")
		h := newHarness(t, compile(t, g, graph.CompileOptions{}))
		_, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{"messages": [{"type": "bogus", "content": "x"}]}`)})
		require.Equal(t, "InvalidUpdateError", graphserver.ErrorName(err))
		st, hist := h.state(), h.history()
		require.JSONEq(t, jsonOf(t, st), jsonOf(t, hist[0]))
		require.Equal(t, []string{graph.Start}, st.Next)
		require.Len(t, st.Tasks, 1)
		require.NotNil(t, st.Tasks[0].Error)
		require.Contains(t, *st.Tasks[0].Error, "InvalidUpdateError(")
		require.Equal(t, []any{}, st.Values.(map[string]any)["messages"])
	})
	t.Run("cancelled after a node finished", func(t *testing.T) {
		t.Parallel()
		// the node's writes are kept for the next run (it does not run
		// again), and both routes show them folded into the latest state
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		g := graph.New(graph.Channels{"messages": graph.AddMessages()})
		g.AddNode("chat", func(context.Context, graph.State) (any, error) {
			cancel(context.Canceled)
			return graph.Update{"messages": graph.AI("reply")}, nil
		})
		g.AddNode("after", func(context.Context, graph.State) (any, error) { return nil, nil })
		g.AddEdge(graph.Start, "chat").AddEdge("chat", "after")
		h := newHarness(t, compile(t, g, graph.CompileOptions{}))
		err := h.g.Run(ctx, &graphserver.GraphRun{ThreadID: h.thread, Checkpointer: h.cp, Input: json.RawMessage(`{"messages": ["hi"]}`)}, nil)
		require.ErrorIs(t, err, context.Canceled)
		st, hist := h.state(), h.history()
		require.JSONEq(t, jsonOf(t, st), jsonOf(t, hist[0]))
		require.Equal(t, []string{"hi", "reply"}, contents(st, "messages"))
		require.Empty(t, st.Next)
	})
	t.Run("cancelled while a node runs", func(t *testing.T) {
		t.Parallel()
		// the node stopped by the cancel neither finished nor failed: it is
		// pending, with no error, and runs again when the thread resumes
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		started := make(chan struct{})
		runs := 0
		g := graph.New(graph.Channels{"messages": graph.AddMessages()})
		g.AddNode("chat", func(ctx context.Context, s graph.State) (any, error) {
			runs++
			if runs == 1 {
				close(started)
				<-ctx.Done()
				return nil, context.Cause(ctx)
			}
			return graph.Update{"messages": graph.AI("reply")}, nil
		})
		g.AddEdge(graph.Start, "chat")
		h := newHarness(t, compile(t, g, graph.CompileOptions{}))
		go func() { <-started; cancel(errors.New("run cancelled (interrupt)")) }()
		err := h.g.Run(ctx, &graphserver.GraphRun{ThreadID: h.thread, Checkpointer: h.cp, Input: json.RawMessage(`{"messages": ["hi"]}`)}, nil)
		require.EqualError(t, err, "run cancelled (interrupt)")
		st, hist := h.state(), h.history()
		require.JSONEq(t, jsonOf(t, st), jsonOf(t, hist[0]))
		require.Equal(t, []string{"chat"}, st.Next)
		require.Nil(t, st.Tasks[0].Error, "a stopped task is no failure")
		require.Equal(t, []string{"hi"}, contents(st, "messages"))
		_, err = h.run(graphserver.GraphRun{})
		require.NoError(t, err)
		require.Equal(t, []string{"hi", "reply"}, contents(h.state(), "messages"))
	})
	t.Run("older checkpoint", func(t *testing.T) {
		t.Parallel()
		// the failed step is no longer the latest once the thread moved on:
		// as in LangGraph's history, its finished task stays in next (a
		// replay from it reruns the step), with its result and the error
		g := graph.New(graph.Channels{"items": graph.Append()})
		g.AddNode("bad", func(ctx context.Context, s graph.State) (any, error) {
			if len(s["items"].([]any)) < 2 {
				return nil, &graph.NodeError{Name: "CustomError", Message: "Boo!"}
			}
			return nil, nil
		})
		g.AddNode("good", func(ctx context.Context, s graph.State) (any, error) { return graph.Update{"items": "good"}, nil })
		g.AddEdge(graph.Start, "bad").AddEdge(graph.Start, "good")
		h := newHarness(t, compile(t, g, graph.CompileOptions{}))
		_, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{}`)})
		require.Error(t, err)
		failed := h.state()
		h.input(`{"items": ["x", "y"]}`)
		var old *graphserver.ThreadState
		for _, s := range h.history() {
			if *s.CheckpointID == *failed.CheckpointID {
				old = s
			}
		}
		require.NotNil(t, old)
		require.Equal(t, []string{"bad", "good"}, old.Next)
		require.Equal(t, map[string]any{"items": "good"}, old.Tasks[1].Result)
		require.Equal(t, "CustomError('Boo!')", *old.Tasks[0].Error)
		byID, err := h.g.State(context.Background(), &graphserver.StateRequest{Checkpoint: *old.Checkpoint, Checkpointer: h.cp})
		require.NoError(t, err)
		require.JSONEq(t, jsonOf(t, old), jsonOf(t, byID))
	})
}

// A subgraph task's checkpoint pointer in thread state is
// {thread_id, checkpoint_ns}, without null members (LangGraph's get_state
// gives the task's state config so).
func TestSubgraphTaskPointerJSON(t *testing.T) {
	t.Parallel()
	h := newHarness(t, weatherGraph(t))
	_, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{"messages": [{"role": "user", "content": "sf"}]}`)})
	require.NoError(t, err)
	st := h.state()
	var wire map[string]any
	require.NoError(t, json.Unmarshal([]byte(jsonOf(t, st.Tasks[0])), &wire))
	require.Equal(t, map[string]any{"thread_id": h.thread, "checkpoint_ns": "weather_graph:" + st.Tasks[0].ID}, wire["checkpoint"])
}
