package client_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/client"
)

// TestThreads drives the thread CRUD, search, copy and prune operations.
func TestThreads(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := t.Context()
	c := e.c

	id := uuid.NewString()
	th, err := c.Threads.Create(ctx, graphserver.ThreadCreate{ThreadID: id, Metadata: graphserver.Metadata{"user": "ann"}, TTL: &graphserver.ThreadTTL{Minutes: 60}})
	require.NoError(t, err)
	require.Equal(t, id, th.ThreadID)
	require.Equal(t, graphserver.ThreadIdle, th.Status)
	_, err = c.Threads.Create(ctx, graphserver.ThreadCreate{ThreadID: id})
	requireCode(t, err, graphserver.ECONFLICT)
	_, err = c.Threads.Create(ctx, graphserver.ThreadCreate{ThreadID: "not-a-uuid"})
	requireCode(t, err, graphserver.EINVALID)

	got, err := c.Threads.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "ann", got.Metadata["user"])
	require.Nil(t, got.TTL)
	got, err = c.Threads.Get(ctx, id, graphserver.ThreadIncludeTTL)
	require.NoError(t, err)
	require.NotNil(t, got.TTL)
	require.Equal(t, 60.0, got.TTL.TTLMinutes)
	_, err = c.Threads.Get(ctx, uuid.NewString())
	requireCode(t, err, graphserver.ENOTFOUND)

	up, err := c.Threads.Update(ctx, id, graphserver.ThreadPatch{Metadata: graphserver.Metadata{"n": 1.0}})
	require.NoError(t, err)
	require.Equal(t, graphserver.Metadata{"user": "ann", "n": 1.0}, up.Metadata)

	other, err := c.Threads.Create(ctx, graphserver.ThreadCreate{Metadata: graphserver.Metadata{"user": "bob"}})
	require.NoError(t, err)
	page, err := c.Threads.Search(ctx, graphserver.ThreadSearch{Metadata: graphserver.Metadata{"user": "ann"}})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, id, page.Items[0].ThreadID)
	page, err = c.Threads.Search(ctx, graphserver.ThreadSearch{Limit: 1, SortBy: "created_at", SortOrder: "asc"})
	require.NoError(t, err)
	require.Equal(t, id, page.Items[0].ThreadID)
	require.NotNil(t, page.Next)
	page, err = c.Threads.Search(ctx, graphserver.ThreadSearch{IDs: []string{other.ThreadID}, Select: []string{"thread_id"}})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Empty(t, page.Items[0].Status, "select projects the fields")
	n, err := c.Threads.Count(ctx, graphserver.ThreadSearch{Status: graphserver.ThreadIdle})
	require.NoError(t, err)
	require.Equal(t, 2, n)

	// a run gives the thread state to copy
	_, err = c.Runs.Wait(ctx, id, graphserver.RunCreate{AssistantID: "chat", Input: raw(t, map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}})})
	require.NoError(t, err)
	cp, err := c.Threads.Copy(ctx, id)
	require.NoError(t, err)
	require.NotEqual(t, id, cp.ThreadID)
	st, err := c.Threads.GetState(ctx, cp.ThreadID, graphserver.ThreadStateQuery{})
	require.NoError(t, err)
	require.Equal(t, 1.0, st.Values.(map[string]any)["count"])
	_, err = c.Threads.Copy(ctx, uuid.NewString())
	requireCode(t, err, graphserver.ECONFLICT)

	pruned, err := c.Threads.Prune(ctx, graphserver.ThreadPrune{ThreadIDs: []string{cp.ThreadID, other.ThreadID}})
	require.NoError(t, err)
	require.Equal(t, 2, pruned)
	pruned, err = c.Threads.Prune(ctx, graphserver.ThreadPrune{ThreadIDs: []string{id}, Strategy: graphserver.PruneKeepLatest})
	require.NoError(t, err)
	require.Equal(t, 1, pruned)

	require.NoError(t, c.Threads.Delete(ctx, id))
	requireCode(t, c.Threads.Delete(ctx, id), graphserver.ENOTFOUND)
}

// TestThreadState drives state, state at a checkpoint, state updates
// (including a fork) and history.
func TestThreadState(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := t.Context()
	c := e.c
	th, err := c.Threads.Create(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	tid := th.ThreadID

	empty, err := c.Threads.GetState(ctx, tid, graphserver.ThreadStateQuery{})
	require.NoError(t, err)
	require.Nil(t, empty.Checkpoint)

	for range 2 {
		_, err = c.Runs.Wait(ctx, tid, graphserver.RunCreate{AssistantID: "chat", Input: raw(t, map[string]any{})})
		require.NoError(t, err)
	}
	st, err := c.Threads.GetState(ctx, tid, graphserver.ThreadStateQuery{})
	require.NoError(t, err)
	require.Equal(t, 2.0, st.Values.(map[string]any)["count"])
	require.NotNil(t, st.Checkpoint)
	require.Empty(t, st.Next)

	hist, err := c.Threads.GetHistory(ctx, tid, graphserver.ThreadHistoryQuery{})
	require.NoError(t, err)
	require.Len(t, hist, 6) // input, loop and final checkpoints of two runs
	require.Equal(t, *st.Checkpoint.CheckpointID, *hist[0].Checkpoint.CheckpointID)
	limited, err := c.Threads.GetHistory(ctx, tid, graphserver.ThreadHistoryQuery{Limit: 2, Before: *hist[1].Checkpoint.CheckpointID})
	require.NoError(t, err)
	require.Len(t, limited, 2)
	require.Equal(t, *hist[2].Checkpoint.CheckpointID, *limited[0].Checkpoint.CheckpointID)
	bySource, err := c.Threads.GetHistory(ctx, tid, graphserver.ThreadHistoryQuery{Metadata: graphserver.Metadata{"source": "input"}})
	require.NoError(t, err)
	require.Len(t, bySource, 2)

	// state at an older checkpoint goes through POST /state/checkpoint
	old, err := c.Threads.GetState(ctx, tid, graphserver.ThreadStateQuery{Checkpoint: graphserver.Checkpoint{CheckpointID: hist[3].Checkpoint.CheckpointID}})
	require.NoError(t, err)
	require.Equal(t, 1.0, old.Values.(map[string]any)["count"])

	upd, err := c.Threads.UpdateState(ctx, tid, graphserver.ThreadStateUpdate{Values: json.RawMessage(`{"count": 10}`), AsNode: "agent"})
	require.NoError(t, err)
	require.NotNil(t, upd.Checkpoint)
	require.Equal(t, tid, upd.Checkpoint.ThreadID)
	st, err = c.Threads.GetState(ctx, tid, graphserver.ThreadStateQuery{})
	require.NoError(t, err)
	require.Equal(t, 10.0, st.Values.(map[string]any)["count"])
	require.Equal(t, "update", st.Metadata["source"])

	// a fork from the first run's final checkpoint
	fork, err := c.Threads.UpdateState(ctx, tid, graphserver.ThreadStateUpdate{
		Values: json.RawMessage(`{"count": 100}`), AsNode: "agent",
		Checkpoint: &graphserver.Checkpoint{CheckpointID: hist[3].Checkpoint.CheckpointID},
	})
	require.NoError(t, err)
	forked, err := c.Threads.GetState(ctx, tid, graphserver.ThreadStateQuery{Checkpoint: *fork.Checkpoint})
	require.NoError(t, err)
	require.Equal(t, 100.0, forked.Values.(map[string]any)["count"])
	require.Equal(t, *hist[3].Checkpoint.CheckpointID, *forked.ParentCheckpoint.CheckpointID)

	_, err = c.Threads.UpdateState(ctx, tid, graphserver.ThreadStateUpdate{Values: json.RawMessage(`{"count": 1}`), AsNode: "nope"})
	require.Error(t, err)
	_, err = c.Threads.GetState(ctx, uuid.NewString(), graphserver.ThreadStateQuery{})
	requireCode(t, err, graphserver.ENOTFOUND)
	_, err = c.Threads.GetHistory(ctx, uuid.NewString(), graphserver.ThreadHistoryQuery{})
	requireCode(t, err, graphserver.ENOTFOUND)
}

// TestThreadStateSubgraphs reads a subgraph's state through its namespace
// and with subgraphs expanded.
func TestThreadStateSubgraphs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{graphs: map[string]graphserver.Graph{"nested": nestedGraph(t)}})
	ctx := t.Context()
	th, err := e.c.Threads.Create(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	out, err := e.c.Runs.Wait(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "nested", Input: raw(t, map[string]any{"question": "ok?"})})
	require.NoError(t, err)
	require.Contains(t, string(out), "__interrupt__")

	st, err := e.c.Threads.GetState(ctx, th.ThreadID, graphserver.ThreadStateQuery{Subgraphs: true})
	require.NoError(t, err)
	require.Len(t, st.Tasks, 1)
	require.NotNil(t, st.Tasks[0].State, "subgraphs=true expands the task's state")
	ns := st.Tasks[0].State.Checkpoint.CheckpointNS
	require.NotEmpty(t, ns)

	sub, err := e.c.Threads.GetState(ctx, th.ThreadID, graphserver.ThreadStateQuery{Checkpoint: graphserver.Checkpoint{CheckpointNS: ns}})
	require.NoError(t, err)
	require.Equal(t, []string{"ask"}, sub.Next)
	subHist, err := e.c.Threads.GetHistory(ctx, th.ThreadID, graphserver.ThreadHistoryQuery{Checkpoint: graphserver.Checkpoint{CheckpointNS: ns}})
	require.NoError(t, err)
	require.NotEmpty(t, subHist)
	require.Equal(t, ns, subHist[0].Checkpoint.CheckpointNS)
}

// TestThreadJoinStreamAndPatchState: the thread stream replays a resumable
// run's events up to its run_done marker; PATCH state merges metadata into
// the latest checkpoint.
func TestThreadJoinStreamAndPatchState(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := t.Context()
	th, err := e.c.Threads.Create(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	run, err := e.c.Runs.Create(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "echo", Input: raw(t, map[string]any{"v": 1}), StreamResumable: true})
	require.NoError(t, err)
	_, err = e.c.Runs.Join(ctx, th.ThreadID, run.RunID)
	require.NoError(t, err)

	var got []string
	for ev, err := range e.c.Threads.JoinStream(ctx, th.ThreadID, client.ThreadStreamOptions{LastEventID: "-"}) {
		require.NoError(t, err)
		got = append(got, ev.Event)
		if ev.Event == "metadata" && object(t, ev.Data)["status"] == "run_done" {
			break
		}
	}
	require.Equal(t, "metadata", got[0])
	require.Contains(t, got, "values")
	require.Equal(t, "metadata", got[len(got)-1])

	require.NoError(t, e.c.Threads.PatchState(ctx, th.ThreadID, graphserver.Metadata{"reviewed": true}))
	st, err := e.c.Threads.GetState(ctx, th.ThreadID, graphserver.ThreadStateQuery{})
	require.NoError(t, err)
	require.Equal(t, true, st.Metadata["reviewed"])
}

// TestThreadCreateSupersteps: a thread created with state updates.
func TestThreadCreateSupersteps(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	th, err := e.c.Threads.Create(t.Context(), graphserver.ThreadCreate{GraphID: "chat", Supersteps: []graphserver.Superstep{
		{Updates: []graphserver.StateUpdate{{Values: json.RawMessage(`{"count": 3}`), AsNode: "agent"}}},
	}})
	require.NoError(t, err)
	require.Equal(t, "chat", th.Metadata["graph_id"])
	st, err := e.c.Threads.GetState(t.Context(), th.ThreadID, graphserver.ThreadStateQuery{})
	require.NoError(t, err)
	require.Equal(t, 3.0, st.Values.(map[string]any)["count"])
}

// TestThreadsSearchSkipsTemporary: through the Go client, a stateless
// run's temporary thread (on_completion delete, the default) is read by id
// but not listed by thread search and count; a kept one is listed.
func TestThreadsSearchSkipsTemporary(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := t.Context()
	c := e.c
	for _, tc := range []struct {
		onCompletion string
		listed       bool
	}{{"", false}, {graphserver.OnCompletionKeep, true}} {
		run, err := c.Runs.Create(ctx, "", graphserver.RunCreate{AssistantID: "echo", AfterSeconds: 3600, OnCompletion: tc.onCompletion})
		require.NoError(t, err)
		_, err = c.Threads.Get(ctx, run.ThreadID)
		require.NoError(t, err)
		s := graphserver.ThreadSearch{IDs: []string{run.ThreadID}}
		page, err := c.Threads.Search(ctx, s)
		require.NoError(t, err)
		n, err := c.Threads.Count(ctx, s)
		require.NoError(t, err)
		if tc.listed {
			require.Len(t, page.Items, 1, "%q", tc.onCompletion)
			require.Equal(t, 1, n)
		} else {
			require.Empty(t, page.Items, "%q", tc.onCompletion)
			require.Equal(t, 0, n)
		}
	}
}
