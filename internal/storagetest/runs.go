package storagetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// runOpts overrides run fixture fields; zero fields keep the defaults.
type runOpts struct {
	ID        string
	ThreadID  string
	Strategy  string    // default enqueue
	CreatedAt time.Time // default t0
	Webhook   string
	Temporary bool // a stateless run's: its thread goes when it ends
}

func newRun(o runOpts) *graphserver.Run {
	created := o.CreatedAt
	if created.IsZero() {
		created = t0
	}
	r := &graphserver.Run{
		RunID: o.ID, ThreadID: o.ThreadID, AssistantID: "a1", CreatedAt: created, UpdatedAt: t0,
		Status: graphserver.RunPending, Metadata: graphserver.Metadata{"m": "v"}, MultitaskStrategy: o.Strategy,
		Kwargs: graphserver.RunKwargs{Input: json.RawMessage(`{"x":1}`), Config: graphserver.Object{"configurable": map[string]any{"k": "v"}},
			Context: graphserver.Object{}, StreamMode: []string{"values"}, Durability: "async"},
	}
	if r.MultitaskStrategy == "" {
		r.MultitaskStrategy = graphserver.MultitaskEnqueue
	}
	if o.Webhook != "" {
		r.Kwargs.Webhook = &o.Webhook
	}
	r.Kwargs.Temporary = o.Temporary
	return r
}

// endRun sets a run's final status through the driver's transaction (no
// rules: the thread is left as it is).
func endRun(t *testing.T, st driver.Storage, runID, status string) {
	t.Helper()
	require.NoError(t, withTx(t, t.Context(), st, func(ctx context.Context, tx driver.Tx) error {
		return tx.SetRunStatus(ctx, runID, status, at(50))
	}))
}

// insertRun creates a pending run on an existing thread and marks the
// thread busy, through the driver's own transaction (no rules).
func insertRun(t *testing.T, st driver.Storage, o runOpts) *graphserver.Run {
	t.Helper()
	r := newRun(o)
	require.NoError(t, withTx(t, t.Context(), st, func(ctx context.Context, tx driver.Tx) error {
		if _, err := tx.CheckThread(ctx, r.ThreadID, nil); err != nil {
			return err
		}
		if err := tx.InsertRun(ctx, r, nil); err != nil {
			return err
		}
		return tx.UpdateThread(ctx, r.ThreadID, &driver.ThreadWrite{Now: r.UpdatedAt, Status: graphserver.ThreadBusy})
	}))
	return r
}

func exerciseRuns(t *testing.T, open func(t *testing.T) driver.Storage) {
	type bundle struct {
		st driver.Storage
		rs *ruleStorage
	}
	setup := func(t *testing.T) *bundle {
		t.Helper()
		st := open(t)
		rs := rulesOf(st)
		createThread(t, st, threadOpts{ID: "t1", Metadata: graphserver.Metadata{"owner": "ann"}})
		return &bundle{st: st, rs: rs}
	}
	threadStatus := func(t *testing.T, b *bundle, id string) string {
		t.Helper()
		th, err := b.st.GetThread(t.Context(), id, nil)
		require.NoError(t, err)
		return th.Status
	}
	runStatus := func(t *testing.T, b *bundle, id string) string {
		t.Helper()
		r, err := b.rs.GetRun(t.Context(), "", id, nil)
		require.NoError(t, err)
		return r.Status
	}

	t.Run("CreateGetList", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		r := newRun(runOpts{ID: "r1", ThreadID: "t1"})
		_, err := b.rs.CreateRun(t.Context(), r, &driver.RunInsert{
			ThreadMetadata: graphserver.Metadata{"graph_id": "g"}, ThreadConfig: graphserver.Object{"configurable": map[string]any{"c": 1}}})
		require.NoError(t, err)
		got, err := b.rs.GetRun(t.Context(), "t1", "r1", nil)
		require.NoError(t, err)
		require.Equal(t, r, got)
		th, err := b.st.GetThread(t.Context(), "t1", nil)
		require.NoError(t, err)
		require.Equal(t, graphserver.ThreadBusy, th.Status)
		require.Equal(t, graphserver.Metadata{"owner": "ann", "graph_id": "g"}, th.Metadata)
		require.Equal(t, graphserver.Object{"configurable": map[string]any{"c": float64(1)}}, th.Config)

		_, err = b.rs.GetRun(t.Context(), "other", "r1", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.rs.GetRun(t.Context(), "t1", "r1", graphserver.Filter{"owner": "bob"})
		requireCode(t, err, graphserver.ENOTFOUND)
		insertRun(t, b.rs, runOpts{ID: "r2", ThreadID: "t1", CreatedAt: at(1)})
		runs, err := b.rs.ListRuns(t.Context(), "t1", &graphserver.RunSearch{Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []string{"r2", "r1"}, []string{runs[0].RunID, runs[1].RunID})
		runs, err = b.rs.ListRuns(t.Context(), "t1", &graphserver.RunSearch{Limit: 1, Offset: 1})
		require.NoError(t, err)
		require.Equal(t, "r1", runs[0].RunID)
		_, err = b.rs.ListRuns(t.Context(), "missing", &graphserver.RunSearch{Limit: 1})
		requireCode(t, err, graphserver.ENOTFOUND)
	})

	t.Run("GetList", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createThread(t, b.st, threadOpts{ID: "t2"})
		r1 := insertRun(t, b.st, runOpts{ID: "r1", ThreadID: "t1", Webhook: "https://example.com/h"})
		insertRun(t, b.st, runOpts{ID: "r2", ThreadID: "t1", CreatedAt: at(1)})
		insertRun(t, b.st, runOpts{ID: "r3", ThreadID: "t2", CreatedAt: at(2)})
		got, err := b.rs.GetRun(t.Context(), "t1", "r1", nil)
		require.NoError(t, err)
		require.Equal(t, r1, got)
		got, err = b.rs.GetRun(t.Context(), "", "r1", graphserver.Filter{"owner": "ann"})
		require.NoError(t, err)
		require.Equal(t, "t1", got.ThreadID)
		_, err = b.rs.GetRun(t.Context(), "t2", "r1", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.rs.GetRun(t.Context(), "", "r1", graphserver.Filter{"owner": "bob"})
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.rs.GetRun(t.Context(), "", "missing", nil)
		requireCode(t, err, graphserver.ENOTFOUND)

		runs, err := b.rs.ListRuns(t.Context(), "t1", &graphserver.RunSearch{Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []string{"r2", "r1"}, []string{runs[0].RunID, runs[1].RunID}, "newest first, the thread's runs only")
		require.Len(t, runs, 2)
		runs, err = b.rs.ListRuns(t.Context(), "t1", &graphserver.RunSearch{Limit: 1, Offset: 1})
		require.NoError(t, err)
		require.Equal(t, []string{"r1"}, []string{runs[0].RunID})
		endRun(t, b.st, "r2", graphserver.RunSuccess)
		runs, err = b.rs.ListRuns(t.Context(), "t1", &graphserver.RunSearch{Limit: 10, Status: graphserver.RunSuccess})
		require.NoError(t, err)
		require.Len(t, runs, 1)
		require.Equal(t, "r2", runs[0].RunID)
		_, err = b.rs.ListRuns(t.Context(), "t1", &graphserver.RunSearch{Limit: 10, Filter: graphserver.Filter{"owner": "bob"}})
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.rs.ListRuns(t.Context(), "missing", &graphserver.RunSearch{Limit: 1})
		requireCode(t, err, graphserver.ENOTFOUND)

		// DeleteRun deletes a finished run, refuses an active one.
		requireCode(t, b.rs.DeleteRun(t.Context(), "t1", "r1", nil), graphserver.ECONFLICT)
		require.NoError(t, b.rs.DeleteRun(t.Context(), "t1", "r2", nil))
		requireCode(t, b.rs.DeleteRun(t.Context(), "t1", "r2", nil), graphserver.ENOTFOUND)
	})

	t.Run("CreateThreadOrNotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.rs.CreateRun(t.Context(), newRun(runOpts{ID: "r1", ThreadID: "t2"}), &driver.RunInsert{})
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.rs.CreateRun(t.Context(), newRun(runOpts{ID: "r1", ThreadID: "t2"}), &driver.RunInsert{
			CreateThread: &graphserver.Thread{ThreadID: "t2", CreatedAt: t0, Status: graphserver.ThreadBusy, Metadata: graphserver.Metadata{"a": 1}}})
		require.NoError(t, err)
		require.Equal(t, graphserver.ThreadBusy, threadStatus(t, b, "t2"))
	})

	t.Run("Multitask", func(t *testing.T) {
		t.Parallel()
		for _, strategy := range []string{graphserver.MultitaskReject, graphserver.MultitaskInterrupt, graphserver.MultitaskRollback, graphserver.MultitaskEnqueue} {
			t.Run(strategy, func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				insertRun(t, b.rs, runOpts{ID: "running", ThreadID: "t1"})
				claimed, err := b.rs.ClaimRun(t.Context(), "w", at(1), at(60))
				require.NoError(t, err)
				require.Equal(t, "running", claimed.Run.RunID)
				insertRun(t, b.rs, runOpts{ID: "pending", ThreadID: "t1", CreatedAt: at(2)})
				created, err := b.rs.CreateRun(t.Context(), newRun(runOpts{ID: "new", ThreadID: "t1", Strategy: strategy, CreatedAt: at(3)}),
					&driver.RunInsert{Owner: "w2", LeaseUntil: at(60)})
				var cancelled []driver.CancelledRun
				if created != nil {
					cancelled = created.Cancelled
					require.False(t, created.Claimed, "the thread still has a running run")
				}
				switch strategy {
				case graphserver.MultitaskReject:
					requireCode(t, err, graphserver.ECONFLICT)
					require.Equal(t, graphserver.MultitaskRejectMessage, graphserver.ErrorMessage(err))
					_, err = b.rs.GetRun(t.Context(), "", "new", nil)
					requireCode(t, err, graphserver.ENOTFOUND)
				case graphserver.MultitaskEnqueue:
					require.NoError(t, err)
					require.Empty(t, cancelled)
				case graphserver.MultitaskInterrupt:
					require.NoError(t, err)
					require.ElementsMatch(t, []driver.CancelledRun{
						{RunID: "running", ThreadID: "t1", Status: graphserver.RunRunning, Action: graphserver.CancelInterrupt},
						{RunID: "pending", ThreadID: "t1", Status: graphserver.RunInterrupted, Action: graphserver.CancelInterrupt},
					}, cancelled)
					require.Equal(t, graphserver.RunInterrupted, runStatus(t, b, "pending"))
					action, err := b.rs.RenewRunLease(t.Context(), "running", "w", at(90))
					require.NoError(t, err)
					require.Equal(t, graphserver.CancelInterrupt, action)
				case graphserver.MultitaskRollback:
					require.NoError(t, err)
					require.Len(t, cancelled, 2)
					_, err = b.rs.GetRun(t.Context(), "", "pending", nil)
					requireCode(t, err, graphserver.ENOTFOUND)
					action, err := b.rs.RenewRunLease(t.Context(), "running", "w", at(90))
					require.NoError(t, err)
					require.Equal(t, graphserver.CancelRollback, action)
				}
			})
		}
	})

	t.Run("ClaimAtInsert", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		r := newRun(runOpts{ID: "r1", ThreadID: "t1"})
		created, err := b.rs.CreateRun(t.Context(), r, &driver.RunInsert{Owner: "w", LeaseUntil: at(30)})
		require.NoError(t, err)
		require.True(t, created.Claimed)
		require.Equal(t, graphserver.RunRunning, runStatus(t, b, "r1"))
		_, err = b.rs.RenewRunLease(t.Context(), "r1", "w", at(40))
		require.NoError(t, err)
		// Queued behind r1, and delayed runs, are not claimed at insert.
		created, err = b.rs.CreateRun(t.Context(), newRun(runOpts{ID: "r2", ThreadID: "t1"}), &driver.RunInsert{Owner: "w", LeaseUntil: at(30)})
		require.NoError(t, err)
		require.False(t, created.Claimed)
		createThread(t, b.st, threadOpts{ID: "t2"})
		created, err = b.rs.CreateRun(t.Context(), newRun(runOpts{ID: "r3", ThreadID: "t2", CreatedAt: at(5)}), &driver.RunInsert{Owner: "w", LeaseUntil: at(30)})
		require.NoError(t, err)
		require.False(t, created.Claimed)
		require.Equal(t, graphserver.RunPending, runStatus(t, b, "r3"))
	})

	// A run claimed at insertion with Preload gets its thread's latest root
	// checkpoint, read in the insertion's transaction after the multitask
	// strategy applied; a run not claimed gets none.
	t.Run("PreloadAtInsert", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		preload := &driver.RunInsert{Owner: "w", LeaseUntil: at(30), Preload: true}
		created, err := b.rs.CreateRun(ctx, newRun(runOpts{ID: "r0", ThreadID: "t1"}), preload)
		require.NoError(t, err)
		require.True(t, created.Claimed)
		require.True(t, created.Preloaded)
		require.Nil(t, created.Checkpoint, "t1 has no checkpoint yet")
		require.NoError(t, b.rs.PutRunCheckpoint(ctx, "r0", "w", &driver.CheckpointRecord{ThreadID: "t1", CheckpointID: "c1", RunID: "r0",
			CreatedAt: at(1), ChannelVersions: map[string]string{"x": "1"}, NewBlobs: []driver.ChannelBlob{blob("x", "1", "", `1`)}}))
		require.NoError(t, b.rs.PutRunWrites(ctx, "r0", "w", "t1", "", "c1", "a", []driver.PendingWrite{{TaskID: "a", Channel: "x", Value: json.RawMessage(`5`)}}))
		require.NoError(t, b.rs.FinishRun(ctx, &driver.RunFinish{RunID: "r0", Owner: "w", Status: graphserver.RunInterrupted, Now: at(2)}))
		want, err := b.st.GetCheckpoint(ctx, "t1", "", "")
		require.NoError(t, err)

		// r1, claimed: c1 with its pending writes, as GetCheckpoint reads it.
		created, err = b.rs.CreateRun(ctx, newRun(runOpts{ID: "r1", ThreadID: "t1"}), preload)
		require.NoError(t, err)
		require.True(t, created.Claimed && created.Preloaded)
		require.Equal(t, want, created.Checkpoint)
		// r1 writes c2 and is given back to the queue (a server closing):
		// pending, with a checkpoint of its own.
		require.NoError(t, b.rs.PutRunCheckpoint(ctx, "r1", "w", &driver.CheckpointRecord{ThreadID: "t1", CheckpointID: "c2", ParentCheckpointID: "c1",
			RunID: "r1", CreatedAt: at(3), ChannelVersions: map[string]string{"x": "2"}, NewBlobs: []driver.ChannelBlob{blob("x", "2", "", `2`)}}))
		require.NoError(t, b.rs.ReleaseRun(ctx, "r1", "w", at(4)))

		// Enqueued behind r1: neither claimed nor preloaded.
		created, err = b.rs.CreateRun(ctx, newRun(runOpts{ID: "r2", ThreadID: "t1"}), preload)
		require.NoError(t, err)
		require.False(t, created.Claimed || created.Preloaded)
		require.Nil(t, created.Checkpoint)
		// Rolling back r1 and r2 deletes c2 with r1 in the transaction
		// that claims r3: r3 starts from c1, not from c2.
		created, err = b.rs.CreateRun(ctx, newRun(runOpts{ID: "r3", ThreadID: "t1", Strategy: graphserver.MultitaskRollback}), preload)
		require.NoError(t, err)
		require.True(t, created.Claimed && created.Preloaded)
		require.Len(t, created.Cancelled, 2)
		require.NotNil(t, created.Checkpoint)
		require.Equal(t, "c1", created.Checkpoint.CheckpointID, "not the checkpoint of the run rolled back")
		requireValues(t, map[string]string{"x": `1`}, created.Checkpoint.Values)
		require.Equal(t, want.PendingWrites, created.Checkpoint.PendingWrites)

		// Claimed without Preload: nothing read.
		createThread(t, b.st, threadOpts{ID: "t2"})
		created, err = b.rs.CreateRun(ctx, newRun(runOpts{ID: "r4", ThreadID: "t2"}), &driver.RunInsert{Owner: "w", LeaseUntil: at(30)})
		require.NoError(t, err)
		require.True(t, created.Claimed)
		require.False(t, created.Preloaded)
	})

	t.Run("ClaimOrder", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createThread(t, b.st, threadOpts{ID: "t2"})
		insertRun(t, b.rs, runOpts{ID: "a", ThreadID: "t1", CreatedAt: at(0)})
		insertRun(t, b.rs, runOpts{ID: "b", ThreadID: "t1", CreatedAt: at(1)})
		insertRun(t, b.rs, runOpts{ID: "c", ThreadID: "t2", CreatedAt: at(2)})
		insertRun(t, b.rs, runOpts{ID: "later", ThreadID: "t2", CreatedAt: at(100)})

		q, err := b.rs.ClaimRun(t.Context(), "w", at(10), at(70))
		require.NoError(t, err)
		require.Equal(t, "a", q.Run.RunID)
		require.Equal(t, 1, q.Attempt)
		require.Equal(t, graphserver.RunRunning, q.Run.Status)
		// b waits for a (same thread); c is next.
		q, err = b.rs.ClaimRun(t.Context(), "w", at(10), at(70))
		require.NoError(t, err)
		require.Equal(t, "c", q.Run.RunID)
		q, err = b.rs.ClaimRun(t.Context(), "w", at(10), at(70))
		require.NoError(t, err)
		require.Nil(t, q)
		// after_seconds: "later" is not eligible before its created_at.
		endRun(t, b.st, "c", graphserver.RunSuccess)
		q, err = b.rs.ClaimRun(t.Context(), "w", at(12), at(70))
		require.NoError(t, err)
		require.Nil(t, q)
		q, err = b.rs.ClaimRun(t.Context(), "w", at(100), at(170))
		require.NoError(t, err)
		require.Equal(t, "later", q.Run.RunID)
	})

	t.Run("ConcurrentClaims", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		const n = 20
		for i := range n {
			id := fmt.Sprintf("t%02d", i+10)
			createThread(t, b.st, threadOpts{ID: id})
			insertRun(t, b.rs, runOpts{ID: "r" + id, ThreadID: id})
		}
		claimed := make(chan string, n*2)
		errs := make(chan error, 8)
		for range 8 {
			go func() {
				for {
					q, err := b.rs.ClaimRun(t.Context(), "w", at(1), at(60))
					if err != nil || q == nil {
						errs <- err
						return
					}
					claimed <- q.Run.RunID
				}
			}()
		}
		for range 8 {
			require.NoError(t, <-errs)
		}
		close(claimed)
		seen := map[string]bool{}
		for id := range claimed {
			require.False(t, seen[id], "run %s claimed twice", id)
			seen[id] = true
		}
		require.Len(t, seen, n)
	})

	t.Run("LeaseRenewReleaseFinish", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		insertRun(t, b.rs, runOpts{ID: "r1", ThreadID: "t1", Webhook: "https://example.com/h"})
		q, err := b.rs.ClaimRun(t.Context(), "w1", at(1), at(31))
		require.NoError(t, err)
		require.Equal(t, "r1", q.Run.RunID)

		action, err := b.rs.RenewRunLease(t.Context(), "r1", "w1", at(61))
		require.NoError(t, err)
		require.Empty(t, action)
		_, err = b.rs.RenewRunLease(t.Context(), "r1", "other", at(61))
		requireCode(t, err, graphserver.ENOTFOUND)

		require.NoError(t, b.rs.ReleaseRun(t.Context(), "r1", "w1", at(2)))
		require.Equal(t, graphserver.RunPending, runStatus(t, b, "r1"))
		requireCode(t, b.rs.ReleaseRun(t.Context(), "r1", "w1", at(2)), graphserver.ENOTFOUND)

		q, err = b.rs.ClaimRun(t.Context(), "w2", at(3), at(33))
		require.NoError(t, err)
		require.Equal(t, 2, q.Attempt)
		requireCode(t, b.rs.FinishRun(t.Context(), &driver.RunFinish{RunID: "r1", Owner: "w1", Status: graphserver.RunSuccess, Now: at(4)}),
			graphserver.ENOTFOUND)
		d := &driver.WebhookDelivery{ID: "d1", RunID: "r1", URL: "https://example.com/h", Body: json.RawMessage(`{"run_id":"r1"}`), NextAt: at(4)}
		require.NoError(t, b.rs.FinishRun(t.Context(), &driver.RunFinish{RunID: "r1", Owner: "w2", Status: graphserver.RunSuccess,
			Summary: &driver.ThreadSummary{Status: graphserver.ThreadInterrupted, Values: json.RawMessage(`{"v":2}`),
				Interrupts: map[string][]graphserver.Interrupt{"task": {{Value: "q", ID: "i1"}}}},
			Webhook: d, Now: at(4)}))
		require.Equal(t, graphserver.RunSuccess, runStatus(t, b, "r1"))
		th, err := b.st.GetThread(t.Context(), "t1", nil)
		require.NoError(t, err)
		require.Equal(t, graphserver.ThreadInterrupted, th.Status)
		require.JSONEq(t, `{"v":2}`, string(th.Values))
		require.Equal(t, map[string][]graphserver.Interrupt{"task": {{Value: "q", ID: "i1"}}}, th.Interrupts)

		// Webhook outbox: claimed when due, held while leased, retried, deleted when done.
		ds, err := b.rs.ClaimWebhooks(t.Context(), at(3), at(100), 10)
		require.NoError(t, err)
		require.Empty(t, ds)
		ds, err = b.rs.ClaimWebhooks(t.Context(), at(5), at(100), 10)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		require.Equal(t, "d1", ds[0].ID)
		require.JSONEq(t, `{"run_id":"r1"}`, string(ds[0].Body))
		ds2, err := b.rs.ClaimWebhooks(t.Context(), at(6), at(100), 10)
		require.NoError(t, err)
		require.Empty(t, ds2)
		require.NoError(t, b.rs.UpdateWebhook(t.Context(), "d1", 1, false, at(7), "status 503"))
		ds, err = b.rs.ClaimWebhooks(t.Context(), at(8), at(100), 10)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		require.Equal(t, 1, ds[0].Attempts)
		require.NoError(t, b.rs.UpdateWebhook(t.Context(), "d1", 2, true, time.Time{}, ""))
		ds, err = b.rs.ClaimWebhooks(t.Context(), at(1000), at(1100), 10)
		require.NoError(t, err)
		require.Empty(t, ds)
	})

	t.Run("FinishBusyWhileOthersQueued", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		insertRun(t, b.rs, runOpts{ID: "r1", ThreadID: "t1"})
		insertRun(t, b.rs, runOpts{ID: "r2", ThreadID: "t1", CreatedAt: at(1)})
		_, err := b.rs.ClaimRun(t.Context(), "w", at(5), at(60))
		require.NoError(t, err)
		require.NoError(t, b.rs.FinishRun(t.Context(), &driver.RunFinish{RunID: "r1", Owner: "w", Status: graphserver.RunError,
			Summary: &driver.ThreadSummary{Status: graphserver.ThreadError, Error: json.RawMessage(`{"error":"E","message":"m"}`)}, Now: at(6)}))
		require.Equal(t, graphserver.ThreadBusy, threadStatus(t, b, "t1"))
	})

	// The run's last checkpoints are checked before the transaction that
	// ends it (Tx.PutCheckpoints does not check them): an invalid one
	// fails the whole end, which leaves the run held and saves nothing.
	t.Run("FinishInvalidCheckpoints", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		insertRun(t, b.rs, runOpts{ID: "r1", ThreadID: "t1"})
		_, err := b.rs.ClaimRun(t.Context(), "w", at(5), at(60))
		require.NoError(t, err)
		cp := func(id, parent, data string) *driver.CheckpointRecord {
			return &driver.CheckpointRecord{ThreadID: "t1", CheckpointID: id, ParentCheckpointID: parent, RunID: "r1",
				CreatedAt: at(5), ChannelVersions: map[string]string{"a": id},
				NewBlobs: []driver.ChannelBlob{{Channel: "a", Version: id, Data: json.RawMessage(data)}}}
		}
		finish := func(cps ...*driver.CheckpointRecord) error {
			return b.rs.FinishRun(t.Context(), &driver.RunFinish{RunID: "r1", Owner: "w", Status: graphserver.RunSuccess,
				Summary:     &driver.ThreadSummary{Status: graphserver.ThreadIdle, Values: json.RawMessage(`{"a":1}`)},
				Checkpoints: cps, Now: at(6)})
		}
		requireCode(t, finish(cp("c1", "", `1`), cp("c2", "c1", `{bad`)), graphserver.EINVALID)
		require.Equal(t, graphserver.RunRunning, runStatus(t, b, "r1"))
		_, err = b.st.GetCheckpoint(t.Context(), "t1", "", "")
		requireCode(t, err, graphserver.ENOTFOUND)

		require.NoError(t, finish(cp("c1", "", `1`), cp("c2", "c1", `2`)))
		require.Equal(t, graphserver.RunSuccess, runStatus(t, b, "r1"))
		got, err := b.st.GetCheckpoint(t.Context(), "t1", "", "")
		require.NoError(t, err)
		require.Equal(t, "c2", got.CheckpointID)
		requireValues(t, map[string]string{"a": `2`}, got.Values)
	})

	t.Run("SummaryKeepsBusy", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// A state update computed its summary before a run was created.
		insertRun(t, b.rs, runOpts{ID: "r1", ThreadID: "t1"})
		require.NoError(t, b.rs.SetThreadSummary(t.Context(), "t1", &driver.ThreadSummary{Status: graphserver.ThreadInterrupted,
			Values: json.RawMessage(`{"v":1}`), Interrupts: map[string][]graphserver.Interrupt{"task": {{Value: "q", ID: "i1"}}}}, at(2)))
		th, err := b.st.GetThread(t.Context(), "t1", nil)
		require.NoError(t, err)
		require.Equal(t, graphserver.ThreadBusy, th.Status)
		require.JSONEq(t, `{"v":1}`, string(th.Values))
		require.Len(t, th.Interrupts, 1)

		_, err = b.rs.CancelRuns(t.Context(), &graphserver.RunCancelSelect{ThreadID: "t1", RunIDs: []string{"r1"}}, graphserver.CancelInterrupt, at(3), nil)
		require.NoError(t, err)
		require.NoError(t, b.rs.SetThreadSummary(t.Context(), "t1", &driver.ThreadSummary{Status: graphserver.ThreadInterrupted}, at(4)))
		require.Equal(t, graphserver.ThreadInterrupted, threadStatus(t, b, "t1"))
	})

	t.Run("LatestCheckpointNotByRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		put := func(id, runID, ns string) {
			t.Helper()
			require.NoError(t, b.st.PutCheckpoint(t.Context(), &driver.CheckpointRecord{ThreadID: "t1", NS: ns,
				CheckpointID: id, RunID: runID, CreatedAt: at(1), ChannelVersions: map[string]string{}}))
		}
		id, err := b.rs.LatestCheckpointNotByRun(t.Context(), "t1", "r1")
		require.NoError(t, err)
		require.Empty(t, id)
		put("00000000-0000-7000-8000-000000000001", "r0", "")
		put("00000000-0000-7000-8000-000000000002", "", "")
		for i := 3; i < 150; i++ {
			put(fmt.Sprintf("00000000-0000-7000-8000-%012d", i), "r1", "")
		}
		put("00000000-0000-7000-8000-000000000999", "r0", "sub:1")
		id, err = b.rs.LatestCheckpointNotByRun(t.Context(), "t1", "r1")
		require.NoError(t, err)
		require.Equal(t, "00000000-0000-7000-8000-000000000002", id)
		id, err = b.rs.LatestCheckpointNotByRun(t.Context(), "t1", "r0")
		require.NoError(t, err)
		require.Equal(t, "00000000-0000-7000-8000-000000000149", id)
	})

	t.Run("FinishRollbackAndTemporary", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createThread(t, b.st, threadOpts{ID: "tmp"})
		insertRun(t, b.rs, runOpts{ID: "r1", ThreadID: "t1"})
		insertRun(t, b.rs, runOpts{ID: "r2", ThreadID: "tmp"})
		_, err := b.rs.ClaimRun(t.Context(), "w", at(5), at(60))
		require.NoError(t, err)
		_, err = b.rs.ClaimRun(t.Context(), "w", at(5), at(60))
		require.NoError(t, err)
		require.NoError(t, b.st.PutCheckpoint(t.Context(), &driver.CheckpointRecord{ThreadID: "t1", CheckpointID: "c1", RunID: "r1",
			CreatedAt: at(5), ChannelVersions: map[string]string{"a": "1"},
			NewBlobs: []driver.ChannelBlob{{Channel: "a", Version: "1", Data: json.RawMessage(`1`)}}}))
		require.NoError(t, b.rs.FinishRun(t.Context(), &driver.RunFinish{RunID: "r1", Owner: "w", Delete: true,
			Summary: &driver.ThreadSummary{Status: graphserver.ThreadIdle, Values: json.RawMessage(`null`)}, Now: at(6)}))
		_, err = b.rs.GetRun(t.Context(), "", "r1", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.GetCheckpoint(t.Context(), "t1", "", "c1")
		requireCode(t, err, graphserver.ENOTFOUND)
		require.Equal(t, graphserver.ThreadIdle, threadStatus(t, b, "t1"))

		require.NoError(t, b.rs.FinishRun(t.Context(), &driver.RunFinish{RunID: "r2", Owner: "w", Status: graphserver.RunSuccess,
			DeleteThread: true, Now: at(6)}))
		_, err = b.st.GetThread(t.Context(), "tmp", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.rs.GetRun(t.Context(), "", "r2", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
	})

	t.Run("RunCheckpointerRollback", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rc := b.st
		ctx := t.Context()
		pw := func(task, ch, v string) []driver.PendingWrite {
			return []driver.PendingWrite{{TaskID: task, Channel: ch, Value: json.RawMessage(v)}}
		}
		// r0 wrote c0 and paused there: task a interrupted, task b done.
		insertRun(t, b.rs, runOpts{ID: "r0", ThreadID: "t1"})
		_, err := b.rs.ClaimRun(ctx, "w0", at(1), at(60))
		require.NoError(t, err)
		require.NoError(t, rc.PutRunCheckpoint(ctx, "r0", "w0", &driver.CheckpointRecord{ThreadID: "t1", CheckpointID: "c0", RunID: "r0",
			CreatedAt: at(1), ChannelVersions: map[string]string{"x": "1"}, NewBlobs: []driver.ChannelBlob{blob("x", "1", "", `0`)}}))
		require.NoError(t, rc.PutRunWrites(ctx, "r0", "w0", "t1", "", "c0", "a", pw("a", "__interrupt__", `[{"value":"?"}]`)))
		require.NoError(t, rc.PutRunWrites(ctx, "r0", "w0", "t1", "", "c0", "b", pw("b", "x", `2`)))
		require.NoError(t, b.rs.FinishRun(ctx, &driver.RunFinish{RunID: "r0", Owner: "w0", Status: graphserver.RunInterrupted, Now: at(2)}))
		before, err := b.st.GetCheckpoint(ctx, "t1", "", "")
		require.NoError(t, err)
		require.Equal(t, "c0", before.CheckpointID)

		// r1 resumes from c0 (command update, task a's result), writes c1,
		// and is rolled back.
		insertRun(t, b.rs, runOpts{ID: "r1", ThreadID: "t1"})
		_, err = b.rs.ClaimRun(ctx, "w1", at(3), at(60))
		require.NoError(t, err)
		require.NoError(t, rc.PutRunWrites(ctx, "r1", "w1", "t1", "", "c0", "00000000-0000-0000-0000-000000000000", pw("00000000-0000-0000-0000-000000000000", "x", `7`)))
		require.NoError(t, rc.PutRunWrites(ctx, "r1", "w1", "t1", "", "c0", "a", pw("a", "x", `1`)))
		require.NoError(t, rc.PutRunCheckpoint(ctx, "r1", "w1", &driver.CheckpointRecord{ThreadID: "t1", CheckpointID: "c1", ParentCheckpointID: "c0",
			RunID: "r1", CreatedAt: at(3), ChannelVersions: map[string]string{"x": "2"}, NewBlobs: []driver.ChannelBlob{blob("x", "2", "", `10`)}}))
		mid, err := b.st.GetCheckpoint(ctx, "t1", "", "c0")
		require.NoError(t, err)
		require.Len(t, mid.PendingWrites, 3)
		require.NoError(t, b.rs.FinishRun(ctx, &driver.RunFinish{RunID: "r1", Owner: "w1", Delete: true, Now: at(4)}))

		after, err := b.st.GetCheckpoint(ctx, "t1", "", "")
		require.NoError(t, err)
		require.Equal(t, "c0", after.CheckpointID)
		require.ElementsMatch(t, before.PendingWrites, after.PendingWrites, "the thread is back to its state before r1")

		// Deleting r0 (finished) takes its writes with its checkpoint.
		require.NoError(t, b.rs.DeleteRun(ctx, "t1", "r0", nil))
		_, err = b.st.GetCheckpoint(ctx, "t1", "", "")
		requireCode(t, err, graphserver.ENOTFOUND)
	})

	t.Run("RunCheckpointerNeedsLease", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rc := b.st
		ctx := t.Context()
		insertRun(t, b.rs, runOpts{ID: "r1", ThreadID: "t1"})
		_, err := b.rs.ClaimRun(ctx, "w1", at(1), at(10))
		require.NoError(t, err)
		cp := func(id string) *driver.CheckpointRecord {
			return &driver.CheckpointRecord{ThreadID: "t1", CheckpointID: id, RunID: "r1", CreatedAt: at(1),
				ChannelVersions: map[string]string{"x": id}, NewBlobs: []driver.ChannelBlob{blob("x", id, "", `1`)}}
		}
		writes := []driver.PendingWrite{{TaskID: "a", Channel: "x", Value: json.RawMessage(`1`)}}
		// The thread's first checkpoint and a later one check the lease alike.
		requireCode(t, rc.PutRunCheckpoint(ctx, "r1", "other", cp("c0")), graphserver.ENOTFOUND)
		_, err = b.st.GetCheckpoint(ctx, "t1", "", "")
		requireCode(t, err, graphserver.ENOTFOUND)
		require.NoError(t, rc.PutRunCheckpoint(ctx, "r1", "w1", cp("c1")))
		requireCode(t, rc.PutRunCheckpoint(ctx, "r1", "other", cp("c2")), graphserver.ENOTFOUND)

		// The lease lapses and another claim takes the run over (the
		// Server's sweep puts it back to pending).
		require.NoError(t, withTx(t, ctx, b.st, func(ctx context.Context, tx driver.Tx) error {
			expired, err := tx.ExpiredRuns(ctx, at(20))
			if err != nil || len(expired) != 1 {
				return fmt.Errorf("expired runs %v: %w", expired, err)
			}
			return tx.SetRunStatus(ctx, "r1", graphserver.RunPending, at(20))
		}))
		_, err = b.rs.ClaimRun(ctx, "w2", at(21), at(80))
		require.NoError(t, err)
		requireCode(t, rc.PutRunCheckpoint(ctx, "r1", "w1", cp("c3")), graphserver.ENOTFOUND)
		requireCode(t, rc.PutRunWrites(ctx, "r1", "w1", "t1", "", "c1", "a", writes), graphserver.ENOTFOUND)
		got, err := b.st.GetCheckpoint(ctx, "t1", "", "")
		require.NoError(t, err)
		require.Equal(t, "c1", got.CheckpointID)
		require.Empty(t, got.PendingWrites)
		require.NoError(t, rc.PutRunCheckpoint(ctx, "r1", "w2", cp("c4")), "the new claim writes")
	})

	t.Run("PutRunCheckpointsNeedsLease", func(t *testing.T) {
		// RunCheckpointer.PutRunCheckpoints: each checkpoint as
		// PutRunCheckpoint saves it, in order, all or none.
		t.Parallel()
		b := setup(t)
		rcb := b.rs.Storage
		ctx := t.Context()
		insertRun(t, b.rs, runOpts{ID: "r1", ThreadID: "t1"})
		_, err := b.rs.ClaimRun(ctx, "w1", at(1), at(10))
		require.NoError(t, err)
		// cp's value of x is its parent's with its id appended.
		cp := func(id, parent string) *driver.CheckpointRecord {
			return &driver.CheckpointRecord{ThreadID: "t1", CheckpointID: id, ParentCheckpointID: parent, RunID: "r1", CreatedAt: at(1),
				ChannelVersions: map[string]string{"x": id}, NewBlobs: []driver.ChannelBlob{blob("x", id, parent, `["`+id+`"]`)}}
		}
		requireLatest := func(want string) {
			t.Helper()
			got, err := b.st.GetCheckpoint(ctx, "t1", "", "")
			if want == "" {
				requireCode(t, err, graphserver.ENOTFOUND)
				return
			}
			require.NoError(t, err)
			require.Equal(t, want, got.CheckpointID)
		}
		requireCode(t, rcb.PutRunCheckpoints(ctx, "r1", "other", []*driver.CheckpointRecord{cp("c0", ""), cp("c1", "c0")}), graphserver.ENOTFOUND)
		requireLatest("")
		require.NoError(t, rcb.PutRunCheckpoints(ctx, "r1", "w1", []*driver.CheckpointRecord{cp("c0", ""), cp("c1", "c0")}))
		got, err := b.st.GetCheckpoint(ctx, "t1", "", "c1")
		require.NoError(t, err)
		require.Equal(t, "r1", got.RunID)
		requireValues(t, map[string]string{"x": `["c0","c1"]`}, got.Values)
		requireCode(t, rcb.PutRunCheckpoints(ctx, "r1", "w1", []*driver.CheckpointRecord{cp("c2", "c1"), {ThreadID: "t1"}}), graphserver.EINVALID)
		requireLatest("c1")
		// A save whose ctx ended before it started writes nothing and says
		// so with ctx's error (the Server takes back a save still waiting).
		ended, cancel := context.WithCancel(ctx)
		cancel()
		require.ErrorIs(t, rcb.PutRunCheckpoints(ended, "r1", "w1", []*driver.CheckpointRecord{cp("c2", "c1")}), context.Canceled)
		require.ErrorIs(t, rcb.PutRunCheckpoint(ended, "r1", "w1", cp("c2", "c1")), context.Canceled)
		requireLatest("c1")

		// The lease lapses and another claim takes the run over.
		require.NoError(t, withTx(t, ctx, b.st, func(ctx context.Context, tx driver.Tx) error {
			return tx.SetRunStatus(ctx, "r1", graphserver.RunPending, at(20))
		}))
		_, err = b.rs.ClaimRun(ctx, "w2", at(21), at(80))
		require.NoError(t, err)
		requireCode(t, rcb.PutRunCheckpoints(ctx, "r1", "w1", []*driver.CheckpointRecord{cp("c2", "c1"), cp("c3", "c2")}), graphserver.ENOTFOUND)
		requireLatest("c1")
		require.NoError(t, rcb.PutRunCheckpoints(ctx, "r1", "w2", []*driver.CheckpointRecord{cp("c2", "c1")}), "the new claim writes")
		requireLatest("c2")

		// They are the run's: deleting it takes them.
		require.NoError(t, withTx(t, ctx, b.st, func(ctx context.Context, tx driver.Tx) error {
			return tx.DeleteRun(ctx, "t1", "r1")
		}))
		requireLatest("")
	})

	t.Run("Sweep", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for i, id := range []string{"t2", "t3", "t4"} {
			createThread(t, b.st, threadOpts{ID: id})
			insertRun(t, b.rs, runOpts{ID: "r" + id, ThreadID: id, CreatedAt: at(i)})
		}
		for range 3 {
			_, err := b.rs.ClaimRun(t.Context(), "dead", at(10), at(20))
			require.NoError(t, err)
		}
		// rt3 gets an interrupt recorded; rt4 is renewed by a live worker.
		_, err := b.rs.CancelRuns(t.Context(), &graphserver.RunCancelSelect{ThreadID: "t3", RunIDs: []string{"rt3"}}, graphserver.CancelInterrupt, at(11), nil)
		require.NoError(t, err)
		_, err = b.rs.RenewRunLease(t.Context(), "rt4", "dead", at(100))
		require.NoError(t, err)

		swept, err := b.rs.SweepRuns(t.Context(), at(15), 3)
		require.NoError(t, err)
		require.Empty(t, swept, "leases still valid")
		swept, err = b.rs.SweepRuns(t.Context(), at(30), 3)
		require.NoError(t, err)
		require.ElementsMatch(t, []driver.SweptRun{
			{RunID: "rt2", ThreadID: "t2", Status: graphserver.RunPending},
			{RunID: "rt3", ThreadID: "t3", Status: graphserver.RunInterrupted},
		}, swept)
		require.Equal(t, graphserver.RunRunning, runStatus(t, b, "rt4"))
		require.Equal(t, graphserver.ThreadIdle, threadStatus(t, b, "t3"))

		// Out of attempts: error, and the thread says so.
		for attempt := 2; attempt <= 3; attempt++ {
			q, err := b.rs.ClaimRun(t.Context(), "dead", at(40), at(41))
			require.NoError(t, err)
			require.Equal(t, "rt2", q.Run.RunID)
			require.Equal(t, attempt, q.Attempt)
			swept, err = b.rs.SweepRuns(t.Context(), at(50), 3)
			require.NoError(t, err)
			require.Len(t, swept, 1)
		}
		require.Equal(t, graphserver.RunError, swept[0].Status)
		require.Equal(t, graphserver.RunError, runStatus(t, b, "rt2"))
		th, err := b.st.GetThread(t.Context(), "t2", nil)
		require.NoError(t, err)
		require.Equal(t, graphserver.ThreadError, th.Status)
		require.Contains(t, string(th.Error), "MaxAttemptsExceeded")
	})

	t.Run("CancelAndDelete", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		insertRun(t, b.rs, runOpts{ID: "r1", ThreadID: "t1"})
		insertRun(t, b.rs, runOpts{ID: "r2", ThreadID: "t1", CreatedAt: at(1)})
		_, err := b.rs.ClaimRun(t.Context(), "w", at(5), at(60))
		require.NoError(t, err)

		requireCode(t, b.rs.DeleteRun(t.Context(), "t1", "r1", nil), graphserver.ECONFLICT)
		_, err = b.rs.CancelRuns(t.Context(), &graphserver.RunCancelSelect{ThreadID: "t1", RunIDs: []string{"r1", "nope"}}, graphserver.CancelInterrupt, at(6), nil)
		requireCode(t, err, graphserver.ENOTFOUND)

		cancelled, err := b.rs.CancelRuns(t.Context(), &graphserver.RunCancelSelect{Status: "pending"}, graphserver.CancelInterrupt, at(6), nil)
		require.NoError(t, err)
		require.Equal(t, []driver.CancelledRun{{RunID: "r2", ThreadID: "t1", Status: graphserver.RunInterrupted, Action: graphserver.CancelInterrupt}}, cancelled)
		require.Equal(t, graphserver.ThreadBusy, threadStatus(t, b, "t1"), "r1 still runs")

		cancelled, err = b.rs.CancelRuns(t.Context(), &graphserver.RunCancelSelect{Status: "all"}, graphserver.CancelRollback, at(7), graphserver.Filter{"owner": "bob"})
		require.NoError(t, err)
		require.Empty(t, cancelled, "hidden by the filter")
		cancelled, err = b.rs.CancelRuns(t.Context(), &graphserver.RunCancelSelect{Status: "all"}, graphserver.CancelRollback, at(7), nil)
		require.NoError(t, err)
		require.Equal(t, []driver.CancelledRun{{RunID: "r1", ThreadID: "t1", Status: graphserver.RunRunning, Action: graphserver.CancelRollback}}, cancelled)

		require.NoError(t, b.rs.DeleteRun(t.Context(), "t1", "r2", nil))
		requireCode(t, b.rs.DeleteRun(t.Context(), "t1", "r2", nil), graphserver.ENOTFOUND)

		// Deleting the thread deletes its runs.
		require.NoError(t, b.st.DeleteThread(t.Context(), "t1", nil))
		_, err = b.rs.GetRun(t.Context(), "", "r1", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
	})

	t.Run("RunStatuses", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		r := b.st
		insertRun(t, b.rs, runOpts{ID: "r1", ThreadID: "t1"})
		insertRun(t, b.rs, runOpts{ID: "r2", ThreadID: "t1", CreatedAt: at(1)})
		_, err := b.rs.ClaimRun(t.Context(), "w", at(5), at(60))
		require.NoError(t, err)
		ids := []string{"r1", "r2", "nope"}
		for i := range 1200 { // more ids than one SQL statement binds
			ids = append(ids, fmt.Sprintf("missing-%d", i))
		}
		got, err := r.RunStatuses(t.Context(), ids)
		require.NoError(t, err)
		require.Equal(t, map[string]string{"r1": graphserver.RunRunning, "r2": graphserver.RunPending}, got)
	})

	// A run ending outside FinishRun (cancelled while pending, ended by the
	// sweep) has its webhook queued and, if stateless, its thread deleted,
	// in the transaction that ends it: a crash cannot lose either.
	ended := func(t *testing.T, b *bundle, runID, status, errText string) {
		t.Helper()
		ds, err := b.rs.ClaimWebhooks(t.Context(), at(1000), at(1100), 10)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		require.Equal(t, runID, ds[0].RunID)
		require.Equal(t, "https://example.com/h", ds[0].URL)
		var body map[string]any
		require.NoError(t, json.Unmarshal(ds[0].Body, &body))
		require.Equal(t, runID, body["run_id"])
		require.Equal(t, status, body["status"])
		require.Nil(t, body["run_started_at"])
		require.NotNil(t, body["run_ended_at"])
		if errText != "" {
			require.Equal(t, errText, body["error"])
		}
	}
	t.Run("CancelPendingQueuesWebhookDropsTemporary", func(t *testing.T) {
		t.Parallel()
		for _, action := range []string{graphserver.CancelInterrupt, graphserver.CancelRollback} {
			t.Run(action, func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				createThread(t, b.st, threadOpts{ID: "tmp"})
				insertRun(t, b.rs, runOpts{ID: "r1", ThreadID: "tmp", Webhook: "https://example.com/h", Temporary: true})
				_, err := b.rs.CancelRuns(t.Context(), &graphserver.RunCancelSelect{ThreadID: "tmp", RunIDs: []string{"r1"}}, action, at(6), nil)
				require.NoError(t, err)
				ended(t, b, "r1", graphserver.RunInterrupted, "")
				_, err = b.st.GetThread(t.Context(), "tmp", nil)
				requireCode(t, err, graphserver.ENOTFOUND)
				_, err = b.rs.GetRun(t.Context(), "", "r1", nil)
				requireCode(t, err, graphserver.ENOTFOUND)
			})
		}
	})
	t.Run("MultitaskCancelQueuesWebhook", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		insertRun(t, b.rs, runOpts{ID: "r1", ThreadID: "t1", Webhook: "https://example.com/h", CreatedAt: at(50)})
		_, err := b.rs.CreateRun(t.Context(), newRun(runOpts{ID: "r2", ThreadID: "t1", Strategy: graphserver.MultitaskInterrupt}), &driver.RunInsert{})
		require.NoError(t, err)
		require.Equal(t, graphserver.RunInterrupted, runStatus(t, b, "r1"))
		ended(t, b, "r1", graphserver.RunInterrupted, "")
	})
	t.Run("SweepQueuesWebhookDropsTemporary", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ name, cancel, status, err string }{
			{"OutOfAttempts", "", graphserver.RunError, graphserver.RunMaxAttemptsMessage},
			{"Interrupt", graphserver.CancelInterrupt, graphserver.RunInterrupted, ""},
			{"Rollback", graphserver.CancelRollback, graphserver.RunInterrupted, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				createThread(t, b.st, threadOpts{ID: "tmp"})
				insertRun(t, b.rs, runOpts{ID: "r1", ThreadID: "tmp", Webhook: "https://example.com/h", Temporary: true})
				_, err := b.rs.ClaimRun(t.Context(), "dead", at(1), at(2))
				require.NoError(t, err)
				if tc.cancel != "" {
					_, err = b.rs.CancelRuns(t.Context(), &graphserver.RunCancelSelect{ThreadID: "tmp", RunIDs: []string{"r1"}}, tc.cancel, at(1), nil)
					require.NoError(t, err)
				}
				swept, err := b.rs.SweepRuns(t.Context(), at(10), 1)
				require.NoError(t, err)
				require.Len(t, swept, 1)
				ended(t, b, "r1", tc.status, tc.err)
				_, err = b.st.GetThread(t.Context(), "tmp", nil)
				requireCode(t, err, graphserver.ENOTFOUND)
			})
		}
	})
}
