package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/graphserver/graphserver"
)

// runRow is a runs row.
type runRow struct {
	RunID             string    `db:"run_id"`
	ThreadID          string    `db:"thread_id"`
	AssistantID       string    `db:"assistant_id"`
	CreatedAt         time.Time `db:"created_at"`
	UpdatedAt         time.Time `db:"updated_at"`
	Status            string    `db:"status"`
	Metadata          string    `db:"metadata"`
	MultitaskStrategy string    `db:"multitask_strategy"`
	Kwargs            string    `db:"kwargs"`
	Attempt           int       `db:"attempt"`
}

const runColumns = `run_id, thread_id, assistant_id, created_at, updated_at, status, metadata, multitask_strategy, kwargs, attempt`

// runColumnsR is runColumns qualified with the alias r.
const runColumnsR = `r.run_id, r.thread_id, r.assistant_id, r.created_at, r.updated_at, r.status, r.metadata,
	r.multitask_strategy, r.kwargs, r.attempt`

func (r *runRow) run() (*graphserver.Run, error) {
	run := &graphserver.Run{RunID: r.RunID, ThreadID: r.ThreadID, AssistantID: r.AssistantID, Status: r.Status,
		MultitaskStrategy: r.MultitaskStrategy, CreatedAt: utc(r.CreatedAt), UpdatedAt: utc(r.UpdatedAt), Attempt: r.Attempt}
	var err error
	if run.Metadata, err = unmarshalObject(r.Metadata); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(r.Kwargs), &run.Kwargs); err != nil {
		return nil, fmt.Errorf("decode stored run kwargs: %w", err)
	}
	return run, nil
}

func runNotFound(id string) error {
	return graphserver.Errorf(graphserver.ENOTFOUND, "Run with ID %s not found", id)
}

// isActive reports whether a run status is pending or running.
func isActive(status string) bool {
	return status == graphserver.RunPending || status == graphserver.RunRunning
}

// CreateRun implements graphserver.RunStorage. It locks the thread's row
// first, so run creations on one thread, in any process, apply their
// multitask strategy one after the other.
func (db *DB) CreateRun(ctx context.Context, r *graphserver.Run, opts *graphserver.RunInsert) (*graphserver.RunCreated, error) {
	if opts == nil {
		opts = &graphserver.RunInsert{}
	}
	metadata, err := marshalObject(r.Metadata)
	if err != nil {
		return nil, err
	}
	kwargs, err := marshalJSON(r.Kwargs)
	if err != nil {
		return nil, err
	}
	threadMeta, err := marshalObject(opts.ThreadMetadata)
	if err != nil {
		return nil, err
	}
	var threadCfg *string
	if opts.ThreadConfig != nil {
		c, err := marshalObject(opts.ThreadConfig)
		if err != nil {
			return nil, err
		}
		threadCfg = &c
	}
	res := &graphserver.RunCreated{}
	err = db.writeTx(ctx, func(tx pgx.Tx) error {
		*res = graphserver.RunCreated{}
		now := r.UpdatedAt
		if opts.Cron != nil {
			if fired, err := fireCron(ctx, tx, opts.Cron); err != nil {
				return err
			} else if !fired {
				return errCronFired(opts.Cron)
			}
		}
		inserted := false
		if err := lockThread(ctx, tx, r.ThreadID, opts.Filter); graphserver.ErrorCode(err) == graphserver.ENOTFOUND {
			if opts.CreateThread == nil {
				return err
			}
			// Inserted as the update below would leave it: busy, with the
			// metadata and config of the run.
			if err := insertThread(ctx, tx, opts.CreateThread, threadMeta, threadCfg, now); err != nil {
				return err
			}
			inserted = true
		} else if err != nil {
			return err
		}
		// Locked: a claim in progress is waited for and seen as running.
		active, err := selectRows[activeRun](ctx, tx, `SELECT run_id, thread_id, status FROM runs
			WHERE thread_id = ? AND status IN ('pending', 'running') FOR UPDATE`, r.ThreadID)
		if err != nil {
			return fmt.Errorf("list active runs: %w", err)
		}
		free := true // no run of the thread stays pending or running
		if len(active) > 0 {
			free = false
			switch r.MultitaskStrategy {
			case graphserver.MultitaskReject:
				return graphserver.Errorf(graphserver.ECONFLICT, graphserver.MultitaskRejectMessage)
			case graphserver.MultitaskInterrupt, graphserver.MultitaskRollback:
				action := graphserver.CancelInterrupt
				if r.MultitaskStrategy == graphserver.MultitaskRollback {
					action = graphserver.CancelRollback
				}
				free = true
				for _, a := range active {
					c, err := cancelRun(ctx, tx, a, action, r.UpdatedAt)
					if err != nil {
						return err
					}
					res.Cancelled = append(res.Cancelled, c)
					if c.Status == graphserver.RunRunning {
						free = false
					}
				}
			}
		}
		status, attempt := graphserver.RunPending, 0
		var owner *string
		var lease *time.Time
		if opts.Owner != "" && free && !r.CreatedAt.After(r.UpdatedAt) {
			status, attempt, res.Claimed = graphserver.RunRunning, 1, true
			owner, lease = &opts.Owner, &opts.LeaseUntil
		}
		if _, err := exec(ctx, tx, `INSERT INTO runs (`+runColumns+`, lease_owner, lease_expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.RunID, r.ThreadID, r.AssistantID, r.CreatedAt, now, status, metadata,
			r.MultitaskStrategy, kwargs, attempt, owner, lease); err != nil {
			return fmt.Errorf("insert run: %w", err)
		}
		if !res.Claimed {
			if err := notifyTx(ctx, tx, channelRunQueued, r.RunID); err != nil {
				return err
			}
		}
		if inserted {
			return nil
		}
		if _, err := exec(ctx, tx, `UPDATE threads SET status = 'busy', metadata = metadata || ?::jsonb,
			config = coalesce(?::jsonb, config), updated_at = ? WHERE thread_id = ?`,
			threadMeta, threadCfg, now, r.ThreadID); err != nil {
			return fmt.Errorf("mark thread busy: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// insertThread inserts a new thread row inside tx for a run: status busy,
// metaPatch merged into its metadata, config replaced by cfg when set,
// updated at updatedAt.
func insertThread(ctx context.Context, tx pgx.Tx, t *graphserver.Thread, metaPatch string, cfg *string, updatedAt time.Time) error {
	metadata, err := marshalObject(t.Metadata)
	if err != nil {
		return err
	}
	config, err := marshalObject(t.Config)
	if err != nil {
		return err
	}
	tctx, err := marshalObject(t.Context)
	if err != nil {
		return err
	}
	values, err := nullRaw(t.Values)
	if err != nil {
		return err
	}
	n, err := exec(ctx, tx, `INSERT INTO threads (thread_id, created_at, updated_at, state_updated_at, metadata,
		config, context, status, state_values, interrupts) VALUES (?, ?, ?, ?, ?::jsonb || ?::jsonb, coalesce(?::jsonb, ?::jsonb), ?, 'busy', ?, '{}')
		ON CONFLICT (thread_id) DO NOTHING`,
		t.ThreadID, t.CreatedAt, updatedAt, t.CreatedAt, metadata, metaPatch, cfg, config, tctx, values)
	if err != nil {
		return fmt.Errorf("insert thread: %w", err)
	} else if n == 0 {
		return graphserver.Errorf(graphserver.ECONFLICT, "Thread with ID %s already exists", t.ThreadID)
	}
	return nil
}

// activeRun is a pending or running run.
type activeRun struct {
	RunID    string `db:"run_id"`
	ThreadID string `db:"thread_id"`
	Status   string `db:"status"`
}

// cancelRun cancels one active run (its row locked) inside tx: a pending
// run is interrupted or deleted at once (endedOutside queues its webhook,
// dropTemporaryThread deletes a stateless run's thread), a running one gets
// the action recorded and its worker notified.
func cancelRun(ctx context.Context, tx pgx.Tx, a activeRun, action string, now time.Time) (graphserver.CancelledRun, error) {
	c := graphserver.CancelledRun{RunID: a.RunID, ThreadID: a.ThreadID, Action: action}
	if a.Status == graphserver.RunRunning {
		c.Status = graphserver.RunRunning
		if _, err := exec(ctx, tx, `UPDATE runs SET cancel_action = ?, updated_at = ? WHERE run_id = ?`, action, now, a.RunID); err != nil {
			return c, fmt.Errorf("cancel run %s: %w", a.RunID, err)
		}
		return c, notifyTx(ctx, tx, channelCancel, action+" "+a.RunID)
	}
	run, err := endedOutside(ctx, tx, a.RunID, graphserver.RunInterrupted, now, "")
	if err != nil {
		return c, err
	}
	if hasWebhook(run) {
		c.Run = run
	}
	if action == graphserver.CancelRollback {
		c.Status = ""
		_, err = exec(ctx, tx, `DELETE FROM runs WHERE run_id = ?`, a.RunID)
	} else {
		c.Status = graphserver.RunInterrupted
		_, err = exec(ctx, tx, `UPDATE runs SET status = 'interrupted', updated_at = ? WHERE run_id = ?`, now, a.RunID)
	}
	if err != nil {
		return c, fmt.Errorf("cancel run %s: %w", a.RunID, err)
	}
	if err := notifyTx(ctx, tx, channelRunEnded, a.RunID); err != nil {
		return c, err
	}
	// A run of the thread queued behind this one may start now.
	if err := notifyTx(ctx, tx, channelRunQueued, a.RunID); err != nil {
		return c, err
	}
	return c, dropTemporaryThread(ctx, tx, run)
}

// hasWebhook reports whether a run asked for a webhook.
func hasWebhook(run *graphserver.Run) bool {
	return run.Kwargs.Webhook != nil && *run.Kwargs.Webhook != ""
}

// endedOutside reads a run that ends without FinishRun (cancelled while
// pending, ended by the sweep) and queues its webhook in tx. Call it before
// the run row changes or goes.
func endedOutside(ctx context.Context, tx pgx.Tx, runID, webhookStatus string, now time.Time, errMsg string) (*graphserver.Run, error) {
	r, err := getRow[runRow](ctx, tx, `SELECT `+runColumns+` FROM runs WHERE run_id = ?`, runID)
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", runID, err)
	}
	run, err := r.run()
	if err != nil {
		return nil, err
	}
	if d := graphserver.EndedRunWebhook(run, webhookStatus, now, errMsg); d != nil {
		if err := insertWebhook(ctx, tx, d, now); err != nil {
			return nil, err
		}
	}
	return run, nil
}

// dropTemporaryThread deletes the temporary thread of a stateless run that
// ended (on_completion delete), with its runs and checkpoints, as FinishRun
// does with DeleteThread.
func dropTemporaryThread(ctx context.Context, tx pgx.Tx, run *graphserver.Run) error {
	if !run.Kwargs.Temporary {
		return nil
	}
	if _, err := exec(ctx, tx, `DELETE FROM threads WHERE thread_id = ?`, run.ThreadID); err != nil {
		return fmt.Errorf("delete temporary thread %s: %w", run.ThreadID, err)
	}
	return nil
}

// insertWebhook queues d in the outbox. A delivery whose id is queued
// already (ids derive from run ids) is left as it is.
func insertWebhook(ctx context.Context, tx pgx.Tx, d *graphserver.WebhookDelivery, now time.Time) error {
	if _, err := exec(ctx, tx, `INSERT INTO webhook_outbox (id, run_id, url, body, attempts, next_at, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		d.ID, d.RunID, d.URL, string(d.Body), d.Attempts, d.NextAt, now); err != nil {
		return fmt.Errorf("queue webhook: %w", err)
	}
	return nil
}

// settleThread sets a busy thread with no active run left to idle.
func settleThread(ctx context.Context, tx pgx.Tx, threadID string, now time.Time) error {
	if _, err := exec(ctx, tx, `UPDATE threads SET status = 'idle', updated_at = $1 WHERE thread_id = $2 AND status = 'busy'
		AND NOT EXISTS (SELECT 1 FROM runs WHERE thread_id = $2 AND status IN ('pending', 'running'))`, now, threadID); err != nil {
		return fmt.Errorf("settle thread %s: %w", threadID, err)
	}
	return nil
}

// GetRun implements graphserver.RunStorage.
func (db *DB) GetRun(ctx context.Context, threadID, runID string, filter graphserver.Filter) (*graphserver.Run, error) {
	var w where
	w.add("r.run_id = ?", runID)
	if threadID != "" {
		w.add("r.thread_id = ?", threadID)
	}
	join := ""
	if len(filter) > 0 {
		join = ` JOIN threads AS t ON t.thread_id = r.thread_id`
		if err := w.filter("t.metadata", filter); err != nil {
			return nil, err
		}
	}
	r, err := getRow[runRow](ctx, db.pool, `SELECT `+runColumnsR+` FROM runs AS r`+join+w.String(), w.args...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, runNotFound(runID)
	} else if err != nil {
		return nil, translate(fmt.Errorf("get run %s: %w", runID, err))
	}
	return r.run()
}

// ListRuns implements graphserver.RunStorage.
func (db *DB) ListRuns(ctx context.Context, threadID string, s *graphserver.RunSearch) ([]*graphserver.Run, error) {
	var out []*graphserver.Run
	err := db.tx(ctx, func(tx pgx.Tx) error {
		if _, err := getThread(ctx, tx, threadID, s.Filter, false); err != nil {
			return err
		}
		var w where
		w.add("thread_id = ?", threadID)
		if s.Status != "" {
			w.add("status = ?", s.Status)
		}
		limit := s.Limit
		if limit <= 0 {
			limit = 10
		}
		rows, err := selectRows[runRow](ctx, tx, `SELECT `+runColumns+` FROM runs`+w.String()+
			` ORDER BY created_at DESC, run_id DESC LIMIT ? OFFSET ?`, append(w.args, limit, max(s.Offset, 0))...)
		if err != nil {
			return fmt.Errorf("list runs: %w", err)
		}
		out = make([]*graphserver.Run, 0, len(rows))
		for i := range rows {
			run, err := rows[i].run()
			if err != nil {
				return err
			}
			out = append(out, run)
		}
		return nil
	})
	return out, err
}

// DeleteRun implements graphserver.RunStorage.
func (db *DB) DeleteRun(ctx context.Context, threadID, runID string, filter graphserver.Filter) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		var w where
		w.add("r.run_id = ?", runID)
		if threadID != "" {
			w.add("r.thread_id = ?", threadID)
		}
		if err := w.filter("t.metadata", filter); err != nil {
			return err
		}
		a, err := getRow[activeRun](ctx, tx, `SELECT r.run_id, r.thread_id, r.status FROM runs AS r
			JOIN threads AS t ON t.thread_id = r.thread_id`+w.String()+` FOR UPDATE OF r`, w.args...)
		if errors.Is(err, pgx.ErrNoRows) {
			return runNotFound(runID)
		} else if err != nil {
			return fmt.Errorf("get run %s: %w", runID, err)
		}
		if isActive(a.Status) {
			return graphserver.Errorf(graphserver.ECONFLICT, "Run %s is %s; cancel it before deleting it.", runID, a.Status)
		}
		return deleteRunTx(ctx, tx, a.ThreadID, runID)
	})
}

// deleteRunTx deletes a run with the checkpoints it wrote.
func deleteRunTx(ctx context.Context, tx pgx.Tx, threadID, runID string) error {
	if err := deleteRunCheckpoints(ctx, tx, threadID, runID); err != nil {
		return err
	}
	if _, err := exec(ctx, tx, `DELETE FROM runs WHERE run_id = ?`, runID); err != nil {
		return fmt.Errorf("delete run: %w", err)
	}
	return nil
}

// CancelRuns implements graphserver.RunStorage.
func (db *DB) CancelRuns(ctx context.Context, sel *graphserver.RunCancelSelect, action string, now time.Time, filter graphserver.Filter) ([]graphserver.CancelledRun, error) {
	var out []graphserver.CancelledRun
	err := db.tx(ctx, func(tx pgx.Tx) error {
		out = nil
		var w where
		switch {
		case len(sel.RunIDs) > 0:
			w.add("r.thread_id = ?", sel.ThreadID)
			w.add("r.run_id = ANY(?::text[])", sel.RunIDs)
		case sel.Status == "all":
			w.add("r.status IN ('pending', 'running')")
		default:
			w.add("r.status = ?", sel.Status)
		}
		if err := w.filter("t.metadata", filter); err != nil {
			return err
		}
		if err := lockRunThreads(ctx, tx, &w); err != nil {
			return err
		}
		rows, err := selectRows[activeRun](ctx, tx, `SELECT r.run_id, r.thread_id, r.status FROM runs AS r
			JOIN threads AS t ON t.thread_id = r.thread_id`+w.String()+` ORDER BY r.run_id FOR UPDATE OF r`, w.args...)
		if err != nil {
			return fmt.Errorf("select runs to cancel: %w", err)
		}
		if len(sel.RunIDs) > 0 && len(rows) < len(uniq(sel.RunIDs)) {
			return graphserver.Errorf(graphserver.ENOTFOUND, "Some runs were not found.")
		}
		threads := map[string]bool{}
		for _, a := range rows {
			if !isActive(a.Status) {
				continue
			}
			c, err := cancelRun(ctx, tx, a, action, now)
			if err != nil {
				return err
			}
			out = append(out, c)
			if c.Status != graphserver.RunRunning {
				threads[a.ThreadID] = true
			}
		}
		for id := range threads {
			if err := settleThread(ctx, tx, id, now); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// lockRunThreads locks, in order, the threads of the runs w selects (on
// runs r joined with threads t): the thread rows before the run rows.
func lockRunThreads(ctx context.Context, tx pgx.Tx, w *where) error {
	if _, err := exec(ctx, tx, `SELECT 1 FROM threads WHERE thread_id IN (SELECT r.thread_id FROM runs AS r
		JOIN threads AS t ON t.thread_id = r.thread_id`+w.String()+`) ORDER BY thread_id FOR NO KEY UPDATE`, w.args...); err != nil {
		return fmt.Errorf("lock threads: %w", err)
	}
	return nil
}

func uniq(ss []string) map[string]bool {
	m := make(map[string]bool, len(ss))
	for _, s := range ss {
		m[s] = true
	}
	return m
}

// claimQuery takes the oldest eligible pending run: its thread has no
// running run and no older eligible pending run (which a concurrent claim
// holds locked), and claims in other processes skip the rows locked. It
// locks the thread's row too, without waiting (see lockThread).
// runs_one_running catches the race this leaves (two processes claiming
// two runs of one thread at once): the second claim fails and is retried.
const claimQuery = `WITH next AS (
	SELECT p.run_id FROM runs AS p JOIN threads AS t ON t.thread_id = p.thread_id
	WHERE p.status = 'pending' AND p.created_at <= $4
		AND NOT EXISTS (SELECT 1 FROM runs AS o WHERE o.thread_id = p.thread_id AND o.status = 'running')
		AND NOT EXISTS (SELECT 1 FROM runs AS o WHERE o.thread_id = p.thread_id AND o.status = 'pending'
			AND o.created_at <= $4 AND (o.created_at, o.run_id) < (p.created_at, p.run_id))
	ORDER BY p.created_at, p.run_id
	LIMIT 1
	FOR NO KEY UPDATE OF p, t SKIP LOCKED)
UPDATE runs SET status = 'running', attempt = attempt + 1, lease_owner = $1, lease_expires_at = $2,
	updated_at = $3, cancel_action = NULL
FROM next WHERE runs.run_id = next.run_id AND runs.status = 'pending'
RETURNING ` + "runs.run_id, runs.thread_id, runs.assistant_id, runs.created_at, runs.updated_at, runs.status, runs.metadata, runs.multitask_strategy, runs.kwargs, runs.attempt"

// claimAttempts bounds the retries of a claim that lost a race.
const claimAttempts = 5

// ClaimRun implements graphserver.RunStorage.
func (db *DB) ClaimRun(ctx context.Context, owner string, now, leaseUntil time.Time) (*graphserver.QueuedRun, error) {
	for range claimAttempts {
		// One statement: no transaction around it.
		start := time.Now()
		row, err := getRow[runRow](ctx, db.pool, claimQuery, owner, leaseUntil, now, now)
		err = translate(err)
		if graphserver.ErrorCode(err) != graphserver.ENOTFOUND {
			db.observeWrite(max(time.Since(start), time.Nanosecond), err)
		}
		switch {
		case graphserver.ErrorCode(err) == graphserver.ENOTFOUND:
			return nil, nil
		case graphserver.ErrorCode(err) == graphserver.ECONFLICT:
			continue // another process claimed a run of the same thread
		case err != nil:
			return nil, fmt.Errorf("claim run: %w", err)
		}
		run, err := row.run()
		if err != nil {
			return nil, err
		}
		return &graphserver.QueuedRun{Run: run, Attempt: row.Attempt}, nil
	}
	return nil, nil
}

// RenewRunLease implements graphserver.RunStorage.
func (db *DB) RenewRunLease(ctx context.Context, runID, owner string, leaseUntil time.Time) (string, error) {
	action, err := scalar[*string](ctx, db.pool, `UPDATE runs SET lease_expires_at = ?
		WHERE run_id = ? AND lease_owner = ? AND status = 'running' RETURNING cancel_action`, leaseUntil, runID, owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", runNotFound(runID)
	} else if err != nil {
		return "", translate(fmt.Errorf("renew lease of run %s: %w", runID, err))
	}
	return deref(action), nil
}

// ReleaseRun implements graphserver.RunStorage.
func (db *DB) ReleaseRun(ctx context.Context, runID, owner string, now time.Time) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		n, err := exec(ctx, tx, `UPDATE runs SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL,
			updated_at = ? WHERE run_id = ? AND lease_owner = ? AND status = 'running'`, now, runID, owner)
		if err != nil {
			return fmt.Errorf("release run %s: %w", runID, err)
		}
		if n == 0 {
			return runNotFound(runID)
		}
		return notifyTx(ctx, tx, channelRunQueued, runID)
	})
}

// FinishRun implements graphserver.RunStorage.
func (db *DB) FinishRun(ctx context.Context, f *graphserver.RunFinish) error {
	var values, errv *string
	var interrupts string
	keepValues := true
	if f.Summary != nil {
		var err error
		if values, err = nullRaw(f.Summary.Values); err != nil {
			return err
		}
		if errv, err = nullRaw(f.Summary.Error); err != nil {
			return err
		}
		if interrupts, err = marshalJSON(cmpOrEmpty(f.Summary.Interrupts)); err != nil {
			return err
		}
		keepValues = len(f.Summary.Values) == 0
	}
	return db.writeTx(ctx, func(tx pgx.Tx) error {
		// The thread's row first (see lockThread), then the run's.
		if _, err := exec(ctx, tx, `SELECT 1 FROM threads WHERE thread_id = (SELECT thread_id FROM runs WHERE run_id = ?)
			FOR NO KEY UPDATE`, f.RunID); err != nil {
			return fmt.Errorf("finish run %s: %w", f.RunID, err)
		}
		threadID, err := scalar[string](ctx, tx, `SELECT thread_id FROM runs WHERE run_id = ? AND lease_owner = ? AND status = 'running'
			FOR UPDATE`, f.RunID, f.Owner)
		if errors.Is(err, pgx.ErrNoRows) {
			return runNotFound(f.RunID)
		} else if err != nil {
			return fmt.Errorf("finish run %s: %w", f.RunID, err)
		}
		if f.Delete {
			if err := deleteRunTx(ctx, tx, threadID, f.RunID); err != nil {
				return err
			}
		} else if f.DeleteThread {
			// The run goes with its thread below (ON DELETE CASCADE).
		} else if _, err := exec(ctx, tx, `UPDATE runs SET status = ?, updated_at = ?, lease_owner = NULL,
			lease_expires_at = NULL, cancel_action = NULL WHERE run_id = ?`, f.Status, f.Now, f.RunID); err != nil {
			return fmt.Errorf("finish run %s: %w", f.RunID, err)
		}
		switch {
		case f.DeleteThread:
			if _, err := exec(ctx, tx, `DELETE FROM threads WHERE thread_id = ?`, threadID); err != nil {
				return fmt.Errorf("delete temporary thread %s: %w", threadID, err)
			}
		case f.Summary != nil:
			if err := writeSummary(ctx, tx, threadID, cmp.Or(f.Summary.Status, graphserver.ThreadIdle), keepValues,
				values, interrupts, errv, f.Now); err != nil {
				return err
			}
		default:
			if err := settleThread(ctx, tx, threadID, f.Now); err != nil {
				return err
			}
		}
		if f.Webhook != nil {
			if err := insertWebhook(ctx, tx, f.Webhook, f.Now); err != nil {
				return err
			}
		}
		if err := notifyTx(ctx, tx, channelRunEnded, f.RunID); err != nil {
			return err
		}
		// The thread may have a run waiting for this one: wake the workers
		// of every process (the Server wakes its own).
		if waiting, err := scalar[bool](ctx, tx, `SELECT EXISTS (SELECT 1 FROM runs WHERE thread_id = ? AND status = 'pending')`,
			threadID); err != nil {
			return fmt.Errorf("finish run %s: %w", f.RunID, err)
		} else if waiting {
			return notifyTx(ctx, tx, channelRunQueued, f.RunID)
		}
		return nil
	})
}

// writeSummary writes a thread's summary after a run; the status is busy
// while other runs of the thread are pending or running.
func writeSummary(ctx context.Context, tx pgx.Tx, threadID, status string, keepValues bool, values *string,
	interrupts string, errv *string, now time.Time) error {
	q := `UPDATE threads SET status = ` + busyStatus + `, error = ?, updated_at = ?, state_updated_at = ?,
		ttl_expires_at = CASE WHEN ttl_minutes IS NULL THEN ttl_expires_at ELSE ?::timestamptz + ttl_minutes * interval '1 minute' END`
	args := []any{status, errv, now, now, now}
	if !keepValues {
		q += `, state_values = ?, interrupts = ?`
		args = append(args, values, interrupts)
	}
	q += ` WHERE thread_id = ?`
	args = append(args, threadID)
	if _, err := exec(ctx, tx, q, args...); err != nil {
		return fmt.Errorf("write thread summary: %w", err)
	}
	return nil
}

// maxAttemptsError is the thread error of a run that ran out of attempts.
var maxAttemptsError = func() string {
	b, _ := json.Marshal(map[string]string{"error": "MaxAttemptsExceeded", "message": graphserver.RunMaxAttemptsMessage})
	return string(b)
}()

// expiredRun is a running run whose worker is gone.
type expiredRun struct {
	RunID    string  `db:"run_id"`
	ThreadID string  `db:"thread_id"`
	Attempt  int     `db:"attempt"`
	Cancel   *string `db:"cancel_action"`
}

// SweepRuns implements graphserver.RunStorage. The expired runs are
// locked, skipping those another process is sweeping or finishing.
func (db *DB) SweepRuns(ctx context.Context, now time.Time, maxAttempts int) ([]graphserver.SweptRun, error) {
	var out []graphserver.SweptRun
	err := db.tx(ctx, func(tx pgx.Tx) error {
		rows, err := selectRows[expiredRun](ctx, tx, `SELECT r.run_id, r.thread_id, r.attempt, r.cancel_action
			FROM runs AS r JOIN threads AS t ON t.thread_id = r.thread_id
			WHERE r.status = 'running' AND r.lease_expires_at < ? ORDER BY r.run_id FOR NO KEY UPDATE OF r, t SKIP LOCKED`, now)
		if err != nil {
			return fmt.Errorf("select expired runs: %w", err)
		}
		out, err = sweepRuns(ctx, tx, rows, now, maxAttempts)
		return err
	})
	return out, err
}

// sweepRuns recovers runs whose worker is gone, inside tx: back to pending,
// or ended (a recorded cancellation, or out of attempts) with the webhook
// queued and a stateless run's thread deleted.
func sweepRuns(ctx context.Context, tx pgx.Tx, rows []expiredRun, now time.Time, maxAttempts int) ([]graphserver.SweptRun, error) {
	var out []graphserver.SweptRun
	for _, r := range rows {
		sw := graphserver.SweptRun{RunID: r.RunID, ThreadID: r.ThreadID}
		cancel := deref(r.Cancel)
		var ended *graphserver.Run
		if r.Cancel != nil || r.Attempt >= maxAttempts {
			status, msg := graphserver.RunInterrupted, ""
			if r.Cancel == nil {
				status, msg = graphserver.RunError, graphserver.RunMaxAttemptsMessage
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
		case cancel == graphserver.CancelRollback:
			if err := deleteRunTx(ctx, tx, r.ThreadID, r.RunID); err != nil {
				return nil, err
			}
			if err := settleThread(ctx, tx, r.ThreadID, now); err != nil {
				return nil, err
			}
		case cancel == graphserver.CancelInterrupt:
			sw.Status = graphserver.RunInterrupted
			if _, err := exec(ctx, tx, `UPDATE runs SET status = 'interrupted', updated_at = ?, lease_owner = NULL,
				lease_expires_at = NULL WHERE run_id = ?`, now, r.RunID); err != nil {
				return nil, fmt.Errorf("sweep run %s: %w", r.RunID, err)
			}
			if err := settleThread(ctx, tx, r.ThreadID, now); err != nil {
				return nil, err
			}
		case r.Attempt >= maxAttempts:
			sw.Status = graphserver.RunError
			if _, err := exec(ctx, tx, `UPDATE runs SET status = 'error', updated_at = ?, lease_owner = NULL,
				lease_expires_at = NULL WHERE run_id = ?`, now, r.RunID); err != nil {
				return nil, fmt.Errorf("sweep run %s: %w", r.RunID, err)
			}
			errv := maxAttemptsError
			if err := writeSummary(ctx, tx, r.ThreadID, graphserver.ThreadError, true, nil, "", &errv, now); err != nil {
				return nil, err
			}
		default:
			sw.Status = graphserver.RunPending
			if _, err := exec(ctx, tx, `UPDATE runs SET status = 'pending', updated_at = ?, lease_owner = NULL,
				lease_expires_at = NULL WHERE run_id = ?`, now, r.RunID); err != nil {
				return nil, fmt.Errorf("sweep run %s: %w", r.RunID, err)
			}
			if err := notifyTx(ctx, tx, channelRunQueued, r.RunID); err != nil {
				return nil, err
			}
		}
		if sw.Status != graphserver.RunPending {
			if err := notifyTx(ctx, tx, channelRunEnded, r.RunID); err != nil {
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

// RunStatuses implements graphserver.RunStatusReader.
func (db *DB) RunStatuses(ctx context.Context, runIDs []string) (map[string]string, error) {
	out := make(map[string]string, len(runIDs))
	type statusRow struct {
		RunID  string `db:"run_id"`
		Status string `db:"status"`
	}
	rows, err := selectRows[statusRow](ctx, db.pool, `SELECT run_id, status FROM runs WHERE run_id = ANY(?::text[])`, runIDs)
	if err != nil {
		return nil, translate(fmt.Errorf("read run statuses: %w", err))
	}
	for _, r := range rows {
		out[r.RunID] = r.Status
	}
	return out, nil
}

// CountRunQueue implements graphserver.RunQueueCounter over every process
// sharing the database.
func (db *DB) CountRunQueue(ctx context.Context, now time.Time) (graphserver.RunQueueCount, error) {
	type countRow struct {
		Ready   int `db:"ready"`
		Delayed int `db:"delayed"`
		Running int `db:"running"`
	}
	r, err := getRow[countRow](ctx, db.pool, `SELECT
		(SELECT count(*) FROM runs WHERE status = 'pending' AND created_at <= $1) AS ready,
		(SELECT count(*) FROM runs WHERE status = 'pending' AND created_at > $1) AS delayed,
		(SELECT count(*) FROM runs WHERE status = 'running') AS running`, now)
	if err != nil {
		return graphserver.RunQueueCount{}, translate(fmt.Errorf("count run queue: %w", err))
	}
	return graphserver.RunQueueCount{Ready: r.Ready, Delayed: r.Delayed, Running: r.Running}, nil
}
