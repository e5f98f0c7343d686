package sqlite_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/sqlite"
)

// TestLatestCheckpointCache runs a thread through the Server on a file
// opened Exclusive, with each hit of the latest-checkpoint cache compared
// with a read of storage (a difference fails the run's creation): runs
// appending to message and list channels (delta blobs), a state update, an
// interrupted run and its resume (pending writes), prune keep_latest (the
// latest checkpoint rewritten under its id) and a thread copied. The state
// must come out as if every read went to storage, and the cache must have
// answered the reads of runs following runs.
func TestLatestCheckpointCache(t *testing.T) {
	g := graph.New(graph.Channels{"messages": graph.AddMessages(), "log": graph.Append(), "n": graph.LastValue(), "ask": graph.LastValue()})
	g.AddNode("reply", func(ctx context.Context, s graph.State) (any, error) {
		if ask, _ := s["ask"].(bool); ask {
			answer, err := graph.Interrupt(ctx, "go on?")
			if err != nil {
				return nil, err
			}
			return graph.Update{"log": answer, "ask": false}, nil
		}
		n, _ := s["n"].(float64)
		return graph.Update{"messages": map[string]any{"role": "ai", "content": "re"}, "log": []any{"a", "b"}, "n": n + 1}, nil
	})
	g.AddEdge(graph.Start, "reply")
	chat, err := g.Compile(graph.CompileOptions{})
	require.NoError(t, err)
	db, srv := startExclusive(t, map[string]graphserver.Graph{"chat": chat})
	sqlite.VerifyLatestCache(db)
	ctx := t.Context()
	th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	run := func(input string) {
		t.Helper()
		_, err := srv.WaitRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "chat", Input: json.RawMessage(input)})
		require.NoError(t, err)
	}
	state := func(threadID string) map[string]any {
		t.Helper()
		st, err := srv.GetThreadState(ctx, threadID, graphserver.ThreadStateQuery{})
		require.NoError(t, err)
		b, err := json.Marshal(st.Values)
		require.NoError(t, err)
		var v map[string]any
		require.NoError(t, json.Unmarshal(b, &v))
		return v
	}
	hi := `{"messages":[{"role":"user","content":"hi"}]}`

	for range 5 {
		run(hi)
	}
	hits := sqlite.LatestCacheHits(db)
	require.GreaterOrEqual(t, hits, int64(4), "the runs after the first read the cache")
	v := state(th.ThreadID)
	require.Len(t, v["messages"], 10)
	require.Len(t, v["log"], 10)
	require.InDelta(t, 5, v["n"], 0)

	_, err = srv.UpdateThreadState(ctx, th.ThreadID, graphserver.ThreadStateUpdate{Values: json.RawMessage(`{"n":100,"log":["u"]}`), AsNode: "reply"})
	require.NoError(t, err)
	run(hi)
	v = state(th.ThreadID)
	require.InDelta(t, 101, v["n"], 0)
	require.Len(t, v["log"], 13)

	run(`{"ask":true}`) // interrupted: pending writes at the latest checkpoint
	_, err = srv.WaitRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "chat", Command: &graphserver.RunCommand{Resume: json.RawMessage(`"yes"`)}})
	require.NoError(t, err)
	v = state(th.ThreadID)
	require.Equal(t, "yes", v["log"].([]any)[13])
	require.Equal(t, false, v["ask"])
	run(hi)

	_, err = srv.PruneThreads(ctx, graphserver.ThreadPrune{ThreadIDs: []string{th.ThreadID}, Strategy: graphserver.PruneKeepLatest})
	require.NoError(t, err)
	run(hi)
	before := sqlite.LatestCacheHits(db)
	run(hi)
	require.Equal(t, before+1, sqlite.LatestCacheHits(db), "a run after a run reads the cache again after the prune")
	v = state(th.ThreadID)
	require.InDelta(t, 104, v["n"], 0)
	require.Len(t, v["messages"], 18)
	require.Len(t, v["log"], 20)

	cp, err := srv.CopyThread(ctx, th.ThreadID)
	require.NoError(t, err)
	_, err = srv.WaitRun(ctx, cp.ThreadID, graphserver.RunCreate{AssistantID: "chat", Input: json.RawMessage(hi)})
	require.NoError(t, err)
	require.InDelta(t, 105, state(cp.ThreadID)["n"], 0)

	// History and state agree on the latest checkpoint.
	hist, err := srv.GetThreadHistory(ctx, th.ThreadID, graphserver.ThreadHistoryQuery{Limit: 1})
	require.NoError(t, err)
	st, err := srv.GetThreadState(ctx, th.ThreadID, graphserver.ThreadStateQuery{})
	require.NoError(t, err)
	require.Equal(t, st.CheckpointID, hist[0].CheckpointID)
}
