package httpapi_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
)

// Over HTTP, a node cached with a CachePolicy is served from the server's
// store on the next run (another thread): its updates event carries
// "__metadata__": {"cached": true}, as LangGraph's updates stream; and two
// tasks interrupting in one step stream one __interrupt__ updates event
// each, then one values event with both (the run output).
func TestRunsEngineCacheAndInterrupts(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	g := graph.New(graph.Channels{"x": graph.LastValue(), "y": graph.LastValue()})
	g.AddNode("square", func(ctx context.Context, s graph.State) (any, error) {
		calls.Add(1)
		return graph.Update{"y": s.Number("x") * s.Number("x")}, nil
	}, graph.WithCache(graph.CachePolicy{}))
	g.AddEdge(graph.Start, "square")
	cached, err := g.Compile(graph.CompileOptions{Name: "cached"})
	require.NoError(t, err)

	g = graph.New(graph.Channels{"log": graph.Append()})
	for _, n := range []string{"a", "b"} {
		g.AddNode(n, func(ctx context.Context, s graph.State) (any, error) {
			if _, err := graph.Interrupt(ctx, n+"?"); err != nil {
				return nil, err
			}
			return graph.Update{"log": n}, nil
		})
		g.AddEdge(graph.Start, n)
	}
	asks, err := g.Compile(graph.CompileOptions{Name: "asks"})
	require.NoError(t, err)

	e := newRunEnv(t, runEnvOptions{server: func(o *graphserver.Options) {
		o.Graphs["cached"] = cached
		o.Graphs["asks"] = asks
	}})
	stream := func(tid, body string) []sseEvent {
		resp := e.do(t, t.Context(), "POST", "/threads/"+tid+"/runs/stream", body)
		defer resp.Body.Close()
		return newSSEReader(resp.Body).all()
	}
	updates := func(evs []sseEvent) []map[string]any {
		var out []map[string]any
		for _, ev := range evs {
			if ev.Event == "updates" {
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(ev.Data), &m))
				out = append(out, m)
			}
		}
		return out
	}
	body := `{"assistant_id":"cached","input":{"x":4},"stream_mode":["updates"]}`
	require.Equal(t, []map[string]any{{"square": map[string]any{"y": 16.0}}}, updates(stream(e.thread(t), body)))
	require.Equal(t, []map[string]any{{"square": map[string]any{"y": 16.0}, "__metadata__": map[string]any{"cached": true}}}, updates(stream(e.thread(t), body)))
	require.Equal(t, int32(1), calls.Load())

	tid := e.thread(t)
	evs := stream(tid, `{"assistant_id":"asks","input":{},"stream_mode":["updates","values"]}`)
	var asked []string
	for _, u := range updates(evs) {
		l, ok := u["__interrupt__"].([]any)
		require.True(t, ok, "%v", u)
		require.Len(t, l, 1)
		asked = append(asked, l[0].(map[string]any)["value"].(string))
	}
	require.Equal(t, []string{"a?", "b?"}, asked)
	last := evs[len(evs)-1]
	require.Equal(t, "values", last.Event)
	var out map[string][]graphserver.Interrupt
	require.NoError(t, json.Unmarshal([]byte(last.Data), &out))
	require.Len(t, out["__interrupt__"], 2)
}
