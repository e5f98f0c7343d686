package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/internal/jsoncol"
)

var _ driver.RunStorage = (*DB)(nil)

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

// insertWebhook queues d in the outbox. A delivery whose id is queued
// already (ids derive from run ids) is left as it is.
func insertWebhook(ctx context.Context, tx *connTx, d *driver.WebhookDelivery, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_outbox (id, run_id, url, body, attempts, next_at, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		d.ID, d.RunID, d.URL, string(d.Body), d.Attempts, formatTime(d.NextAt), formatTime(now)); err != nil {
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

// ListRuns implements driver.RunStorage.
func (db *DB) ListRuns(ctx context.Context, threadID string, s *graphserver.RunSearch) ([]*graphserver.Run, error) {
	var out []*graphserver.Run
	err := db.read(ctx, func(tx *connTx) error {
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

// DeleteRun implements driver.RunStorage.
func (db *DB) DeleteRun(ctx context.Context, threadID, runID string, filter graphserver.Filter) error {
	return db.write(ctx, func(tx *connTx) error {
		var w where
		w.add("r.run_id = ?", runID)
		if threadID != "" {
			w.add("r.thread_id = ?", threadID)
		}
		if err := w.filter("t.metadata", filter); err != nil {
			return err
		}
		var a runRefRow
		err := tx.GetContext(ctx, &a, `SELECT `+runRefColumns+` FROM runs AS r
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
func deleteRunTx(ctx context.Context, tx *connTx, threadID, runID string) error {
	if err := deleteRunCheckpoints(ctx, tx, threadID, runID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE run_id = ?`, runID); err != nil {
		return fmt.Errorf("delete run: %w", err)
	}
	return nil
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
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

// ClaimRun implements driver.RunStorage.
func (db *DB) ClaimRun(ctx context.Context, owner string, now, leaseUntil time.Time) (*driver.QueuedRun, error) {
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
	err := db.writeGrouped(ctx, func(ctx context.Context, tx *connTx) error {
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
	return &driver.QueuedRun{Run: run, Attempt: row.Attempt}, nil
}

// RenewRunLease implements driver.RunStorage.
func (db *DB) RenewRunLease(ctx context.Context, runID, owner string, leaseUntil time.Time) (string, error) {
	var action sql.NullString
	err := db.writer.GetContext(ctx, &action, `UPDATE runs SET lease_expires_at = ?
		WHERE run_id = ? AND lease_owner = ? AND status = 'running' RETURNING cancel_action`, formatTime(leaseUntil), runID, owner)
	if errors.Is(err, sql.ErrNoRows) {
		return "", runNotFound(runID)
	} else if err != nil {
		return "", translate(fmt.Errorf("renew lease of run %s: %w", runID, err))
	}
	db.wal.committed()
	return action.String, nil
}

// ReleaseRun implements driver.RunStorage.
func (db *DB) ReleaseRun(ctx context.Context, runID, owner string, now time.Time) error {
	res, err := db.writer.ExecContext(ctx, `UPDATE runs SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL,
		lease_holder = NULL, updated_at = ? WHERE run_id = ? AND lease_owner = ? AND status = 'running'`, formatTime(now), runID, owner)
	if err != nil {
		return translate(fmt.Errorf("release run %s: %w", runID, err))
	}
	db.wal.committed()
	if n, _ := res.RowsAffected(); n == 0 {
		return runNotFound(runID)
	}
	return nil
}

// LatestCheckpointNotByRun implements driver.RunStorage.
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

// RunStatuses implements driver.RunStorage.
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
