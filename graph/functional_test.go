package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/stretchr/testify/require"
)

// updatesOf returns the updates stream's chunks.
func updatesOf(rec *recorder) []any { return rec.of("updates") }

func resume(v string) *graphserver.RunCommand {
	return &graphserver.RunCommand{Resume: json.RawMessage(v)}
}

// LangGraph's test_imp_task (tests/test_pregel_async.py): tasks called from
// an entrypoint run in parallel and stream {task: result} as they finish,
// the entrypoint's interrupt pauses the run, and the resumed entrypoint gets
// the tasks' saved results without running them again.
func TestEntrypointTaskResultsReusedOnResume(t *testing.T) {
	t.Parallel()
	for _, durability := range []string{"sync", "async", "exit"} {
		t.Run(durability, func(t *testing.T) {
			t.Parallel()
			var mapperCalls atomic.Int32
			mapper := graph.NewTask("mapper", func(ctx context.Context, in int) (string, error) {
				mapperCalls.Add(1)
				return strings.Repeat(fmt.Sprint(in), 2), nil
			})
			g := graph.Entrypoint("graph", func(ctx context.Context, input any) (any, error) {
				var futures []*graph.Future[string]
				for _, n := range input.([]any) {
					futures = append(futures, mapper.Call(ctx, int(n.(float64))))
				}
				var mapped []string
				for _, f := range futures {
					s, err := f.Result()
					if err != nil {
						return nil, err
					}
					mapped = append(mapped, s)
				}
				answer, err := graph.Interrupt(ctx, "question")
				if err != nil {
					return nil, err
				}
				var out []string
				for _, m := range mapped {
					out = append(out, m+answer.(string))
				}
				return out, nil
			})
			h := newHarness(t, g)
			rec, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`[0, 1]`), StreamModes: []string{"updates"}, Durability: durability})
			require.NoError(t, err)
			ups := updatesOf(rec)
			require.Len(t, ups, 3)
			require.ElementsMatch(t, []any{map[string]any{"mapper": "00"}, map[string]any{"mapper": "11"}}, ups[:2])
			intr := ups[2].(map[string]any)["__interrupt__"].([]any)
			require.Len(t, intr, 1, "one interrupt, raised by the entrypoint")
			require.Equal(t, "question", intr[0].(map[string]any)["value"])
			require.Equal(t, int32(2), mapperCalls.Load())

			st := h.state()
			require.Equal(t, []string{"graph"}, st.Next)
			require.Len(t, st.Interrupts, 1)

			rec, err = h.run(graphserver.GraphRun{Command: resume(`"answer"`), StreamModes: []string{"updates", "values"}, Durability: durability})
			require.NoError(t, err)
			require.Equal(t, int32(2), mapperCalls.Load(), "finished tasks are not run again")
			require.Equal(t, []any{"00answer", "11answer"}, h.state().Values)
			require.Equal(t, []any{map[string]any{"graph": []any{"00answer", "11answer"}}}, updatesOf(rec))
			require.Empty(t, h.state().Next)
		})
	}
}

// LangGraph's entrypoint docstring example ("Using entrypoint.final to save
// a value"): previous is the value saved by the thread's last run, and
// Final returns one value while saving another.
func TestEntrypointPreviousAndFinal(t *testing.T) {
	t.Parallel()
	g := graph.Entrypoint("my_workflow", func(ctx context.Context, input any) (any, error) {
		previous, _ := graph.Previous(ctx).(float64)
		return graph.Final{Value: previous, Save: 2 * input.(float64)}, nil
	})
	h := newHarness(t, g)
	out, err := g.Invoke(context.Background(), 3, &graphserver.GraphRun{Checkpointer: h.cp, ThreadID: h.thread})
	require.NoError(t, err)
	require.Equal(t, 0.0, out, "previous was None")
	out, err = g.Invoke(context.Background(), 1, &graphserver.GraphRun{Checkpointer: h.cp, ThreadID: h.thread})
	require.NoError(t, err)
	require.Equal(t, 6.0, out, "previous was 3 * 2 from the previous invocation")
	require.Equal(t, 6.0, h.state().Values, "the thread's values are the value returned, not the one saved")

	// without Final, previous is what the entrypoint returned (the
	// docstring's accumulating my_workflow)
	acc := graph.Entrypoint("acc", func(ctx context.Context, input any) (any, error) {
		previous, _ := graph.Previous(ctx).(float64)
		return previous + input.(float64), nil
	})
	h = newHarness(t, acc)
	for _, c := range []struct{ in, want float64 }{{1, 1}, {2, 3}, {3, 6}} {
		rec, err := h.run(graphserver.GraphRun{Input: json.RawMessage(fmt.Sprint(c.in)), StreamModes: []string{"values", "updates"}})
		require.NoError(t, err)
		require.Equal(t, []any{map[string]any{"acc": c.want}}, updatesOf(rec))
		require.Equal(t, []any{c.want}, rec.of("values"), "values: the value returned, once")
	}
}

// LangGraph's test_interrupt_task_functional: an interrupt inside a task
// pauses the run (one __interrupt__, the entrypoint's); resumed, the task
// that finished is not run again and the interrupted one gets the resume
// value; the same task called twice interrupts twice.
func TestEntrypointInterruptInsideTask(t *testing.T) {
	t.Parallel()
	var fooCalls atomic.Int32
	foo := graph.NewTask("foo", func(ctx context.Context, s map[string]string) (map[string]string, error) {
		fooCalls.Add(1)
		return map[string]string{"a": s["a"] + "foo"}, nil
	})
	bar := graph.NewTask("bar", func(ctx context.Context, s map[string]string) (map[string]string, error) {
		v, err := graph.Interrupt(ctx, "Provide value for bar:")
		if err != nil {
			return nil, err
		}
		return map[string]string{"a": s["a"] + v.(string)}, nil
	})
	toMap := func(in any) map[string]string {
		out := map[string]string{}
		for k, v := range in.(map[string]any) {
			out[k] = v.(string)
		}
		return out
	}
	g := graph.Entrypoint("graph", func(ctx context.Context, input any) (any, error) {
		f, err := foo.Call(ctx, toMap(input)).Result()
		if err != nil {
			return nil, err
		}
		return bar.Call(ctx, f).Result()
	})
	h := newHarness(t, g)
	rec, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{"a": ""}`), StreamModes: []string{"updates"}})
	require.NoError(t, err)
	ups := updatesOf(rec)
	require.Len(t, ups, 2)
	require.Equal(t, map[string]any{"foo": map[string]any{"a": "foo"}}, ups[0])
	intr := ups[1].(map[string]any)["__interrupt__"].([]any)
	require.Len(t, intr, 1, "the task's interrupt is emitted once, by its caller")
	require.Equal(t, "Provide value for bar:", intr[0].(map[string]any)["value"])
	st := h.state()
	require.Nil(t, st.Values, "no value returned yet")
	require.Len(t, st.Tasks, 1)
	require.Equal(t, "graph", st.Tasks[0].Name)
	require.Len(t, st.Interrupts, 1)
	require.Equal(t, intr[0].(map[string]any)["id"], st.Interrupts[0].ID)

	_, err = h.run(graphserver.GraphRun{Command: resume(`"bar"`)})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"a": "foobar"}, h.state().Values)
	require.Equal(t, int32(1), fooCalls.Load())

	// the same task interrupted twice, resumed by id
	twice := graph.Entrypoint("graph", func(ctx context.Context, input any) (any, error) {
		f, err := foo.Call(ctx, toMap(input)).Result()
		if err != nil {
			return nil, err
		}
		b, err := bar.Call(ctx, f).Result()
		if err != nil {
			return nil, err
		}
		return bar.Call(ctx, b).Result()
	})
	h = newHarness(t, twice)
	h.input(`{"a": ""}`)
	_, err = h.run(graphserver.GraphRun{Command: resume(`"bar"`)})
	require.NoError(t, err)
	st = h.state()
	require.Len(t, st.Interrupts, 1)
	_, err = h.run(graphserver.GraphRun{Command: resume(jsonOf(t, map[string]any{st.Interrupts[0].ID: "baz"}))})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"a": "foobarbaz"}, h.state().Values)
	require.Equal(t, int32(2), fooCalls.Load(), "one foo per thread")
}

// LangGraph's test_multiple_interrupts_functional: an entrypoint that
// interrupts after each task call runs each task once over four runs.
func TestEntrypointMultipleInterrupts(t *testing.T) {
	t.Parallel()
	var counter atomic.Int32
	double := graph.NewTask("double", func(ctx context.Context, x int) (int, error) {
		counter.Add(1)
		return 2 * x, nil
	})
	g := graph.Entrypoint("graph", func(ctx context.Context, input any) (any, error) {
		var values []any
		for _, idx := range []int{1, 2, 3} {
			d, err := double.Call(ctx, idx).Result()
			if err != nil {
				return nil, err
			}
			a, err := graph.Interrupt(ctx, map[string]any{"a": "boo"})
			if err != nil {
				return nil, err
			}
			values = append(values, d, a)
		}
		return map[string]any{"values": values}, nil
	})
	h := newHarness(t, g)
	h.input(`{}`)
	for _, r := range []string{`"a"`, `"b"`, `"c"`} {
		_, err := h.run(graphserver.GraphRun{Command: resume(r)})
		require.NoError(t, err)
	}
	require.Equal(t, map[string]any{"values": []any{2.0, "a", 4.0, "b", 6.0, "c"}}, h.state().Values)
	require.Equal(t, int32(3), counter.Load())
}

// LangGraph's test_imp_sync_from_async / test_imp_stream_order: tasks
// chained through their results stream their updates in order, then the
// entrypoint's.
func TestEntrypointStreamOrder(t *testing.T) {
	t.Parallel()
	type ab = map[string]any
	foo := graph.NewTask("foo", func(ctx context.Context, s ab) (ab, error) {
		return ab{"a": s["a"].(string) + "foo", "b": "bar"}, nil
	})
	bar := graph.NewTask("bar", func(ctx context.Context, s ab) (ab, error) {
		return ab{"a": s["a"].(string) + s["b"].(string), "c": "bark"}, nil
	})
	baz := graph.NewTask("baz", func(ctx context.Context, s ab) (ab, error) {
		return ab{"a": s["a"].(string) + "baz", "c": "something else"}, nil
	})
	g := graph.Entrypoint("graph", func(ctx context.Context, input any) (any, error) {
		f, err := foo.Call(ctx, input.(map[string]any)).Result()
		if err != nil {
			return nil, err
		}
		b, err := bar.Call(ctx, f).Result()
		if err != nil {
			return nil, err
		}
		return baz.Call(ctx, b).Result()
	})
	rec := newHarness(t, g).input(`{"a": "0"}`, "updates")
	require.Equal(t, []any{
		ab{"foo": ab{"a": "0foo", "b": "bar"}},
		ab{"bar": ab{"a": "0foobar", "c": "bark"}},
		ab{"baz": ab{"a": "0foobarbaz", "c": "something else"}},
		ab{"graph": ab{"a": "0foobarbaz", "c": "something else"}},
	}, updatesOf(rec))
}

// LangGraph's test_imp_nested: a task calling a task, and an entrypoint
// invoking a compiled graph after its interrupt.
func TestEntrypointNestedTasksAndSubgraph(t *testing.T) {
	t.Parallel()
	addA := graph.Func("mynode", func(ctx context.Context, in any) (any, error) {
		var out []any
		for _, s := range in.([]any) {
			out = append(out, s.(string)+"a")
		}
		return out, nil
	})
	submapper := graph.NewTask("submapper", func(ctx context.Context, in int) (string, error) { return fmt.Sprint(in), nil })
	mapper := graph.NewTask("mapper", func(ctx context.Context, in int) (string, error) {
		s, err := submapper.Call(ctx, in).Result()
		return s + s, err
	})
	g := graph.Entrypoint("graph", func(ctx context.Context, input any) (any, error) {
		var futures []*graph.Future[string]
		for _, n := range input.([]any) {
			futures = append(futures, mapper.Call(ctx, int(n.(float64))))
		}
		answer, err := graph.Interrupt(ctx, "question")
		if err != nil {
			return nil, err
		}
		var final []string
		for _, f := range futures {
			m, err := f.Result()
			if err != nil {
				return nil, err
			}
			final = append(final, m+answer.(string))
		}
		return addA.Invoke(ctx, final, nil)
	})
	h := newHarness(t, g)
	rec := h.input(`[0, 1]`, "updates")
	ups := updatesOf(rec)
	require.Len(t, ups, 5)
	require.ElementsMatch(t, []any{
		map[string]any{"submapper": "0"}, map[string]any{"mapper": "00"},
		map[string]any{"submapper": "1"}, map[string]any{"mapper": "11"},
	}, ups[:4])
	require.Contains(t, ups[4], "__interrupt__")
	_, err := h.run(graphserver.GraphRun{Command: resume(`"answer"`)})
	require.NoError(t, err)
	require.Equal(t, []any{"00answera", "11answera"}, h.state().Values)
}

// A failed run keeps the results of the tasks that finished: run again,
// the entrypoint gets them back and only the failed task runs again
// (LangGraph's loop matches a call to the writes saved for it, skipping
// ERROR writes, so a failed call runs again).
func TestEntrypointFailedTaskRerunsAlone(t *testing.T) {
	t.Parallel()
	var okCalls, badCalls atomic.Int32
	var fail atomic.Bool
	fail.Store(true)
	ok := graph.NewTask("ok", func(ctx context.Context, in string) (string, error) {
		okCalls.Add(1)
		return in + "!", nil
	})
	bad := graph.NewTask("bad", func(ctx context.Context, in string) (string, error) {
		badCalls.Add(1)
		if fail.Load() {
			return "", &graph.NodeError{Name: "CustomError", Message: "Boo!"}
		}
		return in + "?", nil
	})
	g := graph.Entrypoint("graph", func(ctx context.Context, input any) (any, error) {
		fo, fb := ok.Call(ctx, input.(string)), bad.Call(ctx, input.(string))
		a, err := fo.Result()
		if err != nil {
			return nil, err
		}
		b, err := fb.Result()
		if err != nil {
			return nil, err
		}
		return a + b, nil
	})
	h := newHarness(t, g)
	_, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`"x"`)})
	require.Error(t, err)
	require.Equal(t, "CustomError", graphserver.ErrorName(err))
	st := h.state()
	require.Equal(t, []string{"graph"}, st.Next)
	require.Equal(t, "CustomError('Boo!')", *st.Tasks[0].Error)

	fail.Store(false)
	rec, err := h.run(graphserver.GraphRun{StreamModes: []string{"updates"}})
	require.NoError(t, err)
	require.Equal(t, []any{map[string]any{"bad": "x?"}, map[string]any{"graph": "x!x?"}}, updatesOf(rec),
		"the task run again streams its result (its earlier error is not its outcome)")
	require.Equal(t, "x!x?", h.state().Values)
	require.Equal(t, int32(1), okCalls.Load(), "the finished task is not run again")
	require.Equal(t, int32(2), badCalls.Load())
}

// A task's retry policy retries it inside the step (LangGraph's @task
// retry_policy); a task is callable from a StateGraph node too.
func TestTaskRetryFromStateGraphNode(t *testing.T) {
	t.Parallel()
	var attempts atomic.Int32
	flaky := graph.NewTask("flaky", func(ctx context.Context, n float64) (float64, error) {
		if attempts.Add(1) < 3 {
			return 0, errors.New("try again")
		}
		return n * 10, nil
	}, graph.WithRetry(graph.RetryPolicy{InitialInterval: time.Millisecond, NoJitter: true, MaxAttempts: 3}))
	sg := graph.New(graph.Channels{"n": graph.LastValue()})
	sg.AddNode("node", func(ctx context.Context, s graph.State) (any, error) {
		v, err := flaky.Call(ctx, s.Number("n")).Result()
		return graph.Update{"n": v}, err
	})
	sg.AddEdge(graph.Start, "node").AddEdge("node", graph.End)
	h := newHarness(t, compile(t, sg, graph.CompileOptions{}))
	rec := h.input(`{"n": 4}`, "updates", "tasks")
	require.Equal(t, map[string]any{"n": 40.0}, h.state().Values)
	require.Equal(t, int32(3), attempts.Load())
	require.Equal(t, []any{map[string]any{"flaky": 40.0}, map[string]any{"node": map[string]any{"n": 40.0}}}, updatesOf(rec))
	var names []any
	for _, ev := range rec.of("tasks") {
		names = append(names, ev.(map[string]any)["name"])
	}
	require.Equal(t, []any{"node", "flaky", "flaky", "node"}, names, "a call's task start and result, inside its caller's")
}

// Outside a run, a task call runs the function at once.
func TestTaskCallOutsideRun(t *testing.T) {
	t.Parallel()
	double := graph.NewTask("double", func(ctx context.Context, x int) (int, error) { return 2 * x, nil })
	v, err := double.Call(context.Background(), 21).Result()
	require.NoError(t, err)
	require.Equal(t, 42, v)
}

// An entrypoint thread's history is LangGraph's: the input checkpoint
// (step -1) schedules the entrypoint, which runs in step 0; its values are
// the returned value, null before the first return.
func TestEntrypointHistory(t *testing.T) {
	t.Parallel()
	g := graph.Entrypoint("echo", func(ctx context.Context, input any) (any, error) { return input, nil })
	h := newHarness(t, g)
	h.input(`"hi"`)
	hs := h.history()
	require.Len(t, hs, 2)
	require.Equal(t, "hi", hs[0].Values)
	require.Equal(t, 0.0, hs[0].Metadata["step"])
	require.Empty(t, hs[0].Next)
	require.Nil(t, hs[1].Values)
	require.Equal(t, -1.0, hs[1].Metadata["step"])
	require.Equal(t, "input", hs[1].Metadata["source"])
	require.Equal(t, []string{"echo"}, hs[1].Next)
}

// LangGraph's test_falsy_return_from_task (debug stream, durability exit):
// the input checkpoint (step -1) schedules the entrypoint; the task call is
// a task of step 0 triggered by __pregel_push, whose result is its
// __return__ write (false, kept though falsy); resumed, the entrypoint runs
// again, the call reused (no task event for it), and step 0's checkpoint
// ends the run.
func TestEntrypointDebugStream(t *testing.T) {
	t.Parallel()
	falsy := graph.NewTask("falsy_task", func(ctx context.Context, _ struct{}) (bool, error) { return false, nil })
	g := graph.Entrypoint("graph", func(ctx context.Context, input any) (any, error) {
		if _, err := falsy.Call(ctx, struct{}{}).Result(); err != nil {
			return nil, err
		}
		_, err := graph.Interrupt(ctx, "test")
		return nil, err
	})
	h := newHarness(t, g)
	rec, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{"a": 5}`), StreamModes: []string{"debug"}, Durability: "exit"})
	require.NoError(t, err)
	type obj = map[string]any
	shape := func(rec *recorder) []any {
		var out []any
		for _, ev := range rec.of("debug") {
			e := ev.(obj)
			p := e["payload"].(obj)
			switch e["type"] {
			case "checkpoint":
				out = append(out, []any{"checkpoint", e["step"], p["next"], p["values"], len(p["tasks"].([]any))})
			case "task":
				out = append(out, []any{"task", e["step"], p["name"], p["triggers"], p["input"]})
			case "task_result":
				var intr []any
				for _, i := range p["interrupts"].([]any) {
					intr = append(intr, i.(obj)["value"])
				}
				out = append(out, []any{"task_result", e["step"], p["name"], p["result"], intr})
			}
		}
		return out
	}
	require.Equal(t, []any{
		[]any{"checkpoint", -1.0, []any{"graph"}, nil, 1},
		[]any{"task", 0.0, "graph", []any{"__start__"}, obj{"a": 5.0}},
		[]any{"task", 0.0, "falsy_task", []any{"__pregel_push"}, []any{[]any{obj{}}, obj{}}},
		[]any{"task_result", 0.0, "falsy_task", obj{"__return__": false}, []any(nil)},
		[]any{"task_result", 0.0, "graph", obj{}, []any{"test"}},
	}, shape(rec))

	rec, err = h.run(graphserver.GraphRun{Command: resume(`"123"`), StreamModes: []string{"debug"}, Durability: "exit"})
	require.NoError(t, err)
	require.Equal(t, []any{
		[]any{"checkpoint", -1.0, []any{"graph"}, nil, 1},
		[]any{"task", 0.0, "graph", []any{"__start__"}, obj{"a": 5.0}},
		[]any{"task_result", 0.0, "graph", obj{"__end__": nil}, []any(nil)},
		[]any{"checkpoint", 0.0, []any{}, nil, 0},
	}, shape(rec))
}

// The step owns the goroutines of the calls it makes: a call made from a
// goroutine its caller left running, after the step ended, fails instead
// of running unowned.
func TestTaskCallAfterStepFails(t *testing.T) {
	t.Parallel()
	noop := graph.NewTask("noop", func(ctx context.Context, in int) (int, error) { return in, nil })
	release := make(chan struct{})
	result := make(chan error, 1)
	g := graph.Entrypoint("leaky", func(ctx context.Context, input any) (any, error) {
		go func() {
			<-release
			_, err := noop.Call(ctx, 1).Result()
			result <- err
		}()
		return "done", nil
	})
	newHarness(t, g).input(`"x"`)
	close(release)
	select {
	case err := <-result:
		require.ErrorContains(t, err, "after the calling node's step ended")
	case <-time.After(10 * time.Second):
		t.Fatal("the late call did not return")
	}
}

// An update as the entrypoint node (update_state(as_node=...)) writes the
// thread's value and the value saved for its next run, as the entrypoint's
// writers (END and PREVIOUS) do in LangGraph.
func TestEntrypointUpdateStateAsNode(t *testing.T) {
	t.Parallel()
	acc := graph.Entrypoint("acc", func(ctx context.Context, input any) (any, error) {
		previous, _ := graph.Previous(ctx).(float64)
		return previous + input.(float64), nil
	})
	h := newHarness(t, acc)
	h.input(`1`)
	_, err := acc.UpdateState(context.Background(), &graphserver.UpdateStateRequest{
		Checkpoint: graphserver.Checkpoint{ThreadID: h.thread}, Checkpointer: h.cp, AsNode: "acc", Values: json.RawMessage(`10`),
	})
	require.NoError(t, err)
	require.Equal(t, 10.0, h.state().Values)
	h.input(`5`)
	require.Equal(t, 15.0, h.state().Values, "previous is the value written as the entrypoint")
}

// A task called from a node of a subgraph is a task of the subgraph's step:
// its result is saved in the subgraph's namespace and reused when the
// subgraph, paused by an interrupt, is resumed with the parent run.
func TestTaskInSubgraphReusedOnResume(t *testing.T) {
	t.Parallel()
	var lookups atomic.Int32
	lookup := graph.NewTask("lookup", func(ctx context.Context, city string) (string, error) {
		lookups.Add(1)
		return "sunny in " + city, nil
	})
	sub := graph.New(graph.Channels{"city": graph.LastValue(), "report": graph.LastValue()})
	sub.AddNode("report", func(ctx context.Context, s graph.State) (any, error) {
		w, err := lookup.Call(ctx, s.String("city")).Result()
		if err != nil {
			return nil, err
		}
		ok, err := graph.Interrupt(ctx, "publish "+w+"?")
		if err != nil {
			return nil, err
		}
		return graph.Update{"report": fmt.Sprintf("%s (published: %v)", w, ok)}, nil
	})
	sub.AddEdge(graph.Start, "report")
	parent := graph.New(graph.Channels{"city": graph.LastValue(), "report": graph.LastValue()})
	parent.AddNode("weather", compile(t, sub, graph.CompileOptions{Name: "weather"}))
	parent.AddEdge(graph.Start, "weather")
	h := newHarness(t, compile(t, parent, graph.CompileOptions{}))
	rec, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{"city": "Oslo"}`), StreamModes: []string{"updates"}, Subgraphs: true})
	require.NoError(t, err)
	require.Equal(t, []string{"weather"}, h.state().Next)
	var subUpdates []any
	for _, p := range rec.parts {
		if p.Event == "updates" && len(p.Namespace) == 1 && strings.HasPrefix(p.Namespace[0], "weather:") {
			var v any
			require.NoError(t, json.Unmarshal(p.Data, &v))
			subUpdates = append(subUpdates, v)
		}
	}
	require.Equal(t, map[string]any{"lookup": "sunny in Oslo"}, subUpdates[0], "the call streams in the subgraph's namespace")

	_, err = h.run(graphserver.GraphRun{Command: resume(`true`)})
	require.NoError(t, err)
	require.Equal(t, "sunny in Oslo (published: true)", h.state().Values.(map[string]any)["report"])
	require.Equal(t, int32(1), lookups.Load())
}

// A chat model streamed inside a task streams in messages-tuple mode under
// the task's name (LangGraph's StreamMessagesHandler tags a call's tokens
// with its langgraph_node).
func TestTaskStreamsMessages(t *testing.T) {
	t.Parallel()
	callModel := graph.NewTask("call_model", func(ctx context.Context, prompt string) (graph.Message, error) {
		s := graph.StreamMessage(ctx, "")
		for _, w := range strings.SplitAfter("hello there", " ") {
			s.Chunk(w)
		}
		return s.End(), nil
	})
	g := graph.Entrypoint("agent", func(ctx context.Context, input any) (any, error) {
		m, err := callModel.Call(ctx, input.(string)).Result()
		if err != nil {
			return nil, err
		}
		return m.Text(), nil
	})
	h := newHarness(t, g)
	rec := h.input(`"hi"`, "messages-tuple")
	var text string
	for _, ev := range rec.of("messages") {
		pair := ev.([]any)
		require.Equal(t, "call_model", pair[1].(map[string]any)["langgraph_node"])
		text += pair[0].(map[string]any)["content"].(string)
	}
	require.Equal(t, "hello there", text)
	require.Equal(t, "hello there", h.state().Values)
}

// A caller changing a result it got does not change the result saved for
// the call (with durability exit, saved when the run pauses): resumed, it
// reads the task's result as the task returned it.
func TestTaskResultIsACopy(t *testing.T) {
	t.Parallel()
	make3 := graph.NewTask("make", func(ctx context.Context, _ int) (map[string]any, error) {
		return map[string]any{"n": 3}, nil
	})
	g := graph.Entrypoint("graph", func(ctx context.Context, input any) (any, error) {
		m, err := make3.Call(ctx, 0).Result()
		if err != nil {
			return nil, err
		}
		seen := m["n"]
		m["n"] = "changed by the caller"
		if _, err := graph.Interrupt(ctx, "go on?"); err != nil {
			return nil, err
		}
		return seen, nil
	})
	h := newHarness(t, g)
	_, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`"x"`), Durability: "exit"})
	require.NoError(t, err)
	_, err = h.run(graphserver.GraphRun{Command: resume(`"yes"`), Durability: "exit"})
	require.NoError(t, err)
	require.Equal(t, 3.0, h.state().Values)
}

// Tasks paused in parallel: the entrypoint pauses at the first interrupt it
// waits for, and the run shows every call's interrupt, so that a resume
// answers each by id (a plain value cannot choose, as LangGraph's _first
// refuses it), each task getting its own answer.
func TestParallelTaskInterruptsResumedById(t *testing.T) {
	t.Parallel()
	approve := graph.NewTask("approve", func(ctx context.Context, tool string) (string, error) {
		ok, err := graph.Interrupt(ctx, "run "+tool+"?")
		if err != nil {
			return "", err
		}
		return tool + ": " + ok.(string), nil
	})
	g := graph.Entrypoint("agent", func(ctx context.Context, input any) (any, error) {
		var futures []*graph.Future[string]
		for _, tool := range []string{"search", "email"} {
			futures = append(futures, approve.Call(ctx, tool))
		}
		var out []string
		for _, f := range futures {
			s, err := f.Result()
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	})
	h := newHarness(t, g)
	rec := h.input(`"go"`, "updates")
	ups := updatesOf(rec)
	require.Len(t, ups, 1)
	intr := ups[0].(map[string]any)["__interrupt__"].([]any)
	require.Len(t, intr, 2)
	st := h.state()
	require.Len(t, st.Interrupts, 2)
	byValue := map[string]string{}
	for _, in := range st.Interrupts {
		byValue[in.Value.(string)] = in.ID
	}
	require.Len(t, byValue, 2)

	_, err := h.run(graphserver.GraphRun{Command: resume(`"yes"`)})
	require.ErrorContains(t, err, "When there are multiple pending interrupts, you must specify the interrupt id")
	_, err = h.run(graphserver.GraphRun{Command: resume(jsonOf(t, map[string]any{byValue["run search?"]: "yes", byValue["run email?"]: "no"}))})
	require.NoError(t, err)
	require.Equal(t, []any{"search: yes", "email: no"}, h.state().Values)
}

// A task with a cache policy runs once per argument: a later run sharing
// the store gets the cached result, streamed with __metadata__.cached
// (LangGraph's test_multiple_interrupts_functional_cache: @task(cache_policy=...)
// keyed by the call's arguments).
func TestTaskCache(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	double := graph.NewTask("double", func(ctx context.Context, x int) (int, error) {
		calls.Add(1)
		return 2 * x, nil
	}, graph.WithCache(graph.CachePolicy{}))
	g := graph.Entrypoint("graph", func(ctx context.Context, input any) (any, error) {
		return double.Call(ctx, int(input.(float64))).Result()
	})
	store := &memStore{}
	run := func(thread, input string) *recorder {
		rec := &recorder{}
		require.NoError(t, g.Run(context.Background(), &graphserver.GraphRun{ThreadID: thread, Input: json.RawMessage(input),
			StreamModes: []string{"updates"}, Checkpointer: graph.NewMemoryCheckpointer(), Store: store}, rec.emit))
		return rec
	}
	require.Equal(t, []any{map[string]any{"double": 6.0}, map[string]any{"graph": 6.0}}, run("t1", `3`).of("updates"))
	require.Equal(t, []any{
		map[string]any{"double": 6.0, "__metadata__": map[string]any{"cached": true}},
		map[string]any{"graph": 6.0},
	}, run("t2", `3`).of("updates"))
	require.Equal(t, int32(1), calls.Load())
	run("t3", `4`)
	require.Equal(t, int32(2), calls.Load(), "another argument runs it")
}

// A message a task or an entrypoint returns streams in messages-tuple mode
// under the task's (entrypoint's) name, once, as a node's output does (LangGraph pregel/_messages.py
// StreamMessagesHandler.on_chain_end runs on every task's output, the
// functional API's tasks included: a message, a list, or an object's
// values). A task's input is its arguments, not an object, so
// on_chain_start marks none of its messages seen: a message a task gets
// and returns streams under the task's name too.
func TestTaskReturnedMessagesStream(t *testing.T) {
	t.Parallel()
	withID := func(m graph.Message, id string) graph.Message { m.ID = id; return m }
	answer := graph.NewTask("answer", func(ctx context.Context, q string) (graph.Message, error) {
		return withID(graph.AI("answer to "+q), "a1"), nil
	})
	notes := graph.NewTask("notes", func(ctx context.Context, q string) (map[string]any, error) {
		return map[string]any{"list": []any{withID(graph.AI("note"), "n1")}, "n": 1}, nil
	})
	echo := graph.NewTask("echo", func(ctx context.Context, m graph.Message) (graph.Message, error) {
		return m, nil
	})
	g := graph.Entrypoint("agent", func(ctx context.Context, input any) (any, error) {
		m, err := answer.Call(ctx, input.(string)).Result()
		if err != nil {
			return nil, err
		}
		if _, err := notes.Call(ctx, "x").Result(); err != nil {
			return nil, err
		}
		if _, err := echo.Call(ctx, withID(graph.Human("given"), "h1")).Result(); err != nil {
			return nil, err
		}
		return withID(graph.AI("final: "+m.Text()), "f1"), nil
	})
	h := newHarness(t, g)
	rec := h.input(`"q"`, "messages-tuple")
	var got []string
	for _, ev := range rec.of("messages") {
		pair := ev.([]any)
		m := pair[0].(map[string]any)
		got = append(got, pair[1].(map[string]any)["langgraph_node"].(string)+":"+m["id"].(string)+":"+m["content"].(string))
	}
	require.Equal(t, []string{"answer:a1:answer to q", "notes:n1:note", "echo:h1:given", "agent:f1:final: answer to q"}, got)
}
