package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/graphserver/graphserver"
)

var (
	_ graphserver.RunStorage      = (*DB)(nil)
	_ graphserver.RunStatusReader = (*DB)(nil)
)

// runRow is a runs row.
type runRow struct {
	RunID             string `db:"run_id"`
	ThreadID          string `db:"thread_id"`
	AssistantID       string `db:"assistant_id"`
	CreatedAt         string `db:"created_at"`
	UpdatedAt         string `db:"updated_at"`
	Status            string `db:"status"`
	Metadata          string `db:"metadata"`
	MultitaskStrategy string `db:"multitask_strategy"`
	Kwargs            string `db:"kwargs"`
}

const runColumns = `run_id, thread_id, assistant_id, created_at, updated_at, status, metadata, multitask_strategy, kwargs`

// runColumnsR is runColumns qualified with the alias r.
const runColumnsR = `r.run_id, r.thread_id, r.assistant_id, r.created_at, r.updated_at, r.status, r.metadata,
	r.multitask_strategy, r.kwargs`

func (r *runRow) run() (*graphserver.Run, error) {
	run := &graphserver.Run{RunID: r.RunID, ThreadID: r.ThreadID, AssistantID: r.AssistantID, Status: r.Status,
		MultitaskStrategy: r.MultitaskStrategy}
	var err error
	if run.CreatedAt, err = parseTime(r.CreatedAt); err != nil {
		return nil, err
	}
	if run.UpdatedAt, err = parseTime(r.UpdatedAt); err != nil {
		return nil, err
	}
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

// CreateRun implements graphserver.RunStorage.
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
	var threadCfg sql.NullString
	if opts.ThreadConfig != nil {
		c, err := marshalObject(opts.ThreadConfig)
		if err != nil {
			return nil, err
		}
		threadCfg = sql.NullString{String: c, Valid: true}
	}
	res := &graphserver.RunCreated{}
	err = db.writeGrouped(ctx, func(ctx context.Context, tx *sqlx.Tx) error {
		*res = graphserver.RunCreated{} // the group may run this twice
		now := formatTime(r.UpdatedAt)
		if opts.Cron != nil {
			if fired, err := fireCron(ctx, tx, opts.Cron); err != nil {
				return err
			} else if !fired {
				return errCronFired(opts.Cron)
			}
		}
		inserted := false
		if err := checkThread(ctx, tx, r.ThreadID, opts.Filter); graphserver.ErrorCode(err) == graphserver.ENOTFOUND {
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
		var active []activeRun
		if err := tx.SelectContext(ctx, &active, `SELECT run_id, thread_id, status FROM runs
			WHERE thread_id = ? AND status IN ('pending', 'running')`, r.ThreadID); err != nil {
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
		var owner, lease, holder sql.NullString
		if opts.Owner != "" && free && !r.CreatedAt.After(r.UpdatedAt) {
			status, attempt, res.Claimed = graphserver.RunRunning, 1, true
			owner = sql.NullString{String: opts.Owner, Valid: true}
			lease = sql.NullString{String: formatTime(opts.LeaseUntil), Valid: true}
			holder = db.holderID()
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO runs (`+runColumns+`, attempt, lease_owner, lease_expires_at, lease_holder)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.RunID, r.ThreadID, r.AssistantID, formatTime(r.CreatedAt), now, status, metadata,
			r.MultitaskStrategy, kwargs, attempt, owner, lease, holder); err != nil {
			return fmt.Errorf("insert run: %w", err)
		}
		if inserted {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE threads SET status = 'busy', metadata = json_patch(metadata, ?),
			config = coalesce(?, config), updated_at = ? WHERE thread_id = ?`,
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
// metaPatch merged into its metadata (json_patch), config replaced by cfg
// when valid, updated at updatedAt.
func insertThread(ctx context.Context, tx *sqlx.Tx, t *graphserver.Thread, metaPatch string, cfg sql.NullString, updatedAt string) error {
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
	ts := formatTime(t.CreatedAt)
	_, err = tx.ExecContext(ctx, `INSERT INTO threads (thread_id, created_at, updated_at, state_updated_at, metadata,
		config, context, status, state_values, interrupts) VALUES (?, ?, ?, ?, json_patch(?, ?), coalesce(?, ?), ?, 'busy', ?, '{}')`,
		t.ThreadID, ts, updatedAt, ts, metadata, metaPatch, cfg, config, tctx, values)
	if isConstraint(err) {
		return graphserver.Errorf(graphserver.ECONFLICT, "Thread with ID %s already exists", t.ThreadID)
	} else if err != nil {
		return fmt.Errorf("insert thread: %w", err)
	}
	return nil
}

// activeRun is a pending or running run.
type activeRun struct {
	RunID    string `db:"run_id"`
	ThreadID string `db:"thread_id"`
	Status   string `db:"status"`
}

// cancelRun cancels one active run inside tx: a pending run is interrupted
// or deleted at once (endedOutside queues its webhook, dropTemporaryThread
// deletes a stateless run's thread), a running one gets the action recorded.
func cancelRun(ctx context.Context, tx *sqlx.Tx, a activeRun, action string, now time.Time) (graphserver.CancelledRun, error) {
	c := graphserver.CancelledRun{RunID: a.RunID, ThreadID: a.ThreadID, Action: action}
	ts := formatTime(now)
	if a.Status == graphserver.RunRunning {
		c.Status = graphserver.RunRunning
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET cancel_action = ?, updated_at = ? WHERE run_id = ?`, action, ts, a.RunID); err != nil {
			return c, fmt.Errorf("cancel run %s: %w", a.RunID, err)
		}
		return c, nil
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
		_, err = tx.ExecContext(ctx, `DELETE FROM runs WHERE run_id = ?`, a.RunID)
	} else {
		c.Status = graphserver.RunInterrupted
		_, err = tx.ExecContext(ctx, `UPDATE runs SET status = 'interrupted', updated_at = ? WHERE run_id = ?`, ts, a.RunID)
	}
	if err != nil {
		return c, fmt.Errorf("cancel run %s: %w", a.RunID, err)
	}
	return c, dropTemporaryThread(ctx, tx, run)
}

// hasWebhook reports whether a run asked for a webhook.
func hasWebhook(run *graphserver.Run) bool {
	return run.Kwargs.Webhook != nil && *run.Kwargs.Webhook != ""
}

// endedOutside reads a run that ends without FinishRun (cancelled while
// pending, ended by the sweep) and queues its webhook (webhookStatus,
// errMsg) in tx. Call it before the run row changes or goes.
func endedOutside(ctx context.Context, tx *sqlx.Tx, runID, webhookStatus string, now time.Time, errMsg string) (*graphserver.Run, error) {
	var r runRow
	if err := tx.GetContext(ctx, &r, `SELECT `+runColumns+` FROM runs WHERE run_id = ?`, runID); err != nil {
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
func dropTemporaryThread(ctx context.Context, tx *sqlx.Tx, run *graphserver.Run) error {
	if !run.Kwargs.Temporary {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM threads WHERE thread_id = ?`, run.ThreadID); err != nil {
		return fmt.Errorf("delete temporary thread %s: %w", run.ThreadID, err)
	}
	return nil
}

// insertWebhook queues d in the outbox. A delivery whose id is queued
// already (ids derive from run ids) is left as it is.
func insertWebhook(ctx context.Context, tx *sqlx.Tx, d *graphserver.WebhookDelivery, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_outbox (id, run_id, url, body, attempts, next_at, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		d.ID, d.RunID, d.URL, string(d.Body), d.Attempts, formatTime(d.NextAt), formatTime(now)); err != nil {
		return fmt.Errorf("queue webhook: %w", err)
	}
	return nil
}

// settleThread sets a busy thread with no active run left to idle.
func settleThread(ctx context.Context, tx *sqlx.Tx, threadID, now string) error {
	_, err := tx.ExecContext(ctx, `UPDATE threads SET status = 'idle', updated_at = ? WHERE thread_id = ? AND status = 'busy'
		AND NOT EXISTS (SELECT 1 FROM runs WHERE thread_id = ? AND status IN ('pending', 'running'))`, now, threadID, threadID)
	if err != nil {
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
	if err := w.filter("t.metadata", filter); err != nil {
		return nil, err
	}
	var r struct {
		runRow
		Attempt int `db:"attempt"`
	}
	err := db.reader.GetContext(ctx, &r, `SELECT `+runColumnsR+`, r.attempt FROM runs AS r
		JOIN threads AS t ON t.thread_id = r.thread_id`+w.String(), w.args...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, runNotFound(runID)
	} else if err != nil {
		return nil, translate(fmt.Errorf("get run %s: %w", runID, err))
	}
	run, err := r.run()
	if err != nil {
		return nil, err
	}
	run.Attempt = r.Attempt
	return run, nil
}

// ListRuns implements graphserver.RunStorage.
func (db *DB) ListRuns(ctx context.Context, threadID string, s *graphserver.RunSearch) ([]*graphserver.Run, error) {
	var out []*graphserver.Run
	err := db.read(ctx, func(tx *sqlx.Tx) error {
		if _, err := getThread(ctx, tx, threadID, s.Filter); err != nil {
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
		var rows []runRow
		if err := tx.SelectContext(ctx, &rows, `SELECT `+runColumns+` FROM runs`+w.String()+
			` ORDER BY created_at DESC, run_id DESC LIMIT ? OFFSET ?`, append(w.args, limit, max(s.Offset, 0))...); err != nil {
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
	return db.write(ctx, func(tx *sqlx.Tx) error {
		var w where
		w.add("r.run_id = ?", runID)
		if threadID != "" {
			w.add("r.thread_id = ?", threadID)
		}
		if err := w.filter("t.metadata", filter); err != nil {
			return err
		}
		var a activeRun
		err := tx.GetContext(ctx, &a, `SELECT r.run_id, r.thread_id, r.status FROM runs AS r
			JOIN threads AS t ON t.thread_id = r.thread_id`+w.String(), w.args...)
		if errors.Is(err, sql.ErrNoRows) {
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
func deleteRunTx(ctx context.Context, tx *sqlx.Tx, threadID, runID string) error {
	if err := deleteRunCheckpoints(ctx, tx, threadID, runID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE run_id = ?`, runID); err != nil {
		return fmt.Errorf("delete run: %w", err)
	}
	return nil
}

// CancelRuns implements graphserver.RunStorage.
func (db *DB) CancelRuns(ctx context.Context, sel *graphserver.RunCancelSelect, action string, now time.Time, filter graphserver.Filter) ([]graphserver.CancelledRun, error) {
	var out []graphserver.CancelledRun
	err := db.write(ctx, func(tx *sqlx.Tx) error {
		ts := formatTime(now)
		var w where
		switch {
		case len(sel.RunIDs) > 0:
			w.add("r.thread_id = ?", sel.ThreadID)
			w.add("r.run_id IN (?"+strings.Repeat(", ?", len(sel.RunIDs)-1)+")", anys(sel.RunIDs)...)
		case sel.Status == "all":
			w.add("r.status IN ('pending', 'running')")
		default:
			w.add("r.status = ?", sel.Status)
		}
		if err := w.filter("t.metadata", filter); err != nil {
			return err
		}
		var rows []activeRun
		if err := tx.SelectContext(ctx, &rows, `SELECT r.run_id, r.thread_id, r.status FROM runs AS r
			JOIN threads AS t ON t.thread_id = r.thread_id`+w.String(), w.args...); err != nil {
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
			if err := settleThread(ctx, tx, id, ts); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func uniq(ss []string) map[string]bool {
	m := make(map[string]bool, len(ss))
	for _, s := range ss {
		m[s] = true
	}
	return m
}

// claimQuery takes the oldest eligible pending run in one statement.
const claimQuery = `UPDATE runs SET status = 'running', attempt = attempt + 1, lease_owner = ?, lease_expires_at = ?,
	lease_holder = ?, updated_at = ?, cancel_action = NULL
WHERE run_id = (
	SELECT p.run_id FROM runs AS p
	WHERE p.status = 'pending' AND p.created_at <= ?
		AND NOT EXISTS (SELECT 1 FROM runs AS o WHERE o.thread_id = p.thread_id AND o.status = 'running')
	ORDER BY p.created_at, p.run_id
	LIMIT 1)
RETURNING ` + runColumns + `, attempt`

// ClaimRun implements graphserver.RunStorage.
func (db *DB) ClaimRun(ctx context.Context, owner string, now, leaseUntil time.Time) (*graphserver.QueuedRun, error) {
	var row struct {
		runRow
		Attempt int `db:"attempt"`
	}
	ts := formatTime(now)
	// Most claims (one per finished run) find nothing: tell from a read,
	// without taking the writer. A run committed after this read signals
	// the dispatcher, which claims again.
	var pending bool
	if err := db.reader.GetContext(ctx, &pending, `SELECT EXISTS (SELECT 1 FROM runs WHERE status = 'pending' AND created_at <= ?)`, ts); err != nil {
		return nil, translate(fmt.Errorf("claim run: %w", err))
	} else if !pending {
		return nil, nil
	}
	found := false
	err := db.writeGrouped(ctx, func(ctx context.Context, tx *sqlx.Tx) error {
		found = false
		err := tx.QueryRowxContext(ctx, claimQuery, owner, formatTime(leaseUntil), db.holderID(), ts, ts).StructScan(&row)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		} else if err != nil {
			return fmt.Errorf("claim run: %w", err)
		}
		found = true
		return nil
	})
	if err != nil || !found {
		return nil, err
	}
	run, err := row.run()
	if err != nil {
		return nil, err
	}
	return &graphserver.QueuedRun{Run: run, Attempt: row.Attempt}, nil
}

// RenewRunLease implements graphserver.RunStorage.
func (db *DB) RenewRunLease(ctx context.Context, runID, owner string, leaseUntil time.Time) (string, error) {
	var action sql.NullString
	err := db.writer.GetContext(ctx, &action, `UPDATE runs SET lease_expires_at = ?
		WHERE run_id = ? AND lease_owner = ? AND status = 'running' RETURNING cancel_action`, formatTime(leaseUntil), runID, owner)
	if errors.Is(err, sql.ErrNoRows) {
		return "", runNotFound(runID)
	} else if err != nil {
		return "", translate(fmt.Errorf("renew lease of run %s: %w", runID, err))
	}
	return action.String, nil
}

// ReleaseRun implements graphserver.RunStorage.
func (db *DB) ReleaseRun(ctx context.Context, runID, owner string, now time.Time) error {
	res, err := db.writer.ExecContext(ctx, `UPDATE runs SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL,
		lease_holder = NULL, updated_at = ? WHERE run_id = ? AND lease_owner = ? AND status = 'running'`, formatTime(now), runID, owner)
	if err != nil {
		return translate(fmt.Errorf("release run %s: %w", runID, err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return runNotFound(runID)
	}
	return nil
}

// FinishRun implements graphserver.RunStorage.
func (db *DB) FinishRun(ctx context.Context, f *graphserver.RunFinish) error {
	var sum struct {
		values, errv sql.NullString
		interrupts   string
	}
	keepValues := true
	if f.Summary != nil {
		var err error
		if sum.values, err = nullRaw(f.Summary.Values); err != nil {
			return err
		}
		if sum.errv, err = nullRaw(f.Summary.Error); err != nil {
			return err
		}
		if sum.interrupts, err = marshalJSON(cmpOrEmpty(f.Summary.Interrupts)); err != nil {
			return err
		}
		keepValues = len(f.Summary.Values) == 0
	}
	return db.writeGrouped(ctx, func(ctx context.Context, tx *sqlx.Tx) error {
		ts := formatTime(f.Now)
		var threadID string
		err := tx.GetContext(ctx, &threadID, `SELECT thread_id FROM runs WHERE run_id = ? AND lease_owner = ? AND status = 'running'`,
			f.RunID, f.Owner)
		if errors.Is(err, sql.ErrNoRows) {
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
		} else if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, updated_at = ?, lease_owner = NULL,
			lease_expires_at = NULL, lease_holder = NULL, cancel_action = NULL WHERE run_id = ?`, f.Status, ts, f.RunID); err != nil {
			return fmt.Errorf("finish run %s: %w", f.RunID, err)
		}
		switch {
		case f.DeleteThread:
			if _, err := tx.ExecContext(ctx, `DELETE FROM threads WHERE thread_id = ?`, threadID); err != nil {
				return fmt.Errorf("delete temporary thread %s: %w", threadID, err)
			}
		case f.Summary != nil:
			if err := writeSummary(ctx, tx, threadID, cmp.Or(f.Summary.Status, graphserver.ThreadIdle), keepValues,
				sum.values, sum.interrupts, sum.errv, f.Now); err != nil {
				return err
			}
		default:
			if err := settleThread(ctx, tx, threadID, ts); err != nil {
				return err
			}
		}
		if f.Webhook != nil {
			if err := insertWebhook(ctx, tx, f.Webhook, f.Now); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeSummary writes a thread's summary after a run; the status is busy
// while other runs of the thread are pending or running.
func writeSummary(ctx context.Context, tx *sqlx.Tx, threadID, status string, keepValues bool, values sql.NullString,
	interrupts string, errv sql.NullString, now time.Time) error {
	var minutes sql.NullFloat64
	if err := tx.GetContext(ctx, &minutes, `SELECT ttl_minutes FROM threads WHERE thread_id = ?`, threadID); errors.Is(err, sql.ErrNoRows) {
		return nil
	} else if err != nil {
		return fmt.Errorf("write thread summary: %w", err)
	}
	var exp sql.NullString
	if minutes.Valid {
		e := expiry(now, minutes.Float64)
		exp = nullTime(&e)
	}
	ts := formatTime(now)
	q := `UPDATE threads SET
		status = CASE WHEN EXISTS (SELECT 1 FROM runs WHERE thread_id = ? AND status IN ('pending', 'running')) THEN 'busy' ELSE ? END,
		error = ?, updated_at = ?, state_updated_at = ?, ttl_expires_at = coalesce(?, ttl_expires_at)`
	args := []any{threadID, status, errv, ts, ts, exp}
	if !keepValues {
		q += `, state_values = ?, interrupts = ?`
		args = append(args, values, interrupts)
	}
	q += ` WHERE thread_id = ?`
	args = append(args, threadID)
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("write thread summary: %w", err)
	}
	return nil
}

// maxAttemptsError is the thread error of a run that ran out of attempts.
var maxAttemptsError = func() string {
	b, _ := json.Marshal(map[string]string{"error": "MaxAttemptsExceeded", "message": graphserver.RunMaxAttemptsMessage})
	return string(b)
}()

// SweepRuns implements graphserver.RunStorage.
func (db *DB) SweepRuns(ctx context.Context, now time.Time, maxAttempts int) ([]graphserver.SweptRun, error) {
	var out []graphserver.SweptRun
	err := db.write(ctx, func(tx *sqlx.Tx) error {
		var rows []expiredRun
		if err := tx.SelectContext(ctx, &rows, `SELECT run_id, thread_id, attempt, cancel_action FROM runs
			WHERE status = 'running' AND lease_expires_at < ?`, formatTime(now)); err != nil {
			return fmt.Errorf("select expired runs: %w", err)
		}
		var err error
		out, err = sweepRuns(ctx, tx, rows, now, maxAttempts)
		return err
	})
	return out, err
}

// expiredRun is a running run whose worker is gone.
type expiredRun struct {
	RunID    string         `db:"run_id"`
	ThreadID string         `db:"thread_id"`
	Attempt  int            `db:"attempt"`
	Cancel   sql.NullString `db:"cancel_action"`
}

// sweepRuns recovers runs whose worker is gone, inside tx: back to pending,
// or ended (a recorded cancellation, or out of attempts) with the webhook
// queued and a stateless run's thread deleted.
func sweepRuns(ctx context.Context, tx *sqlx.Tx, rows []expiredRun, now time.Time, maxAttempts int) ([]graphserver.SweptRun, error) {
	ts := formatTime(now)
	var out []graphserver.SweptRun
	for _, r := range rows {
		sw := graphserver.SweptRun{RunID: r.RunID, ThreadID: r.ThreadID}
		var ended *graphserver.Run
		if r.Cancel.Valid || r.Attempt >= maxAttempts {
			status, msg := graphserver.RunInterrupted, ""
			if !r.Cancel.Valid {
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
		case r.Cancel.String == graphserver.CancelRollback:
			if err := deleteRunTx(ctx, tx, r.ThreadID, r.RunID); err != nil {
				return nil, err
			}
			if err := settleThread(ctx, tx, r.ThreadID, ts); err != nil {
				return nil, err
			}
		case r.Cancel.String == graphserver.CancelInterrupt:
			sw.Status = graphserver.RunInterrupted
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = 'interrupted', updated_at = ?, lease_owner = NULL,
				lease_expires_at = NULL, lease_holder = NULL WHERE run_id = ?`, ts, r.RunID); err != nil {
				return nil, fmt.Errorf("sweep run %s: %w", r.RunID, err)
			}
			if err := settleThread(ctx, tx, r.ThreadID, ts); err != nil {
				return nil, err
			}
		case r.Attempt >= maxAttempts:
			sw.Status = graphserver.RunError
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = 'error', updated_at = ?, lease_owner = NULL,
				lease_expires_at = NULL, lease_holder = NULL WHERE run_id = ?`, ts, r.RunID); err != nil {
				return nil, fmt.Errorf("sweep run %s: %w", r.RunID, err)
			}
			if err := writeSummary(ctx, tx, r.ThreadID, graphserver.ThreadError, true, sql.NullString{}, "",
				sql.NullString{String: maxAttemptsError, Valid: true}, now); err != nil {
				return nil, err
			}
		default:
			sw.Status = graphserver.RunPending
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = 'pending', updated_at = ?, lease_owner = NULL,
				lease_expires_at = NULL, lease_holder = NULL WHERE run_id = ?`, ts, r.RunID); err != nil {
				return nil, fmt.Errorf("sweep run %s: %w", r.RunID, err)
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

// LatestCheckpointNotByRun implements graphserver.RunStorage.
func (db *DB) LatestCheckpointNotByRun(ctx context.Context, threadID, runID string) (string, error) {
	var id checkpointID
	err := db.reader.GetContext(ctx, &id, `SELECT checkpoint_id FROM checkpoints
		WHERE tid = (SELECT tid FROM checkpoint_threads WHERE thread_id = ?) AND checkpoint_ns = '' AND run_id <> ?
		ORDER BY checkpoint_id DESC LIMIT 1`, threadID, checkpointID(runID))
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	} else if err != nil {
		return "", translate(fmt.Errorf("latest checkpoint of thread %s: %w", threadID, err))
	}
	return string(id), nil
}

// RunStatuses implements graphserver.RunStatusReader.
func (db *DB) RunStatuses(ctx context.Context, runIDs []string) (map[string]string, error) {
	out := make(map[string]string, len(runIDs))
	for chunk := range slices.Chunk(runIDs, 500) {
		var rows []struct {
			RunID  string `db:"run_id"`
			Status string `db:"status"`
		}
		if err := db.reader.SelectContext(ctx, &rows, `SELECT run_id, status FROM runs WHERE run_id IN (?`+
			strings.Repeat(", ?", len(chunk)-1)+`)`, anys(chunk)...); err != nil {
			return nil, translate(fmt.Errorf("read run statuses: %w", err))
		}
		for _, r := range rows {
			out[r.RunID] = r.Status
		}
	}
	return out, nil
}
