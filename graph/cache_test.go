package graph_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/stretchr/testify/require"
)

// cachedGraph squares "x" in an expensive node cached under policy, then
// appends to "log" in a node that always runs.
func cachedGraph(t *testing.T, calls *atomic.Int32, policy graph.CachePolicy) *graph.Compiled {
	g := graph.New(graph.Channels{"x": graph.LastValue(), "y": graph.LastValue(), "log": graph.Append()})
	g.AddNode("square", func(ctx context.Context, s graph.State) (any, error) {
		calls.Add(1)
		return graph.Update{"y": s.Number("x") * s.Number("x")}, nil
	}, graph.WithCache(policy), graph.WithInput(graph.Channels{"x": nil}))
	g.AddNode("after", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"log": s["y"]}, nil
	})
	g.AddEdge(graph.Start, "square")
	g.AddEdge("square", "after")
	return compile(t, g, graph.CompileOptions{Name: "cached"})
}

// A cached node runs once per input: a later run (any thread sharing the
// store) with the same input gets its writes from the cache, edges
// included, and streams its update with __metadata__.cached; another input
// runs it; an expired entry runs it again (LangGraph CachePolicy: key_func
// over the node's input, ttl; _loop.match_cached_writes, output_writes
// with cached=True, map_output_updates adding {"__metadata__": {"cached":
// True}}).
func TestCachePolicy(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	store := &memStore{}
	g := cachedGraph(t, &calls, graph.CachePolicy{})
	run := func(thread, input string) *recorder {
		t.Helper()
		rec := &recorder{}
		err := g.Run(context.Background(), &graphserver.GraphRun{ThreadID: thread, RunID: uuid.NewString(), Input: json.RawMessage(input),
			StreamModes: []string{"updates", "tasks"}, Checkpointer: graph.NewMemoryCheckpointer(), Store: store}, rec.emit)
		require.NoError(t, err)
		return rec
	}
	first := run("t1", `{"x": 3, "log": ["a"]}`)
	require.Equal(t, int32(1), calls.Load())
	require.Equal(t, map[string]any{"square": map[string]any{"y": 9.0}}, first.of("updates")[0])

	second := run("t2", `{"x": 3, "log": ["other keys do not count"]}`)
	require.Equal(t, int32(1), calls.Load(), "same input: from the cache")
	require.Equal(t, []any{
		map[string]any{"square": map[string]any{"y": 9.0}, "__metadata__": map[string]any{"cached": true}},
		map[string]any{"after": map[string]any{"log": 9.0}},
	}, second.of("updates"), "the cached writes include the edge to after")
	for _, ev := range second.of("tasks") {
		require.NotEqual(t, "square", ev.(map[string]any)["name"], "no tasks events for a cached task")
	}

	run("t3", `{"x": 4}`)
	require.Equal(t, int32(2), calls.Load(), "another input runs the node")

	// without a store there is no cache
	_, err := g.Invoke(context.Background(), map[string]any{"x": 3}, nil)
	require.NoError(t, err)
	require.Equal(t, int32(3), calls.Load())

	// a key function and a TTL
	var calls2 atomic.Int32
	store = &memStore{}
	g = cachedGraph(t, &calls2, graph.CachePolicy{Key: func(in any) string { return "constant" }, TTL: time.Millisecond})
	run("t4", `{"x": 1}`)
	time.Sleep(5 * time.Millisecond)
	run("t5", `{"x": 2}`)
	require.Equal(t, int32(2), calls2.Load(), "expired")
	var calls3 atomic.Int32
	store = &memStore{}
	g = cachedGraph(t, &calls3, graph.CachePolicy{Key: func(in any) string { return "constant" }, TTL: time.Hour})
	run("t6", `{"x": 1}`)
	run("t7", `{"x": 2}`)
	require.Equal(t, int32(1), calls3.Load(), "the key function decides")
}

// Served by a graphserver, a node's cache lives in the server's store: a
// run on another thread reuses the writes a first run cached.
func TestCachePolicyThroughServer(t *testing.T) {
	t.Parallel()
	db, _ := openSQLite(t)
	var calls atomic.Int32
	srv, err := graphserver.New(graphserver.Options{Storage: db, Graphs: map[string]graphserver.Graph{"cached": cachedGraph(t, &calls, graph.CachePolicy{TTL: time.Hour})}})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(func() { _ = srv.Close(ctx) })
	for range 2 {
		th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{})
		require.NoError(t, err)
		out, err := srv.WaitRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "cached", Input: json.RawMessage(`{"x": 5}`)})
		require.NoError(t, err)
		require.JSONEq(t, `{"x": 5, "y": 25, "log": [25]}`, string(out))
	}
	require.Equal(t, int32(1), calls.Load())
	items, err := srv.SearchItems(ctx, graphserver.ItemSearchRequest{NamespacePrefix: []string{"__pregel_ns_writes"}})
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, []string{"__pregel_ns_writes", "cached", "square"}, items[0].Namespace)
}
