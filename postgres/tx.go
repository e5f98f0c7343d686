package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/internal/jsoncol"
)

// WithTx implements driver.Storage: one READ COMMITTED transaction,
// reported to the observers as a write. Its operations lock the rows they
// read for a change, so that the Server's rules run one after the other on
// one thread in every process, in the driver's one lock order (see
// lockThread): a thread's row (FOR NO KEY UPDATE) before the rows of its
// runs; the operations that list runs lock their threads first. The
// notifications they send (a run queued, ended or cancelled) go out when
// it commits.
func (db *DB) WithTx(ctx context.Context, fn func(ctx context.Context, tx driver.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return db.writeTx(ctx, func(tx pgx.Tx) error {
		return fn(ctx, &txn{db: db, tx: tx})
	})
}

// txn is a driver.Tx on a pgx transaction.
type txn struct {
	db *DB
	tx pgx.Tx
	// locked are the threads whose rows tx locked (or inserted): a row
	// locked stays so, and stays there, until tx ends, so they need not
	// be locked or checked again (a round trip each).
	locked map[string]bool
}

// lock records that tx holds the lock of thread id's row.
func (t *txn) lock(id string) {
	if t.locked == nil {
		t.locked = map[string]bool{}
	}
	t.locked[id] = true
}

var _ driver.Tx = (*txn)(nil)

// runRefRow is a run as driver.RunRef reads it.
type runRefRow struct {
	RunID    string  `db:"run_id"`
	ThreadID string  `db:"thread_id"`
	Status   string  `db:"status"`
	Attempt  int     `db:"attempt"`
	Cancel   *string `db:"cancel_action"`
}

const runRefColumns = `r.run_id, r.thread_id, r.status, r.attempt, r.cancel_action`

func runRefs(rows []runRefRow) []driver.RunRef {
	out := make([]driver.RunRef, len(rows))
	for i, r := range rows {
		out[i] = driver.RunRef{RunID: r.RunID, ThreadID: r.ThreadID, Status: r.Status, Attempt: r.Attempt, CancelAction: deref(r.Cancel)}
	}
	return out
}

// CheckThread implements driver.Tx. It locks the thread's row: every
// change of a thread's runs takes that lock first.
func (t *txn) CheckThread(ctx context.Context, id string, filter graphserver.Filter) (*driver.ThreadHead, error) {
	h, err := lockThreadHead(ctx, t.tx, id, filter)
	if err != nil {
		return nil, err
	}
	t.lock(id)
	if h.Active, err = t.ActiveRuns(ctx, id); err != nil {
		return nil, err
	}
	return h, nil
}

// InsertThread implements driver.Tx.
func (t *txn) InsertThread(ctx context.Context, th *graphserver.Thread, temporary bool) error {
	args, err := threadInsertArgs(th, temporary)
	if err != nil {
		return err
	}
	n, err := exec(ctx, t.tx, insertThreadQuery, args...)
	if err != nil {
		return fmt.Errorf("insert thread: %w", err)
	} else if n == 0 {
		return graphserver.Errorf(graphserver.ECONFLICT, "Thread with ID %s already exists", th.ThreadID)
	}
	t.lock(th.ThreadID)
	return nil
}

// UpdateThread implements driver.Tx.
func (t *txn) UpdateThread(ctx context.Context, id string, w *driver.ThreadWrite) error {
	set := []string{"updated_at = ?"}
	args := []any{w.Now}
	if w.Status != "" {
		if w.IfStatus != "" {
			set = append(set, "status = CASE WHEN status = ? THEN ? ELSE status END")
			args = append(args, w.IfStatus, w.Status)
		} else {
			set = append(set, "status = ?")
			args = append(args, w.Status)
		}
	}
	if w.MergeMetadata != nil {
		m, err := jsoncol.Object(w.MergeMetadata)
		if err != nil {
			return err
		}
		set = append(set, "metadata = metadata || ?::jsonb")
		args = append(args, m)
	}
	if w.Config != nil {
		c, err := jsoncol.Object(w.Config)
		if err != nil {
			return err
		}
		set = append(set, "config = ?::jsonb")
		args = append(args, c)
	}
	if s := w.Summary; s != nil {
		// Values and Error are the Server's encoding (see ThreadSummary).
		errv := jsoncol.Encoded(s.Error)
		// A TTL expiry moves to now + TTL (a disarmed one is armed again).
		set = append(set, "error = ?", "state_updated_at = ?",
			"ttl_expires_at = CASE WHEN ttl_minutes IS NULL THEN ttl_expires_at ELSE ?::timestamptz + ttl_minutes * interval '1 minute' END")
		args = append(args, errv, w.Now, w.Now)
		if !w.KeepValues {
			values := jsoncol.Encoded(s.Values)
			interrupts, err := jsoncol.Value(jsoncol.Interrupts(s.Interrupts))
			if err != nil {
				return err
			}
			set = append(set, "state_values = ?", "interrupts = ?")
			args = append(args, values, interrupts)
		}
	}
	query := `UPDATE threads SET ` + strings.Join(set, ", ") + ` WHERE thread_id = ?`
	if t.locked[id] {
		// The row is there: the update goes with the commit.
		if err := execLater(ctx, t.tx, query, append(args, id)...); err != nil {
			return fmt.Errorf("update thread %s: %w", id, err)
		}
		return nil
	}
	n, err := exec(ctx, t.tx, query, append(args, id)...)
	if err != nil {
		return fmt.Errorf("update thread %s: %w", id, err)
	}
	if n == 0 {
		return threadNotFound(id)
	}
	return nil
}

// DeleteThread implements driver.Tx. Runs and checkpoints go with the
// thread (ON DELETE CASCADE); the runs that were in flight are announced
// as ended.
func (t *txn) DeleteThread(ctx context.Context, id string) error {
	// One statement: the runs are read in the snapshot before the delete.
	active, err := scalars[string](ctx, t.tx, `WITH del AS (DELETE FROM threads WHERE thread_id = ?)
		SELECT run_id FROM runs WHERE thread_id = ? AND status IN ('pending', 'running')`, id, id)
	if err != nil {
		return fmt.Errorf("delete thread %s: %w", id, err)
	}
	delete(t.locked, id)
	for _, runID := range active {
		if err := notifyTx(ctx, t.tx, channelRunEnded, runID); err != nil {
			return err
		}
	}
	return nil
}

// InsertRun implements driver.Tx. A pending run wakes the workers of
// every process.
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
	var owner *string
	var lease *time.Time
	if claim != nil {
		status, attempt = graphserver.RunRunning, 1
		owner, lease = &claim.Owner, &claim.LeaseUntil
	}
	n, err := exec(ctx, t.tx, `INSERT INTO runs (`+runColumns+`, lease_owner, lease_expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING`,
		r.RunID, r.ThreadID, r.AssistantID, r.CreatedAt, r.UpdatedAt, status, metadata,
		r.MultitaskStrategy, kwargs, attempt, owner, lease)
	if err != nil {
		return fmt.Errorf("insert run: %w", err)
	} else if n == 0 {
		return graphserver.Errorf(graphserver.ECONFLICT, "Run with ID %s already exists", r.RunID)
	}
	if status == graphserver.RunPending {
		return notifyTx(ctx, t.tx, channelRunQueued, r.RunID)
	}
	return nil
}

// GetRun implements driver.Tx.
func (t *txn) GetRun(ctx context.Context, runID string) (*graphserver.Run, error) {
	r, err := getRow[runRow](ctx, t.tx, `SELECT `+runColumns+` FROM runs WHERE run_id = ?`, runID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, runNotFound(runID)
	} else if err != nil {
		return nil, fmt.Errorf("read run %s: %w", runID, err)
	}
	return r.run()
}

// ActiveRuns implements driver.Tx. The thread's row, then the runs'
// rows are locked: a claim in progress is waited for and seen as running.
func (t *txn) ActiveRuns(ctx context.Context, threadID string) ([]driver.RunRef, error) {
	if !t.locked[threadID] {
		if _, err := exec(ctx, t.tx, `SELECT 1 FROM threads WHERE thread_id = ? FOR NO KEY UPDATE`, threadID); err != nil {
			return nil, fmt.Errorf("lock thread %s: %w", threadID, err)
		}
	}
	rows, err := selectRows[runRefRow](ctx, t.tx, `SELECT `+runRefColumns+` FROM runs AS r
		WHERE r.thread_id = ? AND r.status IN ('pending', 'running') ORDER BY r.run_id FOR UPDATE`, threadID)
	if err != nil {
		return nil, fmt.Errorf("list active runs: %w", err)
	}
	return runRefs(rows), nil
}

// SelectRuns implements driver.Tx. The runs' threads are locked, in
// thread id order, then the runs, in run id order.
func (t *txn) SelectRuns(ctx context.Context, sel *graphserver.RunCancelSelect, filter graphserver.Filter) ([]driver.RunRef, error) {
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
		return nil, err
	}
	if err := lockRunThreads(ctx, t.tx, &w); err != nil {
		return nil, err
	}
	rows, err := selectRows[runRefRow](ctx, t.tx, `SELECT `+runRefColumns+` FROM runs AS r
		JOIN threads AS t ON t.thread_id = r.thread_id`+w.String()+` ORDER BY r.run_id FOR UPDATE OF r`, w.args...)
	if err != nil {
		return nil, fmt.Errorf("select runs: %w", err)
	}
	return runRefs(rows), nil
}

// HeldRun implements driver.Tx. The run's thread row, then its row
// are locked.
func (t *txn) HeldRun(ctx context.Context, runID, owner string) (*driver.RunRef, error) {
	if _, err := exec(ctx, t.tx, lockRunThreadQuery, runID); err != nil {
		return nil, fmt.Errorf("lock thread of run %s: %w", runID, err)
	}
	rows, err := selectRows[runRefRow](ctx, t.tx, `SELECT `+runRefColumns+` FROM runs AS r
		WHERE r.run_id = ? AND r.lease_owner = ? AND r.status = 'running' FOR UPDATE`, runID, owner)
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", runID, err)
	}
	if len(rows) == 0 {
		return nil, runNotFound(runID)
	}
	t.lock(rows[0].ThreadID)
	return &runRefs(rows)[0], nil
}

// DeleteHeldRunThread implements driver.Tx: HeldRun, which locks the
// thread then the run, then DeleteThread, which notifies the thread's
// other active runs' followers.
func (t *txn) DeleteHeldRunThread(ctx context.Context, runID, owner string) (string, error) {
	held, err := t.HeldRun(ctx, runID, owner)
	if err != nil {
		return "", err
	}
	return held.ThreadID, t.DeleteThread(ctx, held.ThreadID)
}

// PutCheckpoints implements driver.Tx: cps are checked already.
func (t *txn) PutCheckpoints(ctx context.Context, cps []*driver.CheckpointRecord) error {
	if len(cps) == 0 {
		return nil
	}
	created := driver.CreationTimes(cps, t.db.now)
	return putCheckpointsTx(ctx, t.tx, cps, created, "", "")
}

// GetCheckpoint implements driver.Tx.
func (t *txn) GetCheckpoint(ctx context.Context, threadID, ns, checkpointID string) (*driver.CheckpointRecord, error) {
	cp, err := getCheckpoint(ctx, t.tx, threadID, ns, checkpointID)
	return cp, translate(err)
}

// ExpiredRuns implements driver.Tx. The runs and their threads are
// locked without waiting, skipping those another process is sweeping or
// finishing.
func (t *txn) ExpiredRuns(ctx context.Context, now time.Time) ([]driver.RunRef, error) {
	rows, err := selectRows[runRefRow](ctx, t.tx, `SELECT `+runRefColumns+` FROM runs AS r
		JOIN threads AS t ON t.thread_id = r.thread_id
		WHERE r.status = 'running' AND r.lease_expires_at < ? ORDER BY r.run_id FOR NO KEY UPDATE OF r, t SKIP LOCKED`, now)
	if err != nil {
		return nil, fmt.Errorf("select expired runs: %w", err)
	}
	return runRefs(rows), nil
}

// SetRunStatus implements driver.Tx. A run back to pending wakes the
// workers of every process; a run that ended is announced, and wakes them
// when its thread has a run waiting.
func (t *txn) SetRunStatus(ctx context.Context, runID, status string, now time.Time) error {
	// Whether the thread has a run waiting comes back with the update,
	// for ended.
	var threadID string
	var waiting bool
	err := t.tx.QueryRow(ctx, rebind(`UPDATE runs SET status = ?, updated_at = ?, lease_owner = NULL,
		lease_expires_at = NULL, cancel_action = NULL WHERE run_id = ?
		RETURNING thread_id, EXISTS (SELECT 1 FROM runs AS p WHERE p.thread_id = runs.thread_id AND p.status = 'pending')`),
		status, now, runID).Scan(&threadID, &waiting)
	if errors.Is(err, pgx.ErrNoRows) {
		return runNotFound(runID)
	} else if err != nil {
		return fmt.Errorf("set status of run %s: %w", runID, err)
	}
	return t.statusSet(ctx, threadID, runID, status, waiting)
}

// statusSet announces that run runID of threadID got status (as
// SetRunStatus says), waiting telling whether the thread has a run pending.
func (t *txn) statusSet(ctx context.Context, threadID, runID, status string, waiting bool) error {
	switch status {
	case graphserver.RunPending:
		return notifyTx(ctx, t.tx, channelRunQueued, runID)
	case graphserver.RunRunning:
		return nil
	}
	return t.ended(ctx, threadID, runID, status, &waiting)
}

// lockRunThreadQuery locks the row of the thread of a run (run_id the
// argument), as every change of a thread's runs does first (lockThread).
const lockRunThreadQuery = `SELECT 1 FROM threads WHERE thread_id = (SELECT thread_id FROM runs WHERE run_id = ?)
	FOR NO KEY UPDATE`

// EndHeldRun implements driver.Tx: HeldRun then SetRunStatus in
// one round trip. The statement locking the thread's row (the lock order
// of HeldRun) is sent ahead of the update, in the same batch; the update,
// a statement of its own, sees what was committed while the lock was
// awaited (a run queued meanwhile), as SetRunStatus after HeldRun does.
func (t *txn) EndHeldRun(ctx context.Context, runID, owner, status string, now time.Time) (string, bool, error) {
	if err := execLater(ctx, t.tx, lockRunThreadQuery, runID); err != nil {
		return "", false, fmt.Errorf("lock thread of run %s: %w", runID, err)
	}
	var threadID string
	var waiting, active bool
	// The subqueries see the runs as they were before the update.
	err := t.tx.QueryRow(ctx, rebind(`UPDATE runs SET status = ?, updated_at = ?, lease_owner = NULL,
		lease_expires_at = NULL, cancel_action = NULL WHERE run_id = ? AND lease_owner = ? AND status = 'running'
		RETURNING thread_id, EXISTS (SELECT 1 FROM runs AS p WHERE p.thread_id = runs.thread_id AND p.status = 'pending'),
			EXISTS (SELECT 1 FROM runs AS o WHERE o.thread_id = runs.thread_id AND o.status IN ('pending', 'running')
				AND o.run_id <> runs.run_id)`),
		status, now, runID, owner).Scan(&threadID, &waiting, &active)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, runNotFound(runID)
	} else if err != nil {
		return "", false, fmt.Errorf("end run %s: %w", runID, err)
	}
	t.lock(threadID)
	return threadID, active, t.statusSet(ctx, threadID, runID, status, waiting)
}

// ended records in the thread's log that run runID of threadID ended
// with status ("" when deleted), announces it, and wakes the workers of
// every process when the thread has a run waiting (waiting, when the
// caller knows; else it is read).
func (t *txn) ended(ctx context.Context, threadID, runID, status string, waiting *bool) error {
	if err := recordRunEnd(ctx, t.tx, threadID, runID, status); err != nil {
		return err
	}
	if err := notifyTx(ctx, t.tx, channelRunEnded, runID); err != nil {
		return err
	}
	if waiting == nil {
		w, err := scalar[bool](ctx, t.tx, `SELECT EXISTS (SELECT 1 FROM runs WHERE thread_id = ? AND status = 'pending')`, threadID)
		if err != nil {
			return fmt.Errorf("end run %s: %w", runID, err)
		}
		waiting = &w
	}
	if *waiting {
		return notifyTx(ctx, t.tx, channelRunQueued, runID)
	}
	return nil
}

// SetRunCancel implements driver.Tx: the worker of the run, in any
// process, is notified.
func (t *txn) SetRunCancel(ctx context.Context, runID, action string, now time.Time) error {
	if _, err := exec(ctx, t.tx, `UPDATE runs SET cancel_action = ?, updated_at = ? WHERE run_id = ?`, action, now, runID); err != nil {
		return fmt.Errorf("cancel run %s: %w", runID, err)
	}
	return notifyTx(ctx, t.tx, channelCancel, action+" "+runID)
}

// DeleteRun implements driver.Tx. The run is announced as ended.
func (t *txn) DeleteRun(ctx context.Context, threadID, runID string) error {
	if err := deleteRunTx(ctx, t.tx, threadID, runID); err != nil {
		return err
	}
	return t.ended(ctx, threadID, runID, "", nil)
}

// InsertWebhook implements driver.Tx.
func (t *txn) InsertWebhook(ctx context.Context, d *driver.WebhookDelivery, now time.Time) error {
	return insertWebhook(ctx, t.tx, d, now)
}

// FireCron implements driver.Tx.
func (t *txn) FireCron(ctx context.Context, f *driver.CronFiring) (bool, error) {
	return fireCron(ctx, t.tx, f)
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
