package storagetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// exerciseThreads checks driver.ThreadStorage.
func exerciseThreads(t *testing.T, open func(t *testing.T) driver.Storage) {
	t.Helper()

	type bundle struct {
		st  driver.Storage
		ctx context.Context
	}
	setup := func(t *testing.T) *bundle {
		t.Helper()
		return &bundle{st: open(t), ctx: t.Context()}
	}
	owner := graphserver.Filter{"owner": "ann"}
	other := graphserver.Filter{"owner": "bob"}

	t.Run("CreateGet", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		exp := at(600)
		in := &graphserver.Thread{
			ThreadID: "t1", CreatedAt: at(1), UpdatedAt: at(2), StateUpdatedAt: at(3),
			Metadata: graphserver.Metadata{"owner": "ann", "graph_id": "g"},
			Config:   graphserver.Object{"configurable": map[string]any{"k": "v"}},
			Context:  graphserver.Object{"c": 1.0},
			Status:   graphserver.ThreadInterrupted,
			Values:   json.RawMessage(`{"messages":[{"id":"m1"}]}`),
			Interrupts: map[string][]graphserver.Interrupt{
				"task1": {{Value: "ask", ID: "i1"}},
			},
			Error: json.RawMessage(`{"error":"E","message":"m"}`),
			TTL:   &graphserver.ThreadTTLInfo{Strategy: graphserver.PruneKeepLatest, TTLMinutes: 10, ExpiresAt: &exp},
		}
		got, err := b.st.CreateThread(b.ctx, in, graphserver.IfExistsRaise, nil)
		require.NoError(t, err)
		check := func(got *graphserver.Thread) {
			t.Helper()
			require.Equal(t, "t1", got.ThreadID)
			require.Equal(t, at(1), got.CreatedAt)
			require.Equal(t, at(2), got.UpdatedAt)
			require.Equal(t, at(3), got.StateUpdatedAt)
			require.Equal(t, in.Metadata, got.Metadata)
			require.Equal(t, graphserver.Object{"configurable": map[string]any{"k": "v"}}, got.Config)
			require.Equal(t, graphserver.Object{"c": 1.0}, got.Context)
			require.Equal(t, graphserver.ThreadInterrupted, got.Status)
			require.JSONEq(t, `{"messages":[{"id":"m1"}]}`, string(got.Values))
			require.Equal(t, in.Interrupts, got.Interrupts)
			require.JSONEq(t, `{"error":"E","message":"m"}`, string(got.Error))
			require.Equal(t, &graphserver.ThreadTTLInfo{Strategy: graphserver.PruneKeepLatest, TTLMinutes: 10, ExpiresAt: &exp}, got.TTL)
		}
		check(got)
		got, err = b.st.GetThread(b.ctx, "t1", owner)
		require.NoError(t, err)
		check(got)

		// A minimal thread: null values, empty objects, no TTL.
		got = createThread(t, b.st, threadOpts{ID: "t2"})
		require.Nil(t, got.Values)
		require.Nil(t, got.Error)
		require.Nil(t, got.TTL)
		require.Equal(t, graphserver.Metadata{}, got.Metadata)
		require.Equal(t, graphserver.Object{}, got.Config)
		require.Empty(t, got.Interrupts)
		require.Equal(t, graphserver.ThreadIdle, got.Status)
		body, err := json.Marshal(got)
		require.NoError(t, err)
		require.Contains(t, string(body), `"values":null`)
	})

	t.Run("CreateConflict", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createThread(t, b.st, threadOpts{ID: "t1", Metadata: graphserver.Metadata{"owner": "ann", "n": 1.0}})
		dup := &graphserver.Thread{ThreadID: "t1", Metadata: graphserver.Metadata{"n": 2.0}, Status: "idle", CreatedAt: at(9), UpdatedAt: at(9), StateUpdatedAt: at(9)}
		_, err := b.st.CreateThread(b.ctx, dup, graphserver.IfExistsRaise, nil)
		requireCode(t, err, graphserver.ECONFLICT)
		got, err := b.st.CreateThread(b.ctx, dup, graphserver.IfExistsDoNothing, owner)
		require.NoError(t, err)
		require.Equal(t, 1.0, got.Metadata["n"])
		require.Equal(t, t0, got.CreatedAt)
		_, err = b.st.CreateThread(b.ctx, dup, graphserver.IfExistsDoNothing, other)
		requireCode(t, err, graphserver.ECONFLICT)
	})

	t.Run("GetNotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createThread(t, b.st, threadOpts{ID: "t1", Metadata: graphserver.Metadata{"owner": "ann"}})
		_, err := b.st.GetThread(b.ctx, "missing", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.GetThread(b.ctx, "t1", other)
		requireCode(t, err, graphserver.ENOTFOUND)
	})

	t.Run("Update", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createThread(t, b.st, threadOpts{ID: "t1", Metadata: graphserver.Metadata{"owner": "ann", "a": 1.0, "b": 1.0}})
		got, err := b.st.UpdateThread(b.ctx, "t1", &graphserver.ThreadPatch{Metadata: graphserver.Metadata{"b": 2.0, "c": []any{"x"}}}, at(10), owner)
		require.NoError(t, err)
		require.Equal(t, graphserver.Metadata{"owner": "ann", "a": 1.0, "b": 2.0, "c": []any{"x"}}, got.Metadata)
		require.Equal(t, at(10), got.UpdatedAt)
		require.Equal(t, t0, got.CreatedAt)
		require.Equal(t, t0, got.StateUpdatedAt)
		require.Nil(t, got.TTL)

		got, err = b.st.UpdateThread(b.ctx, "t1", &graphserver.ThreadPatch{TTL: &graphserver.ThreadTTL{Minutes: 30, Strategy: graphserver.PruneKeepLatest}}, at(20), nil)
		require.NoError(t, err)
		exp := at(20).Add(30 * time.Minute)
		require.Equal(t, &graphserver.ThreadTTLInfo{Strategy: graphserver.PruneKeepLatest, TTLMinutes: 30, ExpiresAt: &exp}, got.TTL)
		require.Equal(t, graphserver.Metadata{"owner": "ann", "a": 1.0, "b": 2.0, "c": []any{"x"}}, got.Metadata)

		read, err := b.st.GetThread(b.ctx, "t1", nil)
		require.NoError(t, err)
		require.Equal(t, got, read)

		_, err = b.st.UpdateThread(b.ctx, "t1", &graphserver.ThreadPatch{Metadata: graphserver.Metadata{"a": 9.0}}, at(30), other)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.UpdateThread(b.ctx, "missing", &graphserver.ThreadPatch{}, at(30), nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		read, err = b.st.GetThread(b.ctx, "t1", nil)
		require.NoError(t, err)
		require.Equal(t, 1.0, read.Metadata["a"])
	})

	t.Run("Delete", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createThread(t, b.st, threadOpts{ID: "t1", Metadata: graphserver.Metadata{"owner": "ann"}})
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c1", Versions: map[string]string{"x": "1"}, Blobs: []driver.ChannelBlob{blob("x", "1", "", `[1]`)}})
		putCheckpoint(t, b.st, "t1", checkpointOpts{NS: "sub:1", ID: "c1", Versions: map[string]string{"y": "1"}, Blobs: []driver.ChannelBlob{blob("y", "1", "", `2`)}})
		require.NoError(t, b.st.PutWrites(b.ctx, "t1", "", "c1", "task", []driver.PendingWrite{{Idx: 0, Channel: "x", Value: json.RawMessage(`3`)}}))

		requireCode(t, b.st.DeleteThread(b.ctx, "t1", other), graphserver.ENOTFOUND)
		_, err := b.st.GetCheckpoint(b.ctx, "t1", "", "c1")
		require.NoError(t, err, "a hidden delete deletes nothing")

		require.NoError(t, b.st.DeleteThread(b.ctx, "t1", owner))
		_, err = b.st.GetThread(b.ctx, "t1", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		requireCode(t, b.st.DeleteThread(b.ctx, "t1", nil), graphserver.ENOTFOUND)

		// Recreated with the same id, the thread has no leftovers.
		createThread(t, b.st, threadOpts{ID: "t1"})
		for _, ns := range []string{"", "sub:1"} {
			_, err = b.st.GetCheckpoint(b.ctx, "t1", ns, "")
			requireCode(t, err, graphserver.ENOTFOUND)
		}
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c1", Versions: map[string]string{"x": "1"}})
		cp, err := b.st.GetCheckpoint(b.ctx, "t1", "", "c1")
		require.NoError(t, err)
		require.Empty(t, cp.Values, "blobs went with the thread")
		require.Empty(t, cp.PendingWrites, "writes went with the thread")
	})

	t.Run("Search", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createThread(t, b.st, threadOpts{ID: "t1", CreatedAt: at(1), UpdatedAt: at(30), StateUpdatedAt: at(5), Status: "idle",
			Metadata: graphserver.Metadata{"owner": "ann", "graph_id": "chat"}, Values: `{"messages":[{"id":"m1","type":"human"}],"n":1}`})
		createThread(t, b.st, threadOpts{ID: "t2", CreatedAt: at(2), UpdatedAt: at(20), StateUpdatedAt: at(40), Status: "busy",
			Metadata: graphserver.Metadata{"owner": "bob", "graph_id": "chat"}, Values: `{"messages":[],"n":2}`})
		createThread(t, b.st, threadOpts{ID: "t3", CreatedAt: at(3), UpdatedAt: at(10), StateUpdatedAt: at(20), Status: "interrupted",
			Metadata: graphserver.Metadata{"owner": "ann", "graph_id": "other"}})

		search := func(s graphserver.ThreadSearch) []string {
			t.Helper()
			got, err := b.st.SearchThreads(b.ctx, &s)
			require.NoError(t, err)
			return threadIDs(got)
		}
		count := func(s graphserver.ThreadSearch) int {
			t.Helper()
			n, err := b.st.CountThreads(b.ctx, &s)
			require.NoError(t, err)
			return n
		}
		require.Equal(t, []string{"t3", "t2", "t1"}, search(graphserver.ThreadSearch{}), "default created_at desc")
		require.Equal(t, 3, count(graphserver.ThreadSearch{}))
		require.Equal(t, []string{"t3", "t1"}, search(graphserver.ThreadSearch{IDs: []string{"t1", "t3", "nope"}}))
		require.Equal(t, 2, count(graphserver.ThreadSearch{IDs: []string{"t1", "t3", "nope"}}))
		require.Equal(t, []string{"t2"}, search(graphserver.ThreadSearch{Status: "busy"}))
		require.Equal(t, 1, count(graphserver.ThreadSearch{Status: "interrupted"}))
		require.Equal(t, []string{"t2", "t1"}, search(graphserver.ThreadSearch{Metadata: graphserver.Metadata{"graph_id": "chat"}}))
		require.Equal(t, []string{"t1"}, search(graphserver.ThreadSearch{Metadata: graphserver.Metadata{"graph_id": "chat"}, Filter: owner}))
		require.Equal(t, 1, count(graphserver.ThreadSearch{Metadata: graphserver.Metadata{"graph_id": "chat"}, Filter: owner}))
		require.Equal(t, []string{"t2"}, search(graphserver.ThreadSearch{Values: json.RawMessage(`{"n":2}`)}))
		require.Equal(t, []string{"t1"}, search(graphserver.ThreadSearch{Values: json.RawMessage(`{"messages":[{"type":"human"}]}`)}))
		require.Equal(t, 1, count(graphserver.ThreadSearch{Values: json.RawMessage(`{"messages":[{"id":"m1"}]}`)}))
		require.Equal(t, []string{"t2", "t1"}, search(graphserver.ThreadSearch{Values: json.RawMessage(`{"messages":[]}`)}), "an empty array is contained in any array")
		require.Empty(t, search(graphserver.ThreadSearch{Values: json.RawMessage(`{"n":"1"}`)}), "JSON types must match")
		require.Empty(t, search(graphserver.ThreadSearch{Status: "busy", Filter: owner}))

		sorts := []struct {
			by, order string
			want      []string
		}{
			{"thread_id", "asc", []string{"t1", "t2", "t3"}},
			{"thread_id", "desc", []string{"t3", "t2", "t1"}},
			{"status", "asc", []string{"t2", "t1", "t3"}},
			{"created_at", "asc", []string{"t1", "t2", "t3"}},
			{"updated_at", "desc", []string{"t1", "t2", "t3"}},
			{"updated_at", "asc", []string{"t3", "t2", "t1"}},
			{"state_updated_at", "desc", []string{"t2", "t3", "t1"}},
			{"state_updated_at", "asc", []string{"t1", "t3", "t2"}},
			{"values", "asc", []string{"t1", "t2", "t3"}}, // unknown: default column
		}
		for _, s := range sorts {
			require.Equal(t, s.want, search(graphserver.ThreadSearch{SortBy: s.by, SortOrder: s.order}), "%s %s", s.by, s.order)
		}
		require.Equal(t, []string{"t1", "t2"}, search(graphserver.ThreadSearch{SortBy: "thread_id", SortOrder: "asc", Limit: 1}))
		require.Equal(t, []string{"t3"}, search(graphserver.ThreadSearch{SortBy: "thread_id", SortOrder: "asc", Limit: 2, Offset: 2}))
		require.Empty(t, search(graphserver.ThreadSearch{Limit: 2, Offset: 3}))
		require.Equal(t, 3, count(graphserver.ThreadSearch{Limit: 1, Offset: 1}))

		// Ties on the sort column are broken by thread_id in the same direction.
		createThread(t, b.st, threadOpts{ID: "t0", CreatedAt: at(2)})
		require.Equal(t, []string{"t3", "t2", "t0", "t1"}, search(graphserver.ThreadSearch{SortBy: "created_at", SortOrder: "desc"}))
	})

	t.Run("Copy", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		src := createThread(t, b.st, threadOpts{ID: "src", Status: "interrupted", Values: `{"m":[1,2,3]}`,
			Metadata: graphserver.Metadata{"owner": "ann", "graph_id": "g"}})
		putCheckpoint(t, b.st, "src", checkpointOpts{ID: "c1", Metadata: graphserver.Metadata{"step": 0.0},
			Versions: map[string]string{"m": "1"}, Blobs: []driver.ChannelBlob{blob("m", "1", "", `[1]`)}})
		putCheckpoint(t, b.st, "src", checkpointOpts{ID: "c2", Parent: "c1", RunID: "r1", Metadata: graphserver.Metadata{"step": 1.0, "thread_id": "src", "graph_id": "g"},
			Versions: map[string]string{"m": "2"}, Blobs: []driver.ChannelBlob{blob("m", "2", "1", `[2,3]`)}})
		putCheckpoint(t, b.st, "src", checkpointOpts{NS: "sub:1", ID: "s1", Versions: map[string]string{"x": "1"},
			Blobs: []driver.ChannelBlob{blob("x", "1", "", `"sub"`)}})
		require.NoError(t, b.st.PutWrites(b.ctx, "src", "", "c2", "task1", []driver.PendingWrite{
			{TaskPath: "p", Idx: 0, Channel: "m", Value: json.RawMessage(`[4]`)},
		}))

		cp, err := b.st.CopyThread(b.ctx, "src", "dst", at(100), owner)
		require.NoError(t, err)
		require.Equal(t, "dst", cp.ThreadID)
		require.Equal(t, src.Metadata, cp.Metadata)
		require.Equal(t, src.Config, cp.Config)
		require.Equal(t, graphserver.ThreadInterrupted, cp.Status)
		require.JSONEq(t, `{"m":[1,2,3]}`, string(cp.Values))
		require.Equal(t, at(100), cp.CreatedAt)
		require.Equal(t, at(100), cp.UpdatedAt)

		list, err := b.st.ListCheckpoints(b.ctx, "dst", driver.CheckpointListOptions{})
		require.NoError(t, err)
		require.Equal(t, []string{"c2", "c1"}, checkpointIDs(list))
		for _, c := range list {
			require.Equal(t, "dst", c.ThreadID)
		}
		require.Equal(t, "c1", list[0].ParentCheckpointID)
		require.Equal(t, "r1", list[0].RunID)
		require.Equal(t, graphserver.Metadata{"step": 1.0, "thread_id": "dst", "graph_id": "g"}, list[0].Metadata,
			"the copy's checkpoints name the copy")
		requireValues(t, map[string]string{"m": `[1,2,3]`}, list[0].Values)
		orig, err := b.st.GetCheckpoint(b.ctx, "src", "", "c2")
		require.NoError(t, err)
		require.Equal(t, "src", orig.Metadata["thread_id"], "the source is unchanged")
		requireValues(t, map[string]string{"m": `[1]`}, list[1].Values)
		require.Equal(t, []driver.PendingWrite{{TaskID: "task1", TaskPath: "p", Idx: 0, Channel: "m", Value: json.RawMessage(`[4]`)}}, list[0].PendingWrites)
		sub, err := b.st.GetCheckpoint(b.ctx, "dst", "sub:1", "")
		require.NoError(t, err)
		requireValues(t, map[string]string{"x": `"sub"`}, sub.Values)

		// The copy is independent: deleting the source keeps it whole.
		require.NoError(t, b.st.DeleteThread(b.ctx, "src", nil))
		got, err := b.st.GetCheckpoint(b.ctx, "dst", "", "")
		require.NoError(t, err)
		requireValues(t, map[string]string{"m": `[1,2,3]`}, got.Values)

		_, err = b.st.CopyThread(b.ctx, "src", "dst2", at(100), nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.CopyThread(b.ctx, "dst", "dst3", at(100), other)
		requireCode(t, err, graphserver.ENOTFOUND)
		createThread(t, b.st, threadOpts{ID: "taken"})
		_, err = b.st.CopyThread(b.ctx, "dst", "taken", at(100), nil)
		requireCode(t, err, graphserver.ECONFLICT)
		_, err = b.st.GetCheckpoint(b.ctx, "taken", "", "")
		requireCode(t, err, graphserver.ENOTFOUND)
	})

	t.Run("CopyBusyBecomesIdle", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createThread(t, b.st, threadOpts{ID: "src", Status: graphserver.ThreadBusy})
		cp, err := b.st.CopyThread(b.ctx, "src", "dst", at(1), nil)
		require.NoError(t, err)
		require.Equal(t, graphserver.ThreadIdle, cp.Status)
	})

	t.Run("PruneDelete", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createThread(t, b.st, threadOpts{ID: "t1", Metadata: graphserver.Metadata{"owner": "ann"}})
		createThread(t, b.st, threadOpts{ID: "t2", Metadata: graphserver.Metadata{"owner": "bob"}})
		createThread(t, b.st, threadOpts{ID: "t3", Metadata: graphserver.Metadata{"owner": "ann"}})
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c1"})

		n, err := b.st.PruneThreads(b.ctx, []string{"t1", "t2", "missing", "t1"}, graphserver.PruneDelete, owner)
		require.NoError(t, err)
		require.Equal(t, 1, n, "missing and hidden ids are not counted")
		_, err = b.st.GetThread(b.ctx, "t1", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.GetThread(b.ctx, "t2", nil)
		require.NoError(t, err)

		n, err = b.st.PruneThreads(b.ctx, []string{"t2", "t3"}, "", nil)
		require.NoError(t, err)
		require.Equal(t, 2, n, "delete is the default strategy")
		c, err := b.st.CountThreads(b.ctx, &graphserver.ThreadSearch{})
		require.NoError(t, err)
		require.Equal(t, 0, c)

		_, err = b.st.PruneThreads(b.ctx, []string{"t1"}, "shred", nil)
		requireCode(t, err, graphserver.EINVALID)
	})

	t.Run("PruneKeepLatest", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createThread(t, b.st, threadOpts{ID: "t1", Metadata: graphserver.Metadata{"owner": "ann"}})
		createThread(t, b.st, threadOpts{ID: "empty"})
		createThread(t, b.st, threadOpts{ID: "hidden", Metadata: graphserver.Metadata{"owner": "bob"}})
		putCheckpoint(t, b.st, "hidden", checkpointOpts{ID: "c1"})
		putCheckpoint(t, b.st, "hidden", checkpointOpts{ID: "c2", Parent: "c1"})
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c1", Versions: map[string]string{"msgs": "1", "n": "1"},
			Blobs: []driver.ChannelBlob{blob("msgs", "1", "", `["a"]`), blob("n", "1", "", `1`)}})
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c2", Parent: "c1", Versions: map[string]string{"msgs": "2", "n": "2"},
			Blobs: []driver.ChannelBlob{blob("msgs", "2", "1", `["b"]`), blob("n", "2", "", `2`)}})
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c3", Parent: "c2", Metadata: graphserver.Metadata{"step": 2.0},
			Versions: map[string]string{"msgs": "3", "n": "2"}, Blobs: []driver.ChannelBlob{blob("msgs", "3", "2", `["c","d"]`)}})
		putCheckpoint(t, b.st, "t1", checkpointOpts{NS: "sub:1", ID: "s1", Versions: map[string]string{"x": "1"},
			Blobs: []driver.ChannelBlob{blob("x", "1", "", `1`)}})
		require.NoError(t, b.st.PutWrites(b.ctx, "t1", "", "c3", "task", []driver.PendingWrite{{Idx: 0, Channel: "n", Value: json.RawMessage(`5`)}}))
		require.NoError(t, b.st.PutWrites(b.ctx, "t1", "", "c2", "task", []driver.PendingWrite{{Idx: 0, Channel: "n", Value: json.RawMessage(`6`)}}))

		n, err := b.st.PruneThreads(b.ctx, []string{"t1", "empty", "hidden", "missing"}, graphserver.PruneKeepLatest, graphserver.Filter{"owner": map[string]any{"$eq": "ann"}})
		require.NoError(t, err)
		require.Equal(t, 1, n)
		n, err = b.st.PruneThreads(b.ctx, []string{"empty"}, graphserver.PruneKeepLatest, nil)
		require.NoError(t, err)
		require.Equal(t, 1, n, "a thread without checkpoints counts as pruned")

		_, err = b.st.GetThread(b.ctx, "t1", nil)
		require.NoError(t, err, "keep_latest keeps the thread")
		list, err := b.st.ListCheckpoints(b.ctx, "t1", driver.CheckpointListOptions{})
		require.NoError(t, err)
		require.Equal(t, []string{"c3"}, checkpointIDs(list))
		requireValues(t, map[string]string{"msgs": `["a","b","c","d"]`, "n": `2`}, list[0].Values)
		require.Equal(t, graphserver.Metadata{"step": 2.0}, list[0].Metadata)
		require.Equal(t, []driver.PendingWrite{{TaskID: "task", Idx: 0, Channel: "n", Value: json.RawMessage(`5`)}}, list[0].PendingWrites)
		subs, err := b.st.ListCheckpoints(b.ctx, "t1", driver.CheckpointListOptions{NS: "sub:1"})
		require.NoError(t, err)
		require.Empty(t, subs, "subgraph checkpoints are dropped")

		// New checkpoints build on the rewritten blobs.
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c4", Parent: "c3", Versions: map[string]string{"msgs": "4", "n": "2"},
			Blobs: []driver.ChannelBlob{blob("msgs", "4", "3", `["e"]`)}})
		got, err := b.st.GetCheckpoint(b.ctx, "t1", "", "")
		require.NoError(t, err)
		requireValues(t, map[string]string{"msgs": `["a","b","c","d","e"]`, "n": `2`}, got.Values)

		hidden, err := b.st.ListCheckpoints(b.ctx, "hidden", driver.CheckpointListOptions{})
		require.NoError(t, err)
		require.Len(t, hidden, 2, "a hidden thread is not pruned")
	})

	t.Run("SetSummary", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createThread(t, b.st, threadOpts{ID: "t1", Status: graphserver.ThreadBusy, Metadata: graphserver.Metadata{"k": "v"}})
		require.NoError(t, rulesOf(b.st).SetThreadSummary(b.ctx, "t1", &driver.ThreadSummary{
			Status:     graphserver.ThreadInterrupted,
			Values:     json.RawMessage(`{"a":[1]}`),
			Interrupts: map[string][]graphserver.Interrupt{"task": {{Value: map[string]any{"q": "?"}, ID: "i1"}}},
		}, at(50)))
		got, err := b.st.GetThread(b.ctx, "t1", nil)
		require.NoError(t, err)
		require.Equal(t, graphserver.ThreadInterrupted, got.Status)
		require.JSONEq(t, `{"a":[1]}`, string(got.Values))
		require.Equal(t, map[string][]graphserver.Interrupt{"task": {{Value: map[string]any{"q": "?"}, ID: "i1"}}}, got.Interrupts)
		require.Nil(t, got.Error)
		require.Equal(t, at(50), got.UpdatedAt)
		require.Equal(t, at(50), got.StateUpdatedAt)
		require.Equal(t, t0, got.CreatedAt)
		require.Equal(t, graphserver.Metadata{"k": "v"}, got.Metadata)

		require.NoError(t, rulesOf(b.st).SetThreadSummary(b.ctx, "t1", &driver.ThreadSummary{
			Status: graphserver.ThreadError, Values: json.RawMessage(`{"a":[1]}`), Error: json.RawMessage(`{"error":"ValueError","message":"bad"}`),
		}, at(60)))
		got, err = b.st.GetThread(b.ctx, "t1", nil)
		require.NoError(t, err)
		require.Equal(t, graphserver.ThreadError, got.Status)
		require.Empty(t, got.Interrupts)
		require.JSONEq(t, `{"error":"ValueError","message":"bad"}`, string(got.Error))
		require.Equal(t, at(60), got.StateUpdatedAt)

		requireCode(t, rulesOf(b.st).SetThreadSummary(b.ctx, "missing", &driver.ThreadSummary{Status: "idle"}, at(1)), graphserver.ENOTFOUND)
	})

	t.Run("SummaryMovesTTL", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createThread(t, b.st, threadOpts{ID: "t1"})
		_, err := b.st.UpdateThread(b.ctx, "t1", &graphserver.ThreadPatch{TTL: &graphserver.ThreadTTL{Minutes: 5}}, at(0), nil)
		require.NoError(t, err)
		require.NoError(t, rulesOf(b.st).SetThreadSummary(b.ctx, "t1", &driver.ThreadSummary{Status: "idle"}, at(100)))
		got, err := b.st.GetThread(b.ctx, "t1", nil)
		require.NoError(t, err)
		exp := at(100).Add(5 * time.Minute)
		require.Equal(t, &graphserver.ThreadTTLInfo{Strategy: graphserver.PruneDelete, TTLMinutes: 5, ExpiresAt: &exp}, got.TTL)
	})
}
