package storagetest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// exerciseTx: Storage.WithTx and each operation of driver.Tx, which
// the Server's run rules are built from. A driver stores and queries; the
// rules themselves are exercised from graphserver's tests (RunWithRules).
func exerciseTx(t *testing.T, open func(t *testing.T) driver.Storage) {
	setup := func(t *testing.T) driver.Storage {
		t.Helper()
		st := open(t)
		createThread(t, st, threadOpts{ID: "t1", Metadata: graphserver.Metadata{"owner": "ann"}})
		return st
	}
	// inTx runs fn in one transaction and requires it to succeed.
	inTx := func(t *testing.T, st driver.Storage, fn func(ctx context.Context, tx driver.Tx) error) {
		t.Helper()
		require.NoError(t, withTx(t, t.Context(), st, fn))
	}
	getThread := func(t *testing.T, st driver.Storage, id string) *graphserver.Thread {
		t.Helper()
		th, err := st.GetThread(t.Context(), id, nil)
		require.NoError(t, err)
		return th
	}
	getRun := func(t *testing.T, st driver.Storage, id string) *graphserver.Run {
		t.Helper()
		r, err := st.GetRun(t.Context(), "", id, nil)
		require.NoError(t, err)
		return r
	}
	refIDs := func(refs []driver.RunRef) []string {
		ids := []string{}
		for _, r := range refs {
			ids = append(ids, r.RunID)
		}
		slices.Sort(ids)
		return ids
	}

	t.Run("RollbackOnError", func(t *testing.T) {
		t.Parallel()
		st := setup(t)
		boom := graphserver.Errorf(graphserver.ECONFLICT, "boom")
		err := withTx(t, t.Context(), st, func(ctx context.Context, tx driver.Tx) error {
			if err := tx.InsertRun(ctx, newRun(runOpts{ID: "r1", ThreadID: "t1"}), nil); err != nil {
				return err
			}
			if err := tx.UpdateThread(ctx, "t1", &driver.ThreadWrite{Now: at(1), Status: graphserver.ThreadBusy}); err != nil {
				return err
			}
			return boom
		})
		require.ErrorIs(t, err, boom)
		requireCode(t, err, graphserver.ECONFLICT)
		_, err = st.GetRun(t.Context(), "", "r1", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		require.Equal(t, graphserver.ThreadIdle, getThread(t, st, "t1").Status, "nothing of the failed transaction stays")
	})

	t.Run("CancelledContext", func(t *testing.T) {
		t.Parallel()
		st := setup(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		ran := false
		err := withTx(t, ctx, st, func(ctx context.Context, tx driver.Tx) error {
			ran = true
			return nil
		})
		require.ErrorIs(t, err, context.Canceled)
		require.False(t, ran, "fn does not start once ctx is done")
	})

	t.Run("Threads", func(t *testing.T) {
		t.Parallel()
		st := setup(t)
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			// CheckThread reads what a run's creation takes from its thread.
			head, err := tx.CheckThread(ctx, "t1", nil)
			require.NoError(t, err)
			require.Equal(t, graphserver.Metadata{"owner": "ann"}, head.Metadata)
			require.Equal(t, graphserver.Object{}, head.Config)
			require.Empty(t, head.Active)
			_, err = tx.CheckThread(ctx, "t1", graphserver.Filter{"owner": "ann"})
			require.NoError(t, err)
			_, err = tx.CheckThread(ctx, "t1", graphserver.Filter{"owner": "bob"})
			requireCode(t, err, graphserver.ENOTFOUND)
			_, err = tx.CheckThread(ctx, "missing", nil)
			requireCode(t, err, graphserver.ENOTFOUND)

			require.NoError(t, tx.InsertThread(ctx, &graphserver.Thread{ThreadID: "t2", CreatedAt: at(1), UpdatedAt: at(2),
				StateUpdatedAt: at(1), Metadata: graphserver.Metadata{"k": "v"}, Config: graphserver.Object{"c": 1.0},
				Context: graphserver.Object{}, Status: graphserver.ThreadBusy, Values: json.RawMessage("null")}, false))
			requireCode(t, tx.InsertThread(ctx, &graphserver.Thread{ThreadID: "t2", CreatedAt: at(1)}, false), graphserver.ECONFLICT)
			// A stateless run's thread: read by id, not searched nor counted.
			require.NoError(t, tx.InsertThread(ctx, &graphserver.Thread{ThreadID: "t3", CreatedAt: at(1), UpdatedAt: at(1),
				StateUpdatedAt: at(1), Metadata: graphserver.Metadata{"k": "v"}, Config: graphserver.Object{},
				Context: graphserver.Object{}, Status: graphserver.ThreadBusy, Values: json.RawMessage("null")}, true))
			requireCode(t, tx.UpdateThread(ctx, "missing", &driver.ThreadWrite{Now: at(3), Status: graphserver.ThreadIdle}), graphserver.ENOTFOUND)
			return nil
		})
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			head, err := tx.CheckThread(ctx, "t2", graphserver.Filter{"k": "v"})
			require.NoError(t, err)
			require.Equal(t, graphserver.Metadata{"k": "v"}, head.Metadata)
			require.Equal(t, graphserver.Object{"c": 1.0}, head.Config)
			return nil
		})
		require.Equal(t, graphserver.ThreadBusy, getThread(t, st, "t3").Status)
		for _, s := range []*graphserver.ThreadSearch{{}, {Metadata: graphserver.Metadata{"k": "v"}}, {Status: graphserver.ThreadBusy},
			{IDs: []string{"t2", "t3"}}, {SortBy: "updated_at"}, {SortBy: "thread_id"}} {
			found, err := st.SearchThreads(t.Context(), s)
			require.NoError(t, err)
			var ids []string
			for _, th := range found {
				ids = append(ids, th.ThreadID)
			}
			require.Contains(t, ids, "t2", "search %+v", s)
			require.NotContains(t, ids, "t3", "search %+v", s)
			n, err := st.CountThreads(t.Context(), s)
			require.NoError(t, err)
			require.Equal(t, len(ids), n, "count %+v", s)
		}
		th := getThread(t, st, "t2")
		require.Equal(t, graphserver.ThreadBusy, th.Status)
		require.Equal(t, graphserver.Metadata{"k": "v"}, th.Metadata)
		require.Equal(t, graphserver.Object{"c": 1.0}, th.Config)
		require.Equal(t, at(2), th.UpdatedAt)

		// Status only where IfStatus holds; the rest of the write applies.
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			return tx.UpdateThread(ctx, "t2", &driver.ThreadWrite{Now: at(3), Status: graphserver.ThreadIdle,
				IfStatus: graphserver.ThreadError, MergeMetadata: graphserver.Metadata{"graph_id": "g", "nested": map[string]any{"a": 1.0}}})
		})
		th = getThread(t, st, "t2")
		require.Equal(t, graphserver.ThreadBusy, th.Status)
		require.Equal(t, graphserver.Metadata{"k": "v", "graph_id": "g", "nested": map[string]any{"a": 1.0}}, th.Metadata)
		require.Equal(t, at(3), th.UpdatedAt)
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			return tx.UpdateThread(ctx, "t2", &driver.ThreadWrite{Now: at(4), Status: graphserver.ThreadIdle,
				IfStatus: graphserver.ThreadBusy, Config: graphserver.Object{"c": 2.0}, MergeMetadata: graphserver.Metadata{"nested": map[string]any{"b": 2.0}}})
		})
		th = getThread(t, st, "t2")
		require.Equal(t, graphserver.ThreadIdle, th.Status)
		require.Equal(t, graphserver.Metadata{"k": "v", "graph_id": "g", "nested": map[string]any{"b": 2.0}}, th.Metadata,
			"a merged key's value is replaced as a whole")
		require.Equal(t, graphserver.Object{"c": 2.0}, th.Config)
		require.Equal(t, at(1), th.StateUpdatedAt, "no summary: the state did not change")

		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			return tx.DeleteThread(ctx, "t2")
		})
		_, err := st.GetThread(t.Context(), "t2", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			return tx.DeleteThread(ctx, "t2") // missing: not an error
		})
	})

	t.Run("ThreadSummary", func(t *testing.T) {
		t.Parallel()
		st := setup(t)
		sum := &driver.ThreadSummary{Values: json.RawMessage(`{"n":1}`), Error: json.RawMessage(`{"error":"E"}`),
			Interrupts: map[string][]graphserver.Interrupt{"task": {{Value: "ask", ID: "i1"}}}}
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			return tx.UpdateThread(ctx, "t1", &driver.ThreadWrite{Now: at(5), Status: graphserver.ThreadInterrupted, Summary: sum})
		})
		th := getThread(t, st, "t1")
		require.Equal(t, graphserver.ThreadInterrupted, th.Status)
		require.JSONEq(t, `{"n":1}`, string(th.Values))
		require.JSONEq(t, `{"error":"E"}`, string(th.Error))
		require.Len(t, th.Interrupts["task"], 1)
		require.Equal(t, at(5), th.StateUpdatedAt)
		require.Equal(t, at(5), th.UpdatedAt)

		// KeepValues: the error is written, values and interrupts stay.
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			return tx.UpdateThread(ctx, "t1", &driver.ThreadWrite{Now: at(6), Status: graphserver.ThreadError,
				Summary: &driver.ThreadSummary{Error: json.RawMessage(`{"error":"F"}`)}, KeepValues: true})
		})
		th = getThread(t, st, "t1")
		require.Equal(t, graphserver.ThreadError, th.Status)
		require.JSONEq(t, `{"n":1}`, string(th.Values))
		require.JSONEq(t, `{"error":"F"}`, string(th.Error))
		require.Len(t, th.Interrupts["task"], 1)

		// A TTL expiry moves to Now + TTL with a summary.
		_, err := st.CreateThread(t.Context(), &graphserver.Thread{ThreadID: "ttl", CreatedAt: at(0),
			TTL: &graphserver.ThreadTTLInfo{Strategy: graphserver.PruneDelete, TTLMinutes: 1}}, graphserver.IfExistsRaise, nil)
		require.NoError(t, err)
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			return tx.UpdateThread(ctx, "ttl", &driver.ThreadWrite{Now: at(100), Status: graphserver.ThreadIdle,
				Summary: &driver.ThreadSummary{}})
		})
		th, err = st.GetThread(t.Context(), "ttl", nil)
		require.NoError(t, err)
		require.NotNil(t, th.TTL)
		require.Equal(t, at(160), *th.TTL.ExpiresAt)
	})

	t.Run("Runs", func(t *testing.T) {
		t.Parallel()
		st := setup(t)
		createThread(t, st, threadOpts{ID: "t2", Metadata: graphserver.Metadata{"owner": "bob"}})
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			require.NoError(t, tx.InsertRun(ctx, newRun(runOpts{ID: "p1", ThreadID: "t1", Webhook: "http://127.0.0.1:1/h"}), nil))
			require.NoError(t, tx.InsertRun(ctx, newRun(runOpts{ID: "c1", ThreadID: "t1", CreatedAt: at(1)}),
				&driver.RunClaim{Owner: "w", LeaseUntil: at(30)}))
			require.NoError(t, tx.InsertRun(ctx, newRun(runOpts{ID: "p2", ThreadID: "t2"}), nil))
			done := newRun(runOpts{ID: "d1", ThreadID: "t1"})
			done.Status = graphserver.RunSuccess
			require.NoError(t, tx.InsertRun(ctx, done, nil))
			requireCode(t, tx.InsertRun(ctx, newRun(runOpts{ID: "p1", ThreadID: "t1"}), nil), graphserver.ECONFLICT)

			r, err := tx.GetRun(ctx, "p1")
			require.NoError(t, err)
			require.Equal(t, graphserver.RunPending, r.Status)
			require.Equal(t, 0, r.Attempt)
			require.Equal(t, "http://127.0.0.1:1/h", *r.Kwargs.Webhook)
			require.JSONEq(t, `{"x":1}`, string(r.Kwargs.Input))
			r, err = tx.GetRun(ctx, "c1")
			require.NoError(t, err)
			require.Equal(t, graphserver.RunRunning, r.Status)
			require.Equal(t, 1, r.Attempt)
			_, err = tx.GetRun(ctx, "missing")
			requireCode(t, err, graphserver.ENOTFOUND)

			active, err := tx.ActiveRuns(ctx, "t1")
			require.NoError(t, err)
			require.Equal(t, []string{"c1", "p1"}, refIDs(active))
			head, err := tx.CheckThread(ctx, "t1", nil)
			require.NoError(t, err)
			require.ElementsMatch(t, active, head.Active, "CheckThread lists the active runs too")
			head, err = tx.CheckThread(ctx, "t2", graphserver.Filter{"owner": "bob"})
			require.NoError(t, err)
			require.Equal(t, []string{"p2"}, refIDs(head.Active))
			require.Equal(t, graphserver.Metadata{"owner": "bob"}, head.Metadata)

			refs, err := tx.SelectRuns(ctx, &graphserver.RunCancelSelect{ThreadID: "t1", RunIDs: []string{"p1", "d1", "p2"}}, nil)
			require.NoError(t, err)
			require.Equal(t, []string{"d1", "p1"}, refIDs(refs), "runs of another thread are absent")
			refs, err = tx.SelectRuns(ctx, &graphserver.RunCancelSelect{Status: graphserver.RunPending}, nil)
			require.NoError(t, err)
			require.Equal(t, []string{"p1", "p2"}, refIDs(refs))
			refs, err = tx.SelectRuns(ctx, &graphserver.RunCancelSelect{Status: graphserver.RunRunning}, nil)
			require.NoError(t, err)
			require.Equal(t, []string{"c1"}, refIDs(refs))
			refs, err = tx.SelectRuns(ctx, &graphserver.RunCancelSelect{Status: "all"}, graphserver.Filter{"owner": "bob"})
			require.NoError(t, err)
			require.Equal(t, []string{"p2"}, refIDs(refs), "the filter applies to the thread's metadata")

			held, err := tx.HeldRun(ctx, "c1", "w")
			require.NoError(t, err)
			require.Equal(t, driver.RunRef{RunID: "c1", ThreadID: "t1", Status: graphserver.RunRunning, Attempt: 1}, *held)
			_, err = tx.HeldRun(ctx, "c1", "other")
			requireCode(t, err, graphserver.ENOTFOUND)
			_, err = tx.HeldRun(ctx, "p1", "w")
			requireCode(t, err, graphserver.ENOTFOUND)

			expired, err := tx.ExpiredRuns(ctx, at(30))
			require.NoError(t, err)
			require.Empty(t, expired, "the lease runs until at(30)")
			expired, err = tx.ExpiredRuns(ctx, at(31))
			require.NoError(t, err)
			require.Equal(t, []string{"c1"}, refIDs(expired))
			return nil
		})

		// A claimed run's lease is the owner's; a recorded cancellation
		// reaches the worker and the sweep.
		action, err := st.RenewRunLease(t.Context(), "c1", "w", at(40))
		require.NoError(t, err)
		require.Empty(t, action)
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			return tx.SetRunCancel(ctx, "c1", graphserver.CancelRollback, at(2))
		})
		action, err = st.RenewRunLease(t.Context(), "c1", "w", at(40))
		require.NoError(t, err)
		require.Equal(t, graphserver.CancelRollback, action)
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			expired, err := tx.ExpiredRuns(ctx, at(41))
			require.NoError(t, err)
			require.Len(t, expired, 1)
			require.Equal(t, graphserver.CancelRollback, expired[0].CancelAction)
			return nil
		})

		// SetRunStatus clears the lease and the cancellation.
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			requireCode(t, tx.SetRunStatus(ctx, "missing", graphserver.RunError, at(3)), graphserver.ENOTFOUND)
			return tx.SetRunStatus(ctx, "c1", graphserver.RunPending, at(3))
		})
		r := getRun(t, st, "c1")
		require.Equal(t, graphserver.RunPending, r.Status)
		require.Equal(t, at(3), r.UpdatedAt)
		_, err = st.RenewRunLease(t.Context(), "c1", "w", at(50))
		requireCode(t, err, graphserver.ENOTFOUND)
		q, err := st.ClaimRun(t.Context(), "w2", at(4), at(60))
		require.NoError(t, err)
		require.Equal(t, "p1", q.Run.RunID, "the oldest pending run of a thread with no running run")
		q, err = st.ClaimRun(t.Context(), "w3", at(4), at(60))
		require.NoError(t, err)
		require.Equal(t, "p2", q.Run.RunID, "t1 has a running run now")
		action, err = st.RenewRunLease(t.Context(), "p1", "w2", at(70))
		require.NoError(t, err)
		require.Empty(t, action)

		// DeleteRun takes the run's checkpoints; a missing run is not an error.
		require.NoError(t, st.PutRunCheckpoint(t.Context(), "p1", "w2", &driver.CheckpointRecord{ThreadID: "t1", RunID: "p1",
			CheckpointID: "cp1", CreatedAt: at(5), ChannelVersions: map[string]string{"n": "1"},
			NewBlobs: []driver.ChannelBlob{blob("n", "1", "", "1")}, Body: json.RawMessage(`{}`)}))
		_, err = st.GetCheckpoint(t.Context(), "t1", "", "cp1")
		require.NoError(t, err)
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			require.NoError(t, tx.DeleteRun(ctx, "t1", "p1"))
			return tx.DeleteRun(ctx, "t1", "p1")
		})
		_, err = st.GetRun(t.Context(), "", "p1", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = st.GetCheckpoint(t.Context(), "t1", "", "cp1")
		requireCode(t, err, graphserver.ENOTFOUND)

		// DeleteThread takes the thread's runs.
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			return tx.DeleteThread(ctx, "t2")
		})
		_, err = st.GetRun(t.Context(), "", "p2", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
	})

	// Tx.PutCheckpoints saves checkpoints (checked already) in order (a
	// parent before its child) as the run's, checking no lease, and nothing
	// of a failing call: what the end of a run saves (RunFinish.Checkpoints).
	t.Run("PutCheckpoints", func(t *testing.T) {
		t.Parallel()
		st := setup(t)
		cp := func(id, parent, v string) *driver.CheckpointRecord {
			return &driver.CheckpointRecord{ThreadID: "t1", RunID: "r1", CheckpointID: id, ParentCheckpointID: parent,
				CreatedAt: at(5), ChannelVersions: map[string]string{"n": v},
				NewBlobs: []driver.ChannelBlob{blob("n", v, "", v)}, Body: json.RawMessage(`{}`)}
		}
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			return tx.InsertRun(ctx, newRun(runOpts{ID: "r1", ThreadID: "t1"}), &driver.RunClaim{Owner: "w", LeaseUntil: at(30)})
		})
		// c2 keeps c1's version of channel k: its blob is c1's.
		c1 := cp("c1", "", "1")
		c1.ChannelVersions["k"] = "1"
		c1.NewBlobs = append(c1.NewBlobs, blob("k", "1", "", `"kept"`))
		c2 := cp("c2", "c1", "2")
		c2.ChannelVersions["k"] = "1"
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			return tx.PutCheckpoints(ctx, []*driver.CheckpointRecord{c1, c2})
		})
		got, err := st.GetCheckpoint(t.Context(), "t1", "", "")
		require.NoError(t, err)
		require.Equal(t, "c2", got.CheckpointID)
		require.Equal(t, "c1", got.ParentCheckpointID)
		require.Equal(t, "r1", got.RunID)
		requireValues(t, map[string]string{"n": `2`, "k": `"kept"`}, got.Values)

		// A child replacing a checkpoint (c2 again, after x1) finds the
		// blobs only the replaced one had.
		x1 := cp("x1", "c1", "3")
		c2again := cp("c2", "x1", "4")
		c2again.ChannelVersions["k"] = "1"
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			return tx.PutCheckpoints(ctx, []*driver.CheckpointRecord{x1, c2again})
		})
		got, err = st.GetCheckpoint(t.Context(), "t1", "", "c2")
		require.NoError(t, err)
		require.Equal(t, "x1", got.ParentCheckpointID)
		requireValues(t, map[string]string{"n": `4`, "k": `"kept"`}, got.Values)

		// Of a missing thread: an error, and nothing saved. (cps are
		// checked before the transaction, see FinishInvalidCheckpoints.)
		missing := cp("m1", "", "1")
		missing.ThreadID = "missing"
		err = withTx(t, t.Context(), st, func(ctx context.Context, tx driver.Tx) error {
			return tx.PutCheckpoints(ctx, []*driver.CheckpointRecord{cp("c3", "c2", "5"), missing})
		})
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = st.GetCheckpoint(t.Context(), "t1", "", "c3")
		requireCode(t, err, graphserver.ENOTFOUND)

		// They are the run's: deleting it (a rollback) deletes them.
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			return tx.DeleteRun(ctx, "t1", "r1")
		})
		_, err = st.GetCheckpoint(t.Context(), "t1", "", "")
		requireCode(t, err, graphserver.ENOTFOUND)
	})

	// Tx.GetCheckpoint reads as Checkpointer.GetCheckpoint does, with the
	// transaction's own writes: what a run's creation preloads
	// (RunInsert.Preload).
	t.Run("GetCheckpoint", func(t *testing.T) {
		t.Parallel()
		st := setup(t)
		ctx := t.Context()
		require.NoError(t, st.PutCheckpoint(ctx, &driver.CheckpointRecord{ThreadID: "t1", CheckpointID: "c1", CreatedAt: at(1),
			Metadata: graphserver.Object{"step": float64(1)}, ChannelVersions: map[string]string{"m": "1", "k": "1"},
			NewBlobs: []driver.ChannelBlob{blob("m", "1", "", `["a"]`), blob("k", "1", "", `"kept"`)}, Body: json.RawMessage(`{"b":1}`)}))
		require.NoError(t, st.PutCheckpoint(ctx, &driver.CheckpointRecord{ThreadID: "t1", CheckpointID: "c2", ParentCheckpointID: "c1",
			CreatedAt: at(2), ChannelVersions: map[string]string{"m": "2", "k": "1"},
			NewBlobs: []driver.ChannelBlob{blob("m", "2", "1", `["b"]`)}, Body: json.RawMessage(`{}`)}))
		require.NoError(t, st.PutWrites(ctx, "t1", "", "c2", "task", []driver.PendingWrite{{TaskID: "task", Idx: 0, Channel: "m", Value: json.RawMessage(`"c"`)}}))
		require.NoError(t, st.PutCheckpoint(ctx, &driver.CheckpointRecord{ThreadID: "t1", NS: "sub:1", CheckpointID: "s1",
			CreatedAt: at(3), ChannelVersions: map[string]string{}}))
		want, err := st.GetCheckpoint(ctx, "t1", "", "")
		require.NoError(t, err)
		require.Equal(t, "c2", want.CheckpointID)
		requireValues(t, map[string]string{"m": `["a","b"]`, "k": `"kept"`}, want.Values)
		require.Len(t, want.PendingWrites, 1)

		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			got, err := tx.GetCheckpoint(ctx, "t1", "", "")
			require.NoError(t, err)
			require.Equal(t, want, got, "the latest root checkpoint, as the Checkpointer reads it")
			got, err = tx.GetCheckpoint(ctx, "t1", "", "c1")
			require.NoError(t, err)
			require.Equal(t, "c1", got.CheckpointID)
			require.Empty(t, got.PendingWrites)
			got, err = tx.GetCheckpoint(ctx, "t1", "sub:1", "")
			require.NoError(t, err)
			require.Equal(t, "s1", got.CheckpointID)
			for _, c := range [][3]string{{"t1", "", "c9"}, {"t1", "sub:2", ""}, {"missing", "", ""}} {
				_, err = tx.GetCheckpoint(ctx, c[0], c[1], c[2])
				requireCode(t, err, graphserver.ENOTFOUND)
			}
			return nil
		})

		// It sees what the transaction wrote before it, which goes if the
		// transaction fails.
		boom := errors.New("boom")
		err = withTx(t, ctx, st, func(ctx context.Context, tx driver.Tx) error {
			if err := tx.PutCheckpoints(ctx, []*driver.CheckpointRecord{{ThreadID: "t1", CheckpointID: "c3", ParentCheckpointID: "c2",
				CreatedAt: at(4), ChannelVersions: map[string]string{"m": "3", "k": "1"}, NewBlobs: []driver.ChannelBlob{blob("m", "3", "2", `["d"]`)}}}); err != nil {
				return err
			}
			got, err := tx.GetCheckpoint(ctx, "t1", "", "")
			require.NoError(t, err)
			require.Equal(t, "c3", got.CheckpointID)
			requireValues(t, map[string]string{"m": `["a","b","d"]`, "k": `"kept"`}, got.Values)
			return boom
		})
		require.ErrorIs(t, err, boom)
		got, err := st.GetCheckpoint(ctx, "t1", "", "")
		require.NoError(t, err)
		require.Equal(t, "c2", got.CheckpointID)
	})

	t.Run("EndHeldRun", func(t *testing.T) {
		// Tx.EndHeldRun: HeldRun then SetRunStatus, ENOTFOUND changing
		// nothing when the run is not held.
		t.Parallel()
		st := setup(t)
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			return tx.InsertRun(ctx, newRun(runOpts{ID: "c1", ThreadID: "t1"}), &driver.RunClaim{Owner: "w", LeaseUntil: at(30)})
		})
		notHeld := func(owner string) {
			t.Helper()
			// The transaction commits: the failed call changed nothing.
			inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
				_, _, err := tx.EndHeldRun(ctx, "c1", owner, graphserver.RunSuccess, at(5))
				requireCode(t, err, graphserver.ENOTFOUND)
				_, _, err = tx.EndHeldRun(ctx, "missing", owner, graphserver.RunSuccess, at(5))
				requireCode(t, err, graphserver.ENOTFOUND)
				return nil
			})
		}
		notHeld("other")
		r := getRun(t, st, "c1")
		require.Equal(t, graphserver.RunRunning, r.Status)
		require.Equal(t, t0, r.UpdatedAt)

		// The lease lapses: back to pending, then claimed by w2.
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			return tx.SetRunStatus(ctx, "c1", graphserver.RunPending, at(31))
		})
		notHeld("w")
		_, err := st.ClaimRun(t.Context(), "w2", at(32), at(90))
		require.NoError(t, err)
		notHeld("w")
		_, err = st.RenewRunLease(t.Context(), "c1", "w2", at(91))
		require.NoError(t, err, "w2 still holds the run")

		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			threadID, active, err := tx.EndHeldRun(ctx, "c1", "w2", graphserver.RunError, at(40))
			require.NoError(t, err)
			require.Equal(t, "t1", threadID)
			require.False(t, active, "the thread has no other pending or running run")
			return nil
		})
		r = getRun(t, st, "c1")
		require.Equal(t, graphserver.RunError, r.Status)
		require.Equal(t, at(40), r.UpdatedAt)
		_, err = st.RenewRunLease(t.Context(), "c1", "w2", at(92))
		requireCode(t, err, graphserver.ENOTFOUND)
		notHeld("w2")

		// active: another run of the thread pending (or running, where the
		// driver lets a thread have two); a run of another thread, or one
		// ended, does not count.
		createThread(t, st, threadOpts{ID: "t9"})
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			require.NoError(t, tx.InsertRun(ctx, newRun(runOpts{ID: "h1", ThreadID: "t1"}), &driver.RunClaim{Owner: "w", LeaseUntil: at(90)}))
			require.NoError(t, tx.InsertRun(ctx, newRun(runOpts{ID: "q1", ThreadID: "t1"}), nil))
			return tx.InsertRun(ctx, newRun(runOpts{ID: "o1", ThreadID: "t9"}), nil)
		})
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			_, active, err := tx.EndHeldRun(ctx, "h1", "w", graphserver.RunSuccess, at(41))
			require.NoError(t, err)
			require.True(t, active, "q1 is pending")
			return tx.DeleteRun(ctx, "t1", "q1")
		})
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			require.NoError(t, tx.InsertRun(ctx, newRun(runOpts{ID: "h3", ThreadID: "t1"}), &driver.RunClaim{Owner: "w", LeaseUntil: at(90)}))
			_, active, err := tx.EndHeldRun(ctx, "h3", "w", graphserver.RunSuccess, at(42))
			require.NoError(t, err)
			require.False(t, active, "h1 ended, q1 deleted, o1 is another thread's")
			return nil
		})
	})

	t.Run("DeleteHeldRunThread", func(t *testing.T) {
		// Tx.DeleteHeldRunThread: HeldRun then DeleteThread, ENOTFOUND
		// changing nothing when the run is not held.
		t.Parallel()
		st := setup(t)
		createThread(t, st, threadOpts{ID: "t9"})
		putCheckpoint(t, st, "t1", checkpointOpts{ID: "k1", RunID: "c1"})
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			require.NoError(t, tx.InsertRun(ctx, newRun(runOpts{ID: "c1", ThreadID: "t1"}), &driver.RunClaim{Owner: "w", LeaseUntil: at(30)}))
			require.NoError(t, tx.InsertRun(ctx, newRun(runOpts{ID: "q1", ThreadID: "t1"}), nil))
			return tx.InsertRun(ctx, newRun(runOpts{ID: "o1", ThreadID: "t9"}), &driver.RunClaim{Owner: "w", LeaseUntil: at(30)})
		})
		// The transaction commits: the failed calls changed nothing.
		var errs []error
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			errs = nil
			for _, c := range []struct{ run, owner string }{{"c1", "other"}, {"q1", "w"}, {"missing", "w"}} {
				_, err := tx.DeleteHeldRunThread(ctx, c.run, c.owner)
				errs = append(errs, err)
			}
			return nil
		})
		require.Len(t, errs, 3)
		for _, err := range errs {
			requireCode(t, err, graphserver.ENOTFOUND)
		}
		getThread(t, st, "t1")
		require.Equal(t, graphserver.RunRunning, getRun(t, st, "c1").Status)
		require.Equal(t, graphserver.RunPending, getRun(t, st, "q1").Status)

		var threadID string
		var again error
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			var err error
			if threadID, err = tx.DeleteHeldRunThread(ctx, "c1", "w"); err != nil {
				return err
			}
			// Gone already within the transaction.
			_, again = tx.DeleteHeldRunThread(ctx, "c1", "w")
			return nil
		})
		require.Equal(t, "t1", threadID)
		requireCode(t, again, graphserver.ENOTFOUND)
		// The thread went with its runs and checkpoints; the other
		// thread's run stayed.
		_, err := st.GetThread(t.Context(), "t1", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		for _, id := range []string{"c1", "q1"} {
			_, err = st.GetRun(t.Context(), "", id, nil)
			requireCode(t, err, graphserver.ENOTFOUND)
		}
		_, err = st.GetCheckpoint(t.Context(), "t1", "", "")
		requireCode(t, err, graphserver.ENOTFOUND)
		getThread(t, st, "t9")
		require.Equal(t, graphserver.RunRunning, getRun(t, st, "o1").Status)
	})

	t.Run("WebhookAndCron", func(t *testing.T) {
		t.Parallel()
		st := setup(t)
		createAssistant(t, st, assistantOpts{ID: "a1"})
		createCron(t, st, cronOpts{ID: "c1", NextRunDate: ptr(at(10))})
		d := &driver.WebhookDelivery{ID: "w1", RunID: "r1", URL: "http://127.0.0.1:1/h", Body: json.RawMessage(`{"a":1}`), NextAt: at(1)}
		inTx(t, st, func(ctx context.Context, tx driver.Tx) error {
			require.NoError(t, tx.InsertWebhook(ctx, d, at(0)))
			again := *d
			again.URL = "http://127.0.0.1:1/other"
			require.NoError(t, tx.InsertWebhook(ctx, &again, at(0)), "a queued id is left as it is")
			fired, err := tx.FireCron(ctx, &driver.CronFiring{CronID: "c1", Due: at(10), Next: ptr(at(20))})
			require.NoError(t, err)
			require.True(t, fired)
			fired, err = tx.FireCron(ctx, &driver.CronFiring{CronID: "c1", Due: at(10), Next: ptr(at(20))})
			require.NoError(t, err)
			require.False(t, fired, "fired once")
			return nil
		})
		hooks, err := st.ClaimWebhooks(t.Context(), at(1), at(2), 10)
		require.NoError(t, err)
		require.Len(t, hooks, 1)
		require.Equal(t, "http://127.0.0.1:1/h", hooks[0].URL)
		require.JSONEq(t, `{"a":1}`, string(hooks[0].Body))
		c, err := st.GetCron(t.Context(), "c1", nil, nil)
		require.NoError(t, err)
		require.Equal(t, at(20), *c.NextRunDate)

		// A firing in a transaction that fails is not claimed.
		errStop := errors.New("stop")
		require.ErrorIs(t, withTx(t, t.Context(), st, func(ctx context.Context, tx driver.Tx) error {
			fired, err := tx.FireCron(ctx, &driver.CronFiring{CronID: "c1", Due: at(20), Next: ptr(at(30))})
			require.NoError(t, err)
			require.True(t, fired)
			return errStop
		}), errStop)
		c, err = st.GetCron(t.Context(), "c1", nil, nil)
		require.NoError(t, err)
		require.Equal(t, at(20), *c.NextRunDate)
	})
}
