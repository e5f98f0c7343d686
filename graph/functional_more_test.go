package graph_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/stretchr/testify/require"
)

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
