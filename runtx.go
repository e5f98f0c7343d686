package graphserver

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"time"

	"github.com/graphserver/graphserver/driver"
)

// This file holds the run rules that span several rows: a run's creation
// with its multitask outcome, cancellations, a run's end, the lease sweep
// and the thread status they derive. They run inside one Storage.WithTx
// transaction each, over the small operations of Tx, so that every driver
// shares them. Storage.WithTx may run a function more than once: each one
// sets its results anew on every call.

// insertRun inserts r after checking its thread (see RunInsert): a missing
// thread gives ENOTFOUND unless opts.CreateThread is set, then that thread
// is inserted (at once, without looking for it, when opts.NewThread). When
// the thread has pending or running runs, the multitask strategy
// r.MultitaskStrategy applies: reject gives ECONFLICT (with
// MultitaskRejectMessage); interrupt and rollback cancel them (as
// cancelRuns does) and report them; enqueue leaves them. The thread is
// marked busy, opts.ThreadMetadata merged into its metadata, and its config
// replaced by opts.ThreadConfig when that is non-nil. When opts.Owner is set
// and the run can start at once (r.CreatedAt is not after r.UpdatedAt and,
// once the strategy applied, no other run of the thread is pending or
// running), it is inserted already claimed by Owner (status running,
// attempt 1, leased until opts.LeaseUntil) and the result says Claimed;
// with opts.Preload, it also holds the thread's latest root checkpoint
// (preloadCheckpoint).
func insertRun(ctx context.Context, st driver.Storage, r *Run, opts *driver.RunInsert) (*driver.RunCreated, error) {
	if opts == nil {
		opts = &driver.RunInsert{}
	}
	res := &driver.RunCreated{}
	err := st.WithTx(ctx, func(ctx context.Context, tx driver.Tx) error {
		*res = driver.RunCreated{}
		if opts.Cron != nil {
			if fired, err := tx.FireCron(ctx, opts.Cron); err != nil {
				return err
			} else if !fired {
				return errCronFired(opts.Cron)
			}
		}
		// A thread id made for this run (NewThread) is nobody's yet.
		inserted := opts.NewThread && opts.CreateThread != nil
		var head *driver.ThreadHead
		if !inserted {
			var err error
			head, err = tx.CheckThread(ctx, r.ThreadID, opts.Filter)
			if ErrorCode(err) == ENOTFOUND && opts.CreateThread != nil {
				inserted, head = true, nil
			} else if err != nil {
				return err
			}
		}
		if opts.Complete != nil {
			opts.Complete(head)
		}
		if inserted {
			// Inserted as the update below would leave it: busy, with the
			// metadata and config of the run.
			t := *opts.CreateThread
			t.Metadata = Metadata{}
			maps.Copy(t.Metadata, opts.CreateThread.Metadata)
			maps.Copy(t.Metadata, opts.ThreadMetadata)
			if opts.ThreadConfig != nil {
				t.Config = opts.ThreadConfig
			}
			t.Status, t.UpdatedAt = ThreadBusy, r.UpdatedAt
			if err := tx.InsertThread(ctx, &t, opts.NewThread && r.Kwargs.Temporary); err != nil {
				return err
			}
		}
		var active []driver.RunRef
		if !inserted { // a thread inserted just now has no runs
			active = head.Active
		}
		free := len(active) == 0 // no run of the thread stays pending or running
		if !free {
			switch r.MultitaskStrategy {
			case MultitaskReject:
				return Errorf(ECONFLICT, MultitaskRejectMessage)
			case MultitaskInterrupt, MultitaskRollback:
				action := CancelInterrupt
				if r.MultitaskStrategy == MultitaskRollback {
					action = CancelRollback
				}
				free = true
				for _, a := range active {
					c, err := cancelRun(ctx, tx, a, action, r.UpdatedAt)
					if err != nil {
						return err
					}
					res.Cancelled = append(res.Cancelled, c)
					if c.Status == RunRunning {
						free = false
					}
				}
			}
		}
		row := *r
		row.Status = RunPending
		var claim *driver.RunClaim
		if opts.Owner != "" && free && !r.CreatedAt.After(r.UpdatedAt) {
			claim = &driver.RunClaim{Owner: opts.Owner, LeaseUntil: opts.LeaseUntil}
			res.Claimed = true
		}
		if err := tx.InsertRun(ctx, &row, claim); err != nil {
			return err
		}
		if !inserted {
			// What the thread has already is not written again.
			w := &driver.ThreadWrite{Now: r.UpdatedAt, Status: ThreadBusy}
			if changedKeys(head.Metadata, opts.ThreadMetadata) != nil {
				w.MergeMetadata = opts.ThreadMetadata
			}
			if opts.ThreadConfig != nil && !sameJSON(head.Config, opts.ThreadConfig) {
				w.Config = opts.ThreadConfig
			}
			if err := tx.UpdateThread(ctx, r.ThreadID, w); err != nil {
				return err
			}
		}
		if claim != nil && opts.Preload {
			return preloadCheckpoint(ctx, tx, r.ThreadID, inserted && opts.NewThread, res)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// preloadCheckpoint reads, for a run claimed at its creation, its thread's
// latest root checkpoint into res (RunInsert.Preload), last in the
// creating transaction: after the multitask strategy deleted the
// checkpoints of the pending runs it rolled back. A thread made for the
// run (fresh) has none.
//
// The run's graph gets the record for its first load of that checkpoint
// (runCheckpointer.GetCheckpoint) instead of reading it again, which is
// right only while nothing can change the thread's latest root checkpoint
// between this commit and that load. What writes a thread's checkpoints:
//
//   - Runs: this run is claimed only when no other run of the thread is
//     pending or running once the strategy applied (when it cancels a
//     running run, this one waits, pending), and a run is claimed only on
//     a thread with no running run (ClaimRun), so no other run of the
//     thread starts before this one ends. A run that ended writes nothing
//     more: its writes check its lease in their transaction
//     (RunCheckpointer), and a rollback deletes its checkpoints in the
//     transaction that ends it, before this one. Pending runs this
//     insertion rolls back lose theirs above, in this transaction.
//   - State updates (update_state, supersteps, PATCH state) are refused
//     on a thread with a pending or running run, checked in the
//     transaction of their write (busyGuard): they commit before this
//     insertion, and are read here, or are refused.
//   - Deleting the thread (also prune delete, an assistant's deletion
//     with its threads) deletes this run: its writes are refused and it
//     stops. CopyThread writes a new thread, with no run yet.
//   - Neither DeleteRun (of a finished run of the thread) nor prune
//     keep_latest check the thread's runs; both race any run of the
//     thread, as they did before this hand-off: a run that had read the
//     checkpoint itself, just after this commit, would build on it in
//     the same way. keep_latest keeps the latest root checkpoint as it
//     is, but for its parent link.
//
// Subgraph namespaces are not preloaded: a run's subgraphs read their
// checkpoints as they start.
func preloadCheckpoint(ctx context.Context, tx driver.Tx, threadID string, fresh bool, res *driver.RunCreated) error {
	res.Preloaded = true
	if fresh {
		return nil
	}
	cp, err := tx.GetCheckpoint(ctx, threadID, "", "")
	if ErrorCode(err) == ENOTFOUND {
		return nil
	} else if err != nil {
		return err
	}
	res.Checkpoint = cp
	return nil
}

// sameJSON reports whether a and b, decoded JSON values (objects as
// map[string]any or Object), are equal. Values of other types, which
// decoding does not give, compare unequal: that only costs a write that
// could have been skipped.
func sameJSON(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		return sameJSONObject(a, b)
	case Object:
		return sameJSONObject(a, b)
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameJSON(a[i], b[i]) {
				return false
			}
		}
		return true
	case string, float64, bool, nil:
		return a == b
	}
	return false
}

func sameJSONObject(a map[string]any, b any) bool {
	var bm map[string]any
	switch b := b.(type) {
	case map[string]any:
		bm = b
	case Object:
		bm = b
	default:
		return false
	}
	if len(a) != len(bm) {
		return false
	}
	for k, v := range a {
		w, ok := bm[k]
		if !ok || !sameJSON(v, w) {
			return false
		}
	}
	return true
}

// errCronFired is the ECONFLICT of a run whose cron firing was claimed
// elsewhere (RunInsert.Cron).
func errCronFired(f *driver.CronFiring) error {
	return Errorf(ECONFLICT, "Cron %s is not due at %s: its firing was claimed elsewhere, or it was disabled or deleted.",
		f.CronID, f.Due.UTC().Format(time.RFC3339Nano))
}

// cancelRuns cancels the selected runs: pending runs become interrupted
// (action interrupt) or are deleted (rollback), with their thread's status
// recomputed; running runs get the action recorded for their worker to
// observe (RenewRunLease). Finished runs are left alone. ENOTFOUND when sel
// names runs by id and one of them does not exist (or filter hides it).
// Each pending run it ends gets its webhook queued (endedRunWebhook, status
// interrupted), and the temporary thread of a stateless run
// (Kwargs.Temporary) is deleted with it, as a finish's DeleteThread does.
func cancelRuns(ctx context.Context, st driver.Storage, sel *RunCancelSelect, action string, now time.Time, filter Filter) ([]driver.CancelledRun, error) {
	var out []driver.CancelledRun
	err := st.WithTx(ctx, func(ctx context.Context, tx driver.Tx) error {
		out = nil
		refs, err := tx.SelectRuns(ctx, sel, filter)
		if err != nil {
			return err
		}
		if len(sel.RunIDs) > 0 {
			want := map[string]bool{}
			for _, id := range sel.RunIDs {
				want[id] = true
			}
			if len(refs) < len(want) {
				return Errorf(ENOTFOUND, "Some runs were not found.")
			}
		}
		var threads []string
		seen := map[string]bool{}
		for _, a := range refs {
			if a.Status != RunPending && a.Status != RunRunning {
				continue
			}
			c, err := cancelRun(ctx, tx, a, action, now)
			if err != nil {
				return err
			}
			out = append(out, c)
			if c.Status != RunRunning && !seen[a.ThreadID] {
				seen[a.ThreadID] = true
				threads = append(threads, a.ThreadID)
			}
		}
		for _, id := range threads {
			if err := settleThread(ctx, tx, id, now); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// cancelRun cancels one active run inside tx: a pending run is interrupted
// or deleted at once (its webhook queued, a stateless run's thread
// deleted), a running one gets the action recorded.
func cancelRun(ctx context.Context, tx driver.Tx, a driver.RunRef, action string, now time.Time) (driver.CancelledRun, error) {
	c := driver.CancelledRun{RunID: a.RunID, ThreadID: a.ThreadID, Action: action}
	if a.Status == RunRunning {
		c.Status = RunRunning
		return c, tx.SetRunCancel(ctx, a.RunID, action, now)
	}
	run, err := endedOutside(ctx, tx, a.RunID, RunInterrupted, now, "")
	if err != nil {
		return c, err
	}
	if hasWebhook(run) {
		c.Run = run
	}
	if action == CancelRollback {
		c.Status = ""
		err = tx.DeleteRun(ctx, a.ThreadID, a.RunID)
	} else {
		c.Status = RunInterrupted
		err = tx.SetRunStatus(ctx, a.RunID, RunInterrupted, now)
	}
	if err != nil {
		return c, err
	}
	return c, dropTemporaryThread(ctx, tx, run)
}

// hasWebhook reports whether a run asked for a webhook.
func hasWebhook(run *Run) bool {
	return run.Kwargs.Webhook != nil && *run.Kwargs.Webhook != ""
}

// endedOutside reads a run that ends without finishRun (cancelled while
// pending, ended by the sweep) and queues its webhook (webhookStatus,
// errMsg) in tx. Call it before the run row changes or goes.
func endedOutside(ctx context.Context, tx driver.Tx, runID, webhookStatus string, now time.Time, errMsg string) (*Run, error) {
	run, err := tx.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	if d := endedRunWebhook(run, webhookStatus, now, errMsg); d != nil {
		if err := tx.InsertWebhook(ctx, d, now); err != nil {
			return nil, err
		}
	}
	return run, nil
}

// dropTemporaryThread deletes the temporary thread of a stateless run that
// ended (on_completion delete), with its runs and checkpoints.
func dropTemporaryThread(ctx context.Context, tx driver.Tx, run *Run) error {
	if !run.Kwargs.Temporary {
		return nil
	}
	return tx.DeleteThread(ctx, run.ThreadID)
}

// settleThread sets a busy thread with no pending or running run left to
// idle.
func settleThread(ctx context.Context, tx driver.Tx, threadID string, now time.Time) error {
	_, err := settleThreadActive(ctx, tx, threadID, now, nil)
	return err
}

// settleThreadActive is settleThread, reporting whether the thread has a
// pending or running run left. active, when not nil, is that already
// known (Tx.EndHeldRun reads it).
func settleThreadActive(ctx context.Context, tx driver.Tx, threadID string, now time.Time, active *bool) (bool, error) {
	busy, err := hasActiveRuns(ctx, tx, threadID, active)
	if err != nil || busy {
		return busy, err
	}
	err = tx.UpdateThread(ctx, threadID, &driver.ThreadWrite{Now: now, Status: ThreadIdle, IfStatus: ThreadBusy})
	if ErrorCode(err) == ENOTFOUND {
		return false, nil
	}
	return false, err
}

// hasActiveRuns reports whether a thread has a pending or running run:
// *known when not nil, else read.
func hasActiveRuns(ctx context.Context, tx driver.Tx, threadID string, known *bool) (bool, error) {
	if known != nil {
		return *known, nil
	}
	active, err := tx.ActiveRuns(ctx, threadID)
	return len(active) > 0, err
}

// threadStatus is the status a thread gets after a run or a state update:
// busy while it has a pending or running run (active, when not nil, says
// whether it has; else it is read), else status.
func threadStatus(ctx context.Context, tx driver.Tx, threadID, status string, active *bool) (string, error) {
	busy, err := hasActiveRuns(ctx, tx, threadID, active)
	if err != nil {
		return "", err
	}
	if busy {
		return ThreadBusy, nil
	}
	return status, nil
}

// writeSummary records a thread's summary after a run: the status is busy
// while other runs of the thread are pending or running (active, when not
// nil, says whether they are), which it reports. A missing thread is not
// an error.
func writeSummary(ctx context.Context, tx driver.Tx, threadID string, sum *driver.ThreadSummary, keepValues bool, now time.Time, active *bool) (bool, error) {
	status, err := threadStatus(ctx, tx, threadID, cmp.Or(sum.Status, ThreadIdle), active)
	if err != nil {
		return false, err
	}
	busy := status == ThreadBusy
	err = tx.UpdateThread(ctx, threadID, &driver.ThreadWrite{Now: now, Status: status, Summary: sum, KeepValues: keepValues})
	if ErrorCode(err) == ENOTFOUND {
		return busy, nil
	}
	return busy, err
}

// setThreadSummary records a thread's latest values, interrupts, status
// (idle when empty) and error after a state change, bumping updated_at and
// state_updated_at. The status stays busy while the thread has a pending or
// running run. ENOTFOUND when the thread is missing.
func setThreadSummary(ctx context.Context, st driver.Storage, threadID string, sum *driver.ThreadSummary, now time.Time) error {
	if sum == nil {
		sum = &driver.ThreadSummary{}
	}
	return st.WithTx(ctx, func(ctx context.Context, tx driver.Tx) error {
		status, err := threadStatus(ctx, tx, threadID, cmp.Or(sum.Status, ThreadIdle), nil)
		if err != nil {
			return err
		}
		return tx.UpdateThread(ctx, threadID, &driver.ThreadWrite{Now: now, Status: status, Summary: sum})
	})
}

// finishRun records the end of a run owner holds, in one transaction: see
// RunFinish. ENOTFOUND when owner no longer holds the run.
func finishRun(ctx context.Context, st driver.Storage, f *driver.RunFinish) error {
	_, err := finishRunActive(ctx, st, f)
	return err
}

// finishRunActive is finishRun, reporting whether the run's thread has a
// pending or running run left (one the dispatcher may claim now).
func finishRunActive(ctx context.Context, st driver.Storage, f *driver.RunFinish) (bool, error) {
	save := len(f.Checkpoints) > 0 && !f.Delete && !f.DeleteThread
	var invalid error
	if save {
		// Checked here, outside the transaction (Tx.PutCheckpoints); the
		// error is returned where the save would be.
		invalid = driver.CheckCheckpoints(f.Checkpoints)
	}
	left := false
	err := st.WithTx(ctx, func(ctx context.Context, tx driver.Tx) error {
		left = false
		threadID, active, err := endHeldRun(ctx, tx, f)
		if err != nil {
			return err
		}
		if save {
			if invalid != nil {
				return invalid
			}
			// After the lease check: they are the run's, saved only if it ends held.
			if err := tx.PutCheckpoints(ctx, f.Checkpoints); err != nil {
				return err
			}
		}
		switch {
		case f.DeleteThread:
			// Deleted with the run's end (endHeldRun).
		case f.Summary != nil:
			if left, err = writeSummary(ctx, tx, threadID, f.Summary, len(f.Summary.Values) == 0, f.Now, active); err != nil {
				return err
			}
		default:
			if left, err = settleThreadActive(ctx, tx, threadID, f.Now, active); err != nil {
				return err
			}
		}
		if f.Webhook != nil {
			return tx.InsertWebhook(ctx, f.Webhook, f.Now)
		}
		return nil
	})
	return left, err
}

// endHeldRun checks that f.Owner holds the run and ends its row as f says
// (status set, deleted, or deleted with its thread). It returns the
// run's thread, and whether the thread has another pending or running run
// when that was read with the end (nil when not).
func endHeldRun(ctx context.Context, tx driver.Tx, f *driver.RunFinish) (string, *bool, error) {
	switch {
	case f.DeleteThread:
		// The run goes with its thread (and with the run, what Delete
		// would delete).
		threadID, err := tx.DeleteHeldRunThread(ctx, f.RunID, f.Owner)
		return threadID, nil, err
	case f.Delete:
		held, err := tx.HeldRun(ctx, f.RunID, f.Owner)
		if err != nil {
			return "", nil, err
		}
		return held.ThreadID, nil, tx.DeleteRun(ctx, held.ThreadID, f.RunID)
	default:
		threadID, active, err := tx.EndHeldRun(ctx, f.RunID, f.Owner, f.Status, f.Now)
		return threadID, &active, err
	}
}

// maxAttemptsError is the thread error of a run that ran out of attempts.
var maxAttemptsError = func() json.RawMessage {
	b, _ := json.Marshal(map[string]string{"error": "MaxAttemptsExceeded", "message": RunMaxAttemptsMessage})
	return b
}()

// sweepExpired puts running runs whose lease expired before now back to
// pending, or ends them (see sweepRuns), and returns the runs it changed.
func sweepExpired(ctx context.Context, st driver.Storage, now time.Time, maxAttempts int) ([]driver.SweptRun, error) {
	var out []driver.SweptRun
	err := st.WithTx(ctx, func(ctx context.Context, tx driver.Tx) error {
		out = nil
		rows, err := tx.ExpiredRuns(ctx, now)
		if err != nil {
			return err
		}
		out, err = sweepRuns(ctx, tx, rows, now, maxAttempts)
		return err
	})
	return out, err
}

// recoverGone applies sweepRuns to the runs of workers the storage knows to
// be gone (RunRecoverer); nil when the storage cannot tell.
func recoverGone(ctx context.Context, st driver.Storage, now time.Time, maxAttempts int) ([]driver.SweptRun, error) {
	rr, ok := st.(driver.RunRecoverer)
	if !ok {
		return nil, nil
	}
	var out []driver.SweptRun
	err := rr.RecoverRuns(ctx, func(ctx context.Context, tx driver.Tx, rows []driver.RunRef) error {
		var err error
		out, err = sweepRuns(ctx, tx, rows, now, maxAttempts)
		return err
	})
	return out, err
}

// sweepRuns recovers runs whose worker is gone, inside tx: a run with a
// cancellation recorded ends as the action says (interrupted, or deleted
// for a rollback); a run that had maxAttempts attempts ends with status
// error (its thread gets status error and RunMaxAttemptsMessage); any
// other goes back to pending. Each run it ends gets its webhook queued
// (endedRunWebhook) and the temporary thread of a stateless run is deleted
// with it.
func sweepRuns(ctx context.Context, tx driver.Tx, rows []driver.RunRef, now time.Time, maxAttempts int) ([]driver.SweptRun, error) {
	out := make([]driver.SweptRun, 0, len(rows))
	for _, r := range rows {
		sw := driver.SweptRun{RunID: r.RunID, ThreadID: r.ThreadID}
		var ended *Run
		if r.CancelAction != "" || r.Attempt >= maxAttempts {
			status, msg := RunInterrupted, ""
			if r.CancelAction == "" {
				status, msg = RunError, RunMaxAttemptsMessage
			}
			run, err := endedOutside(ctx, tx, r.RunID, status, now, msg)
			if err != nil {
				return nil, err
			}
			ended = run
			if hasWebhook(run) {
				sw.Run = run
			}
		}
		switch {
		case r.CancelAction == CancelRollback:
			if err := tx.DeleteRun(ctx, r.ThreadID, r.RunID); err != nil {
				return nil, err
			}
			if err := settleThread(ctx, tx, r.ThreadID, now); err != nil {
				return nil, err
			}
		case r.CancelAction != "":
			sw.Status = RunInterrupted
			if err := tx.SetRunStatus(ctx, r.RunID, RunInterrupted, now); err != nil {
				return nil, err
			}
			if err := settleThread(ctx, tx, r.ThreadID, now); err != nil {
				return nil, err
			}
		case r.Attempt >= maxAttempts:
			sw.Status = RunError
			if err := tx.SetRunStatus(ctx, r.RunID, RunError, now); err != nil {
				return nil, err
			}
			sum := &driver.ThreadSummary{Status: ThreadError, Error: maxAttemptsError}
			if _, err := writeSummary(ctx, tx, r.ThreadID, sum, true, now, nil); err != nil {
				return nil, err
			}
		default:
			sw.Status = RunPending
			if err := tx.SetRunStatus(ctx, r.RunID, RunPending, now); err != nil {
				return nil, err
			}
		}
		if ended != nil {
			if err := dropTemporaryThread(ctx, tx, ended); err != nil {
				return nil, err
			}
		}
		out = append(out, sw)
	}
	return out, nil
}
