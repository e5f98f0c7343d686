package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/stretchr/testify/require"
)

// flaky fails its first failures attempts with err, then writes "ok".
func flaky(t *testing.T, failures int32, err error, policies ...graph.RetryPolicy) (*harness, *atomic.Int32) {
	var attempts atomic.Int32
	g := graph.New(graph.Channels{"out": graph.LastValue(), "log": graph.Append()})
	g.AddNode("call", func(ctx context.Context, s graph.State) (any, error) {
		n := attempts.Add(1)
		if n <= failures {
			return graph.Update{"log": "attempt"}, err
		}
		return graph.Update{"out": "ok", "log": "done"}, nil
	}, graph.WithRetry(policies...))
	g.AddEdge(graph.Start, "call")
	return newHarness(t, compile(t, g, graph.CompileOptions{})), &attempts
}

var fast = graph.RetryPolicy{InitialInterval: time.Millisecond, MaxInterval: 5 * time.Millisecond, NoJitter: true}

// A node with a RetryPolicy runs again inside its superstep when it fails
// with an error the policy retries, until it succeeds or runs out of
// attempts; the writes of failed attempts are dropped (LangGraph
// pregel/_retry.py run_with_retry, types.py RetryPolicy and
// default_retry_on).
func TestNodeRetryPolicy(t *testing.T) {
	t.Parallel()
	flakyErr := &graph.NodeError{Name: "ConnectionError", Message: "upstream went away"}

	t.Run("succeeds on the third attempt", func(t *testing.T) {
		t.Parallel()
		h, attempts := flaky(t, 2, flakyErr, fast)
		rec := h.input(`{}`, "tasks")
		require.Equal(t, int32(3), attempts.Load())
		st := h.state()
		require.Equal(t, map[string]any{"out": "ok", "log": []any{"done"}}, st.Values)
		var results int
		for _, p := range rec.of("tasks") {
			if _, ok := p.(map[string]any)["result"]; ok {
				results++
			}
		}
		require.Equal(t, 1, results, "one task, one result")
	})
	t.Run("gives up after MaxAttempts", func(t *testing.T) {
		t.Parallel()
		p := fast
		p.MaxAttempts = 2
		h, attempts := flaky(t, 5, flakyErr, p)
		_, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{}`)})
		require.Equal(t, "ConnectionError", graphserver.ErrorName(err))
		require.Equal(t, int32(2), attempts.Load())
		require.Equal(t, "ConnectionError('upstream went away')", *h.state().Tasks[0].Error)
	})
	t.Run("the default does not retry programming errors", func(t *testing.T) {
		t.Parallel()
		h, attempts := flaky(t, 5, &graph.NodeError{Name: "ValueError", Message: "bad"}, fast)
		_, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{}`)})
		require.Error(t, err)
		require.Equal(t, int32(1), attempts.Load())
		require.False(t, graph.DefaultRetryOn(context.Canceled))
		require.True(t, graph.DefaultRetryOn(errors.New("timeout")))
	})
	t.Run("RetryOn chooses the policy", func(t *testing.T) {
		t.Parallel()
		never := graph.RetryPolicy{RetryOn: func(error) bool { return false }}
		onlyValue := fast
		onlyValue.RetryOn = func(err error) bool { return graphserver.ErrorName(err) == "ValueError" }
		h, attempts := flaky(t, 1, &graph.NodeError{Name: "ValueError", Message: "bad"}, never, onlyValue)
		h.input(`{}`)
		require.Equal(t, int32(2), attempts.Load())
	})
	t.Run("no policy, no retry", func(t *testing.T) {
		t.Parallel()
		h, attempts := flaky(t, 1, flakyErr)
		_, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{}`)})
		require.Error(t, err)
		require.Equal(t, int32(1), attempts.Load())
	})
	t.Run("the end of the run stops the retries", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		var attempts atomic.Int32
		g := graph.New(graph.Channels{"out": graph.LastValue()})
		g.AddNode("call", func(context.Context, graph.State) (any, error) {
			if attempts.Add(1) == 1 {
				cancel()
			}
			return nil, errors.New("down")
		}, graph.WithRetry(graph.RetryPolicy{InitialInterval: time.Hour}))
		g.AddEdge(graph.Start, "call")
		c := compile(t, g, graph.CompileOptions{})
		err := c.Run(ctx, &graphserver.GraphRun{ThreadID: "t", Input: json.RawMessage(`{}`), Checkpointer: graph.NewMemoryCheckpointer()}, nil)
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, int32(1), attempts.Load())
	})
}

// Managed values RemainingSteps and IsLastStep give a node the supersteps
// its run has left: a ReAct loop that would never end answers instead of
// hitting the recursion limit (LangGraph managed/is_last_step.py:
// RemainingSteps = stop - step, IsLastStep = step == stop - 1).
func TestRemainingSteps(t *testing.T) {
	t.Parallel()
	var seen []float64
	var last []bool
	g := graph.New(graph.Channels{
		"messages":        graph.AddMessages(),
		"remaining_steps": graph.RemainingSteps(),
		"is_last_step":    graph.IsLastStep(),
	})
	g.AddNode("agent", func(ctx context.Context, s graph.State) (any, error) {
		seen = append(seen, s.Number("remaining_steps"))
		last = append(last, s.Bool("is_last_step"))
		if s.Number("remaining_steps") < 2 {
			return graph.Update{"messages": graph.AI("Sorry, need more steps to process this request.")}, nil
		}
		m := graph.AI("")
		m.ToolCalls = []graph.ToolCall{{Name: "search", ID: "call", Args: map[string]any{}}}
		return graph.Update{"messages": m}, nil
	})
	g.AddNode("tools", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"messages": graph.Tool("nothing found", "call")}, nil
	})
	g.AddEdge(graph.Start, "agent").AddEdge("tools", "agent")
	g.AddConditionalEdges("agent", func(ctx context.Context, s graph.State) any {
		msgs := s.Messages("messages")
		if len(msgs[len(msgs)-1].ToolCalls) > 0 {
			return "tools"
		}
		return graph.End
	}, "tools", graph.End)
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	_, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{"messages": ["loop forever"]}`), Config: graphserver.Object{"recursion_limit": 6.0}})
	require.NoError(t, err, "the agent stopped before the recursion limit")
	// steps 1, 3, 5 with stop = 6
	require.Equal(t, []float64{5, 3, 1}, seen)
	require.Equal(t, []bool{false, false, true}, last)
	st := h.state()
	msgs := contents(st, "messages")
	require.Equal(t, "Sorry, need more steps to process this request.", msgs[len(msgs)-1])
	_, stored := st.Values.(map[string]any)["remaining_steps"]
	require.False(t, stored, "a managed value is not stored")
}
