package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/internal/jsoncol"
)

// WithTx implements driver.Storage. The transaction is one of the
// grouped writes (writeGrouped): it commits with the writes queued beside
// it, and fn runs again when another write of its group fails.
func (db *DB) WithTx(ctx context.Context, fn func(ctx context.Context, tx driver.Tx) error) error {
	return db.writeGrouped(ctx, func(ctx context.Context, tx *connTx) error {
		return fn(ctx, &txn{db: db, tx: tx})
	})
}

// txn is a driver.Tx on a write transaction of the DB.
type txn struct {
	db *DB
	tx *connTx
}

var _ driver.Tx = (*txn)(nil)

// txOf returns the SQL transaction of a Tx this DB's WithTx gave.
func (db *DB) txOf(tx driver.Tx) *connTx { return tx.(*txn).tx }

// runRefRow is a run as driver.RunRef reads it.
type runRefRow struct {
	RunID    string         `db:"run_id"`
	ThreadID string         `db:"thread_id"`
	Status   string         `db:"status"`
	Attempt  int            `db:"attempt"`
	Cancel   sql.NullString `db:"cancel_action"`
}

const runRefColumns = `r.run_id, r.thread_id, r.status, r.attempt, r.cancel_action`

// activeStatus is the condition that the run aliased alias is pending or
// running: the WHERE of the partial index runs_active_thread, which a
// query must repeat for the planner to read that index.
func activeStatus(alias string) string {
	return alias + ".status IN ('pending', 'running')"
}

func runRefs(rows []runRefRow) []driver.RunRef {
	out := make([]driver.RunRef, len(rows))
	for i, r := range rows {
		out[i] = driver.RunRef{RunID: r.RunID, ThreadID: r.ThreadID, Status: r.Status, Attempt: r.Attempt, CancelAction: r.Cancel.String}
	}
	return out
}

// CheckThread implements driver.Tx.
func (t *txn) CheckThread(ctx context.Context, id string, filter graphserver.Filter) (*driver.ThreadHead, error) {
	return threadHead(ctx, t.tx, id, filter)
}

// InsertThread implements driver.Tx.
func (t *txn) InsertThread(ctx context.Context, th *graphserver.Thread, temporary bool) error {
	row, err := newThreadRow(th)
	if err != nil {
		return err
	}
	row.Temporary = temporary
	return insertThreadRow(ctx, t.tx, row)
}

// UpdateThread implements driver.Tx.
func (t *txn) UpdateThread(ctx context.Context, id string, w *driver.ThreadWrite) error {
	ts := formatTime(w.Now)
	set := []string{"updated_at = ?"}
	args := []any{ts}
	if w.Status != "" {
		if w.IfStatus != "" {
			set = append(set, "status = CASE WHEN status = ? THEN ? ELSE status END")
			args = append(args, w.IfStatus, w.Status)
		} else {
			set = append(set, "status = ?")
			args = append(args, w.Status)
		}
	}
	if len(w.MergeMetadata) > 0 {
		// json_set per key: each top-level key is replaced as a whole (a
		// JSON merge patch would merge nested objects and drop nulls).
		expr := "json_set(metadata"
		for _, k := range slices.Sorted(maps.Keys(w.MergeMetadata)) {
			path, err := jsonPath("$", k)
			if err != nil {
				return err
			}
			v, err := jsoncol.Value(w.MergeMetadata[k])
			if err != nil {
				return err
			}
			expr += ", ?, json(?)"
			args = append(args, path, v)
		}
		set = append(set, "metadata = "+expr+")")
	}
	if w.Config != nil {
		c, err := jsoncol.Object(w.Config)
		if err != nil {
			return err
		}
		set = append(set, "config = ?")
		args = append(args, c)
	}
	if s := w.Summary; s != nil {
		// Values and Error are the Server's encoding (see ThreadSummary).
		set = append(set, "error = ?", "state_updated_at = ?")
		args = append(args, nullString(jsoncol.Encoded(s.Error)), ts)
		if !w.KeepValues {
			values := nullString(jsoncol.Encoded(s.Values))
			interrupts, err := jsoncol.Value(jsoncol.Interrupts(s.Interrupts))
			if err != nil {
				return err
			}
			set = append(set, "state_values = ?", "interrupts = ?")
			args = append(args, values, interrupts)
		}
	}
	if w.Summary == nil {
		// Nothing to read back (a run's creation): an Exec, which costs
		// less than a query and its rows.
		res, err := t.tx.ExecContext(ctx, `UPDATE threads SET `+strings.Join(set, ", ")+` WHERE thread_id = ?`, append(args, id)...)
		if err != nil {
			return fmt.Errorf("update thread %s: %w", id, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("update thread %s: %w", id, err)
		} else if n == 0 {
			return threadNotFound(id)
		}
		return nil
	}
	// One statement for the common case: the TTL (rare) is read back and
	// its expiry moved by a second one.
	var minutes sql.NullFloat64
	err := t.tx.GetContext(ctx, &minutes, `UPDATE threads SET `+strings.Join(set, ", ")+` WHERE thread_id = ? RETURNING ttl_minutes`,
		append(args, id)...)
	if errors.Is(err, sql.ErrNoRows) {
		return threadNotFound(id)
	} else if err != nil {
		return fmt.Errorf("update thread %s: %w", id, err)
	}
	if minutes.Valid {
		// A TTL expiry moves to now + TTL (a disarmed one is armed again).
		e := expiry(w.Now, minutes.Float64)
		if _, err := t.tx.ExecContext(ctx, `UPDATE threads SET ttl_expires_at = ? WHERE thread_id = ?`, nullTime(&e), id); err != nil {
			return fmt.Errorf("update thread %s: %w", id, err)
		}
	}
	return nil
}

// DeleteThread implements driver.Tx. Runs and checkpoints go with the
// thread (ON DELETE CASCADE).
func (t *txn) DeleteThread(ctx context.Context, id string) error {
	if _, err := t.tx.ExecContext(ctx, `DELETE FROM threads WHERE thread_id = ?`, id); err != nil {
		return fmt.Errorf("delete thread %s: %w", id, err)
	}
	return nil
}

// InsertRun implements driver.Tx. A claimed run records this DB's
// lease holder, so that RecoverRuns finds it when this process is gone.
func (t *txn) InsertRun(ctx context.Context, r *graphserver.Run, claim *driver.RunClaim) error {
	metadata, err := jsoncol.Object(r.Metadata)
	if err != nil {
		return err
	}
	kwargs, err := jsoncol.Kwargs(&r.Kwargs)
	if err != nil {
		return err
	}
	status, attempt := r.Status, 0
	var owner, lease, holder sql.NullString
	if claim != nil {
		status, attempt = graphserver.RunRunning, 1
		owner = sql.NullString{String: claim.Owner, Valid: true}
		lease = sql.NullString{String: formatTime(claim.LeaseUntil), Valid: true}
		holder = t.db.holderID()
	}
	_, err = t.tx.ExecContext(ctx, `INSERT INTO runs (`+runColumns+`, attempt, lease_owner, lease_expires_at, lease_holder)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.RunID, r.ThreadID, r.AssistantID, formatTime(r.CreatedAt), formatTime(r.UpdatedAt), status, metadata,
		r.MultitaskStrategy, kwargs, attempt, owner, lease, holder)
	if isConstraint(err) {
		return graphserver.Errorf(graphserver.ECONFLICT, "Run with ID %s already exists", r.RunID)
	} else if err != nil {
		return fmt.Errorf("insert run: %w", err)
	}
	return nil
}

// GetRun implements driver.Tx.
func (t *txn) GetRun(ctx context.Context, runID string) (*graphserver.Run, error) {
	var r struct {
		runRow
		Attempt int `db:"attempt"`
	}
	err := t.tx.GetContext(ctx, &r, `SELECT `+runColumns+`, attempt FROM runs WHERE run_id = ?`, runID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, runNotFound(runID)
	} else if err != nil {
		return nil, fmt.Errorf("read run %s: %w", runID, err)
	}
	run, err := r.run()
	if err != nil {
		return nil, err
	}
	run.Attempt = r.Attempt
	return run, nil
}

// activeRunsQuery selects the pending and running runs of thread ?.
var activeRunsQuery = `SELECT ` + runRefColumns + ` FROM runs AS r WHERE r.thread_id = ? AND ` + activeStatus("r")

// ActiveRuns implements driver.Tx.
func (t *txn) ActiveRuns(ctx context.Context, threadID string) ([]driver.RunRef, error) {
	var rows []runRefRow
	if err := t.tx.SelectContext(ctx, &rows, activeRunsQuery, threadID); err != nil {
		return nil, fmt.Errorf("list active runs: %w", err)
	}
	return runRefs(rows), nil
}

// SelectRuns implements driver.Tx.
func (t *txn) SelectRuns(ctx context.Context, sel *graphserver.RunCancelSelect, filter graphserver.Filter) ([]driver.RunRef, error) {
	var w where
	switch {
	case len(sel.RunIDs) > 0:
		w.add("r.thread_id = ?", sel.ThreadID)
		w.add("r.run_id IN (?"+strings.Repeat(", ?", len(sel.RunIDs)-1)+")", anys(sel.RunIDs)...)
	case sel.Status == "all":
		w.add(activeStatus("r"))
	default:
		w.add("r.status = ?", sel.Status)
	}
	if err := w.filter("t.metadata", filter); err != nil {
		return nil, err
	}
	var rows []runRefRow
	if err := t.tx.SelectContext(ctx, &rows, `SELECT `+runRefColumns+` FROM runs AS r
		JOIN threads AS t ON t.thread_id = r.thread_id`+w.String(), w.args...); err != nil {
		return nil, fmt.Errorf("select runs: %w", err)
	}
	return runRefs(rows), nil
}

// HeldRun implements driver.Tx.
func (t *txn) HeldRun(ctx context.Context, runID, owner string) (*driver.RunRef, error) {
	var rows []runRefRow
	if err := t.tx.SelectContext(ctx, &rows, `SELECT `+runRefColumns+` FROM runs AS r
		WHERE r.run_id = ? AND r.lease_owner = ? AND r.status = 'running'`, runID, owner); err != nil {
		return nil, fmt.Errorf("read run %s: %w", runID, err)
	}
	if len(rows) == 0 {
		return nil, runNotFound(runID)
	}
	return &runRefs(rows)[0], nil
}

// endHeldRunQuery ends run ?3 held by ?4 with status ?1 at ?2, returning
// its thread and whether the thread has another pending or running run.
var endHeldRunQuery = `UPDATE runs SET status = ?, updated_at = ?, lease_owner = NULL, lease_expires_at = NULL,
		lease_holder = NULL, cancel_action = NULL WHERE run_id = ? AND lease_owner = ? AND status = 'running'
		RETURNING thread_id, EXISTS (SELECT 1 FROM runs AS o WHERE o.thread_id = runs.thread_id
			AND ` + activeStatus("o") + ` AND o.run_id <> runs.run_id)`

// EndHeldRun implements driver.Tx: one statement, which reads the
// thread's other active runs too.
func (t *txn) EndHeldRun(ctx context.Context, runID, owner, status string, now time.Time) (string, bool, error) {
	var threadID string
	var active bool
	err := t.tx.QueryRowContext(ctx, endHeldRunQuery, status, formatTime(now), runID, owner).Scan(&threadID, &active)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, runNotFound(runID)
	} else if err != nil {
		return "", false, fmt.Errorf("end run %s: %w", runID, err)
	}
	return threadID, active, nil
}

// DeleteHeldRunThread implements driver.Tx: one statement, the thread's
// runs and checkpoints going by cascade.
func (t *txn) DeleteHeldRunThread(ctx context.Context, runID, owner string) (string, error) {
	var threadID string
	err := t.tx.QueryRowContext(ctx, `DELETE FROM threads WHERE thread_id = (SELECT r.thread_id FROM runs AS r
		WHERE r.run_id = ? AND r.lease_owner = ? AND r.status = 'running')
		RETURNING thread_id`, runID, owner).Scan(&threadID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", runNotFound(runID)
	} else if err != nil {
		return "", fmt.Errorf("delete thread of run %s: %w", runID, err)
	}
	return threadID, nil
}

// PutCheckpoints implements driver.Tx: cps are checked already.
func (t *txn) PutCheckpoints(ctx context.Context, cps []*driver.CheckpointRecord) error {
	created := driver.CreationTimes(cps, t.db.now)
	var prev *putChain
	for i, cp := range cps {
		md, err := splitMetadata(cp.Metadata, cp.RunID)
		if err != nil {
			return err
		}
		if prev, err = putCheckpoint(ctx, t.tx, cp, created[i], md, nil, prev, t.db.latest); err != nil {
			return err
		}
	}
	return nil
}

// GetCheckpoint implements driver.Tx: getCheckpoint on the writer
// connection, whose cache holds the pages the thread's last writes
// touched.
func (t *txn) GetCheckpoint(ctx context.Context, threadID, ns, checkpointID string) (*driver.CheckpointRecord, error) {
	if ns == "" && checkpointID == "" && t.db.latest.enabled.Load() {
		return t.db.latest.get(ctx, t.tx, threadID)
	}
	return getCheckpoint(ctx, t.tx, threadID, ns, checkpointID)
}

// expiredRunsQuery selects the running runs whose lease lapsed before ?.
const expiredRunsQuery = `SELECT ` + runRefColumns + ` FROM runs AS r
	WHERE r.status = 'running' AND r.lease_expires_at < ?`

// ExpiredRuns implements driver.Tx.
func (t *txn) ExpiredRuns(ctx context.Context, now time.Time) ([]driver.RunRef, error) {
	var rows []runRefRow
	if err := t.tx.SelectContext(ctx, &rows, expiredRunsQuery, formatTime(now)); err != nil {
		return nil, fmt.Errorf("select expired runs: %w", err)
	}
	return runRefs(rows), nil
}

// SetRunStatus implements driver.Tx.
func (t *txn) SetRunStatus(ctx context.Context, runID, status string, now time.Time) error {
	res, err := t.tx.ExecContext(ctx, `UPDATE runs SET status = ?, updated_at = ?, lease_owner = NULL, lease_expires_at = NULL,
		lease_holder = NULL, cancel_action = NULL WHERE run_id = ?`, status, formatTime(now), runID)
	if err != nil {
		return fmt.Errorf("set status of run %s: %w", runID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return runNotFound(runID)
	}
	return nil
}

// SetRunCancel implements driver.Tx.
func (t *txn) SetRunCancel(ctx context.Context, runID, action string, now time.Time) error {
	if _, err := t.tx.ExecContext(ctx, `UPDATE runs SET cancel_action = ?, updated_at = ? WHERE run_id = ?`,
		action, formatTime(now), runID); err != nil {
		return fmt.Errorf("cancel run %s: %w", runID, err)
	}
	return nil
}

// DeleteRun implements driver.Tx.
func (t *txn) DeleteRun(ctx context.Context, threadID, runID string) error {
	return deleteRunTx(ctx, t.tx, threadID, runID)
}

// InsertWebhook implements driver.Tx.
func (t *txn) InsertWebhook(ctx context.Context, d *driver.WebhookDelivery, now time.Time) error {
	return insertWebhook(ctx, t.tx, d, now)
}

// FireCron implements driver.Tx.
func (t *txn) FireCron(ctx context.Context, f *driver.CronFiring) (bool, error) {
	return fireCron(ctx, t.tx, f)
}
