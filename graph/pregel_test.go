package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/stretchr/testify/require"
)

func compile(t *testing.T, g *graph.StateGraph, opts graph.CompileOptions) *graph.Compiled {
	t.Helper()
	c, err := g.Compile(opts)
	require.NoError(t, err)
	return c
}

func TestParallelBranchFailureResume(t *testing.T) {
	t.Parallel()
	var okRuns, badRuns atomic.Int32
	fail := atomic.Bool{}
	fail.Store(true)
	g := graph.New(graph.Channels{"items": graph.Append()})
	g.AddNode("fan", func(ctx context.Context, s graph.State) (any, error) { return graph.Update{"items": "fan"}, nil })
	g.AddNode("ok", func(ctx context.Context, s graph.State) (any, error) {
		okRuns.Add(1)
		return graph.Update{"items": "ok"}, nil
	})
	g.AddNode("bad", func(ctx context.Context, s graph.State) (any, error) {
		badRuns.Add(1)
		if fail.Load() {
			return nil, &graph.NodeError{Name: "CustomError", Message: "Boo!"}
		}
		return graph.Update{"items": "bad"}, nil
	})
	g.AddEdge(graph.Start, "fan").AddEdge("fan", "ok").AddEdge("fan", "bad").AddEdge("ok", graph.End).AddEdge("bad", graph.End)
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))

	_, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{"items": ["in"]}`)})
	require.Error(t, err)
	require.Equal(t, "CustomError", graphserver.ErrorName(err))
	require.Equal(t, "Boo!", err.Error())
	st := h.state()
	require.Equal(t, []string{"bad"}, st.Next)
	require.Len(t, st.Tasks, 2)
	require.Equal(t, "bad", st.Tasks[0].Name)
	require.Equal(t, "CustomError('Boo!')", *st.Tasks[0].Error)
	require.Equal(t, map[string]any{"items": "ok"}, st.Tasks[1].Result)

	fail.Store(false)
	_, err = h.run(graphserver.GraphRun{})
	require.NoError(t, err)
	require.Equal(t, int32(1), okRuns.Load(), "finished sibling must not re-run")
	require.Equal(t, int32(2), badRuns.Load())
	// writes applied in task path order: bad before ok
	require.Equal(t, []any{"in", "fan", "bad", "ok"}, h.state().Values.(map[string]any)["items"])
}

func TestSendFanOut(t *testing.T) {
	t.Parallel()
	g := graph.New(graph.Channels{"subjects": graph.LastValue(), "jokes": graph.Append()})
	g.AddNode("joke", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"jokes": "joke about " + s.String("subject")}, nil
	})
	g.AddConditionalEdges(graph.Start, func(ctx context.Context, s graph.State) any {
		var sends []graph.Send
		for _, x := range s["subjects"].([]any) {
			sends = append(sends, graph.Send{Node: "joke", Arg: map[string]any{"subject": x}})
		}
		return sends
	})
	g.AddEdge("joke", graph.End)
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	rec := h.input(`{"subjects": ["cats", "dogs"]}`, "updates", "tasks")
	require.Equal(t, []any{"joke about cats", "joke about dogs"}, h.state().Values.(map[string]any)["jokes"])
	require.Len(t, rec.of("updates"), 2)
	tasks := rec.of("tasks")
	require.Equal(t, map[string]any{"subject": "cats"}, tasks[0].(map[string]any)["input"])
	hist := h.history()
	require.Equal(t, []string{"joke", "joke"}, hist[1].Next)
	require.Equal(t, `["__pregel_push",0]`, jsonOf(t, hist[1].Tasks[0].Path))
}

func TestCommandFromNodeAndInput(t *testing.T) {
	t.Parallel()
	g := graph.New(graph.Channels{"log": graph.Append()})
	g.AddNode("a", func(ctx context.Context, s graph.State) (any, error) {
		return &graph.Command{Update: graph.Update{"log": "a"}, Goto: "c"}, nil
	})
	g.AddNode("b", func(ctx context.Context, s graph.State) (any, error) { return graph.Update{"log": "b"}, nil })
	g.AddNode("c", func(ctx context.Context, s graph.State) (any, error) { return graph.Update{"log": "c"}, nil })
	g.AddEdge(graph.Start, "a")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	h.input(`{"log": []}`)
	require.Equal(t, []any{"a", "c"}, h.state().Values.(map[string]any)["log"])

	// Command as run input: update + goto b
	_, err := h.run(graphserver.GraphRun{Command: &graphserver.RunCommand{Update: json.RawMessage(`{"log": "cmd"}`), Goto: json.RawMessage(`"b"`)}})
	require.NoError(t, err)
	require.Equal(t, []any{"a", "c", "cmd", "b"}, h.state().Values.(map[string]any)["log"])
	// goto as Send object, update as [[k, v]] list
	_, err = h.run(graphserver.GraphRun{Command: &graphserver.RunCommand{Update: json.RawMessage(`[["log", "pair"]]`), Goto: json.RawMessage(`[{"node": "c", "input": {}}]`)}})
	require.NoError(t, err)
	require.Equal(t, []any{"a", "c", "cmd", "b", "pair", "c"}, h.state().Values.(map[string]any)["log"])
	_, err = h.run(graphserver.GraphRun{Command: &graphserver.RunCommand{}})
	require.Equal(t, graphserver.EINVALID, graphserver.ErrorCode(err))
}

func chain(t *testing.T, opts graph.CompileOptions) *graph.Compiled {
	g := graph.New(graph.Channels{"log": graph.Append()})
	for _, n := range []string{"a", "b", "c"} {
		g.AddNode(n, func(ctx context.Context, s graph.State) (any, error) { return graph.Update{"log": n}, nil })
	}
	g.AddEdge(graph.Start, "a").AddEdge("a", "b").AddEdge("b", "c").AddEdge("c", graph.End)
	return compile(t, g, opts)
}

func TestStaticBreakpoints(t *testing.T) {
	t.Parallel()
	t.Run("CompileBefore", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, chain(t, graph.CompileOptions{InterruptBefore: []string{"b"}}))
		rec := h.input(`{}`, "updates", "values")
		require.Equal(t, []string{"b"}, h.state().Next)
		require.Equal(t, []any{"a"}, h.state().Values.(map[string]any)["log"])
		ups := rec.of("updates")
		require.Equal(t, map[string]any{"__interrupt__": []any{}}, ups[len(ups)-1])
		_, err := h.run(graphserver.GraphRun{})
		require.NoError(t, err)
		require.Equal(t, []any{"a", "b", "c"}, h.state().Values.(map[string]any)["log"])
	})
	t.Run("RunAfterAll", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, chain(t, graph.CompileOptions{}))
		_, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{}`), InterruptAfter: graphserver.Breakpoints{"*"}})
		require.NoError(t, err)
		require.Equal(t, []string{"b"}, h.state().Next)
		_, err = h.run(graphserver.GraphRun{InterruptAfter: graphserver.Breakpoints{"*"}})
		require.NoError(t, err)
		require.Equal(t, []string{"c"}, h.state().Next)
		_, err = h.run(graphserver.GraphRun{})
		require.NoError(t, err)
		require.Empty(t, h.state().Next)
	})
	t.Run("UpdateAsNodeSkips", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, chain(t, graph.CompileOptions{InterruptBefore: []string{"b"}}))
		h.input(`{}`)
		_, err := h.g.UpdateState(context.Background(), &graphserver.UpdateStateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: h.thread}, Values: json.RawMessage(`{"log": "human"}`), AsNode: "b", Checkpointer: h.cp})
		require.NoError(t, err)
		st := h.state()
		require.Equal(t, []string{"c"}, st.Next)
		require.Equal(t, "update", st.Metadata["source"])
		_, err = h.run(graphserver.GraphRun{})
		require.NoError(t, err)
		require.Equal(t, []any{"a", "human", "c"}, h.state().Values.(map[string]any)["log"])
	})
}

func TestRecursionLimit(t *testing.T) {
	t.Parallel()
	g := graph.New(graph.Channels{"n": graph.LastValue()})
	g.AddNode("loop", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"n": s.Number("n") + 1}, nil
	})
	g.AddEdge(graph.Start, "loop").AddEdge("loop", "loop")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	_, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{"n": 0}`), Config: graphserver.Object{"recursion_limit": 5.0}})
	require.Error(t, err)
	require.Equal(t, "GraphRecursionError", graphserver.ErrorName(err))
	var re *graph.RecursionError
	require.True(t, errors.As(err, &re))
	require.Equal(t, 5.0, h.state().Values.(map[string]any)["n"])
}

// START->a->b->c->END takes four supersteps (__start__, a, b, c): LangGraph
// checks the limit at the top of each tick, before looking for tasks, so a
// limit of 3 fails it and 4 lets it finish.
func TestRecursionLimitCountsLastStep(t *testing.T) {
	t.Parallel()
	h := newHarness(t, chain(t, graph.CompileOptions{}))
	_, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{}`), Config: graphserver.Object{"recursion_limit": 3.0}})
	require.Equal(t, "GraphRecursionError", graphserver.ErrorName(err))
	require.Equal(t, []any{"a", "b", "c"}, h.state().Values.(map[string]any)["log"])

	h = newHarness(t, chain(t, graph.CompileOptions{}))
	_, err = h.run(graphserver.GraphRun{Input: json.RawMessage(`{}`), Config: graphserver.Object{"recursion_limit": 4.0}})
	require.NoError(t, err)
	require.Equal(t, []any{"a", "b", "c"}, h.state().Values.(map[string]any)["log"])
}

func TestForkFromOldCheckpoint(t *testing.T) {
	t.Parallel()
	h := newHarness(t, chain(t, graph.CompileOptions{}))
	h.input(`{"log": ["x"]}`)
	hist := h.history()
	require.Len(t, hist, 5)
	// hist[2] is after a, next = b
	old := hist[2]
	require.Equal(t, []string{"b"}, old.Next)
	cp, err := h.g.UpdateState(context.Background(), &graphserver.UpdateStateRequest{Checkpoint: *old.Checkpoint, Values: json.RawMessage(`{"log": "forked"}`), AsNode: "a", Checkpointer: h.cp})
	require.NoError(t, err)
	st, err := h.g.State(context.Background(), &graphserver.StateRequest{Checkpoint: *cp, Checkpointer: h.cp})
	require.NoError(t, err)
	require.Equal(t, *old.CheckpointID, *st.ParentCheckpointID)
	require.Equal(t, []any{"x", "a", "forked"}, st.Values.(map[string]any)["log"])
	require.Equal(t, []string{"b"}, st.Next)
	// run from the fork
	_, err = h.run(graphserver.GraphRun{Config: graphserver.Object{"configurable": map[string]any{"checkpoint_id": *cp.CheckpointID}}})
	require.NoError(t, err)
	require.Equal(t, []any{"x", "a", "forked", "b", "c"}, h.state().Values.(map[string]any)["log"])
	// copy (source fork)
	cp2, err := h.g.UpdateState(context.Background(), &graphserver.UpdateStateRequest{Checkpoint: *hist[4].Checkpoint, AsNode: graph.Copy, Checkpointer: h.cp})
	require.NoError(t, err)
	st, err = h.g.State(context.Background(), &graphserver.StateRequest{Checkpoint: *cp2, Checkpointer: h.cp})
	require.NoError(t, err)
	require.Equal(t, "fork", st.Metadata["source"])
	require.Equal(t, []string{"__start__"}, st.Next)
}

func TestUpdateStateInputAndStart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, chain(t, graph.CompileOptions{}))
	cp, err := h.g.UpdateState(context.Background(), &graphserver.UpdateStateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: h.thread}, Values: json.RawMessage(`{"log": ["in"]}`), AsNode: graph.Input, Checkpointer: h.cp})
	require.NoError(t, err)
	require.NotNil(t, cp.CheckpointID)
	st := h.state()
	require.Equal(t, "input", st.Metadata["source"])
	require.Equal(t, []string{"__start__"}, st.Next)
	_, err = h.g.UpdateState(context.Background(), &graphserver.UpdateStateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: h.thread}, Values: json.RawMessage(`{"log": ["s"]}`), AsNode: graph.Start, Checkpointer: h.cp})
	require.NoError(t, err)
	st = h.state()
	require.Equal(t, []string{"a"}, st.Next)
	require.Equal(t, []any{"s"}, st.Values.(map[string]any)["log"])
	// inferred as_node: last node that ran is __start__
	_, err = h.g.UpdateState(context.Background(), &graphserver.UpdateStateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: h.thread}, Values: json.RawMessage(`{"log": ["t"]}`), Checkpointer: h.cp})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, h.state().Next)
	_, err = h.run(graphserver.GraphRun{})
	require.NoError(t, err)
	require.Equal(t, []any{"s", "t", "a", "b", "c"}, h.state().Values.(map[string]any)["log"])
}

func TestCustomStreamAndRuntime(t *testing.T) {
	t.Parallel()
	g := graph.New(graph.Channels{"out": graph.LastValue()})
	g.AddNode("n", func(ctx context.Context, s graph.State) (any, error) {
		graph.StreamWriter(ctx)(map[string]any{"step": graph.Step(ctx), "node": graph.NodeName(ctx)})
		return graph.Update{"out": graph.Configurable(ctx)["user"].(string) + "/" + graph.RuntimeContext(ctx)["model"].(string)}, nil
	})
	g.AddEdge(graph.Start, "n")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	rec, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{}`), StreamModes: []string{"custom", "debug", "checkpoints", "events"},
		Config: graphserver.Object{"configurable": map[string]any{"user": "ann"}}, Context: graphserver.Object{"model": "m"}})
	require.NoError(t, err)
	require.Equal(t, []any{map[string]any{"step": 1.0, "node": "n"}}, rec.of("custom"))
	require.Equal(t, "ann/m", h.state().Values.(map[string]any)["out"])
	cps := rec.of("checkpoints")
	require.Len(t, cps, 3)
	require.Equal(t, []any{"n"}, cps[1].(map[string]any)["next"])
	var types []string
	for _, d := range rec.of("debug") {
		types = append(types, d.(map[string]any)["type"].(string))
	}
	require.Equal(t, []string{"checkpoint", "checkpoint", "task", "task_result", "checkpoint"}, types)
	var evs []string
	for _, e := range rec.of("events") {
		evs = append(evs, e.(map[string]any)["event"].(string)+":"+e.(map[string]any)["name"].(string))
	}
	require.Equal(t, []string{"on_chain_start:LangGraph", "on_chain_start:n", "on_chain_end:n", "on_chain_end:LangGraph"}, evs)
}

func TestDurabilityModes(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"sync", "async", "exit"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, chain(t, graph.CompileOptions{InterruptBefore: []string{"c"}}))
			_, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{}`), Durability: mode})
			require.NoError(t, err)
			n := len(h.history())
			if mode == "exit" {
				require.Equal(t, 1, n)
			} else {
				require.Equal(t, 4, n)
			}
			require.Equal(t, []string{"c"}, h.state().Next)
			_, err = h.run(graphserver.GraphRun{Durability: mode})
			require.NoError(t, err)
			require.Equal(t, []any{"a", "b", "c"}, h.state().Values.(map[string]any)["log"])
		})
	}
}

func TestFuncAdapter(t *testing.T) {
	t.Parallel()
	echo := graph.Func("echo", func(ctx context.Context, in any) (any, error) {
		return map[string]any{"echo": in}, nil
	})
	h := newHarness(t, echo)
	rec := h.input(`[1, "two"]`, "values")
	require.Equal(t, map[string]any{"echo": []any{1.0, "two"}}, h.state().Values)
	require.Equal(t, []any{[]any{1.0, "two"}, map[string]any{"echo": []any{1.0, "two"}}}, rec.of("values"))
}

func TestNilCheckpointerRuns(t *testing.T) {
	t.Parallel()
	c := chain(t, graph.CompileOptions{})
	rec := &recorder{}
	err := c.Run(context.Background(), &graphserver.GraphRun{Input: json.RawMessage(`{}`), StreamModes: []string{"values"}}, rec.emit)
	require.NoError(t, err)
	vals := rec.of("values")
	require.Equal(t, map[string]any{"log": []any{"a", "b", "c"}}, vals[len(vals)-1])
}

func TestCancelReturnsCause(t *testing.T) {
	t.Parallel()
	cause := errors.New("stop now")
	g := graph.New(graph.Channels{"x": graph.LastValue()})
	g.AddNode("wait", func(ctx context.Context, s graph.State) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	g.AddEdge(graph.Start, "wait")
	c := compile(t, g, graph.CompileOptions{})
	ctx, cancel := context.WithCancelCause(context.Background())
	err := c.Run(ctx, &graphserver.GraphRun{Input: json.RawMessage(`{}`), StreamModes: []string{"tasks"}}, func(p graphserver.StreamPart) {
		if p.Event == "tasks" {
			cancel(cause)
		}
	})
	require.ErrorIs(t, err, cause)
}

// A step's values event comes before its checkpoint, which is emitted once
// the next tasks are known (LangGraph's tick); a resumed run emits the
// checkpoint it resumes from once, after its values.
func TestStreamOrderValuesThenCheckpoint(t *testing.T) {
	t.Parallel()
	h := newHarness(t, chain(t, graph.CompileOptions{InterruptBefore: []string{"b"}}))
	order := func(rec *recorder) []string {
		var out []string
		for _, p := range rec.parts {
			switch p.Event {
			case "values":
				out = append(out, "v")
			case "checkpoints":
				var c struct{ Next []string }
				require.NoError(t, json.Unmarshal(p.Data, &c))
				out = append(out, fmt.Sprint("cp", c.Next))
			}
		}
		return out
	}
	rec := h.input(`{"log": ["x"]}`, "values", "checkpoints")
	require.Equal(t, []string{"cp[__start__]", "v", "cp[a]", "v", "cp[b]", "v"}, order(rec))
	rec, err := h.run(graphserver.GraphRun{StreamModes: []string{"values", "checkpoints"}})
	require.NoError(t, err)
	require.Equal(t, []string{"v", "cp[b]", "v", "cp[c]", "v", "cp[]"}, order(rec))
}
