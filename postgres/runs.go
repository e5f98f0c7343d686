package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/internal/jsoncol"
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
	if run.Metadata, err = jsoncol.DecodeObject(r.Metadata); err != nil {
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

// activeRun is a pending or running run.
type activeRun struct {
	RunID    string `db:"run_id"`
	ThreadID string `db:"thread_id"`
	Status   string `db:"status"`
}

// insertWebhook queues d in the outbox. A delivery whose id is queued
// already (ids derive from run ids) is left as it is.
func insertWebhook(ctx context.Context, tx pgx.Tx, d *driver.WebhookDelivery, now time.Time) error {
	if _, err := exec(ctx, tx, `INSERT INTO webhook_outbox (id, run_id, url, body, attempts, next_at, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		d.ID, d.RunID, d.URL, string(d.Body), d.Attempts, d.NextAt, now); err != nil {
		return fmt.Errorf("queue webhook: %w", err)
	}
	return nil
}

// GetRun implements driver.RunStorage.
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

// ListRuns implements driver.RunStorage.
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

// DeleteRun implements driver.RunStorage.
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

// ClaimRun implements driver.RunStorage.
func (db *DB) ClaimRun(ctx context.Context, owner string, now, leaseUntil time.Time) (*driver.QueuedRun, error) {
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
		return &driver.QueuedRun{Run: run, Attempt: row.Attempt}, nil
	}
	return nil, nil
}

// RenewRunLease implements driver.RunStorage.
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

// ReleaseRun implements driver.RunStorage.
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

// RunStatuses implements driver.RunStorage.
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

// CountRunQueue implements driver.RunQueueCounter over every process
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
