package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
	"github.com/graphserver/graphserver/driver"
)

// A holder is one open DB: the runs it claims record its id
// (runs.lease_holder), and while it is open it holds an exclusive OS lock
// (flock) on the file <database>-holders/<id>. The kernel releases that
// lock when the process dies, however it dies (SIGKILL included), so any
// process sharing the database can tell, without waiting for a lease to
// expire, that the runs of a holder whose lock is free have no worker left:
// RecoverRuns gives them back to the queue at once. Where locks are not
// available (non-Unix systems), holders are not tracked and lease expiry is
// the only recovery.

// holderSuffix names the directory of holder lock files, beside the
// database file.
const holderSuffix = "-holders"

// holderLock is the lock an open DB holds on its holder file.
type holderLock struct {
	id   string
	dir  string
	file *os.File // nil when locks are not supported
}

// acquireHolder creates and locks this DB's holder file, then removes the
// files of holders that are gone. The file is locked under a temporary name
// and renamed into place, so no other process can ever see it unlocked.
func acquireHolder(dbPath string) (*holderLock, error) {
	if !locksSupported {
		return &holderLock{}, nil
	}
	dir := dbPath + holderSuffix
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create holder directory: %w", err)
	}
	id := uuid.NewString()
	tmp := filepath.Join(dir, ".new-"+id)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create holder file: %w", err)
	}
	if ok, err := tryLock(f); err != nil || !ok {
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("lock holder file: %w", cmp.Or(err, errors.New("already locked")))
	}
	if err := os.Rename(tmp, filepath.Join(dir, id)); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("name holder file: %w", err)
	}
	h := &holderLock{id: id, dir: dir, file: f}
	h.removeGone()
	return h, nil
}

// otherHoldersQuery lists the holders of running runs other than ours;
// heldRunsQuery(n) selects the running runs of n holders. Both read the
// runs_lease index, which covers every running run.
const otherHoldersQuery = `SELECT DISTINCT lease_holder FROM runs
	WHERE status = 'running' AND lease_holder IS NOT NULL AND lease_holder <> ?`

func heldRunsQuery(n int) string {
	return `SELECT ` + runRefColumns + ` FROM runs AS r
		WHERE r.status = 'running' AND r.lease_holder IN (?` + strings.Repeat(", ?", n-1) + `)`
}

// holderID is the lease_holder value of the runs this DB claims: NULL
// where holders are not tracked.
func (db *DB) holderID() sql.NullString {
	if db.holder == nil || db.holder.file == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: db.holder.id, Valid: true}
}

// release unlocks and removes the holder file.
func (h *holderLock) release() {
	if h == nil || h.file == nil {
		return
	}
	os.Remove(filepath.Join(h.dir, h.id))
	h.file.Close() // closing the only descriptor releases the lock
	h.file = nil
}

// gone reports whether holder id is gone: its lock file is missing or not
// locked (its process closed the DB or died). With gone true it also
// returns a function removing the file, to call once its runs are
// recovered; until then the file stays locked by the caller, so that two
// processes do not recover the same holder at once.
func (h *holderLock) gone(id string) (bool, func()) {
	if h.file == nil || id == "" || id == h.id || strings.ContainsAny(id, `/\`) || strings.HasPrefix(id, ".") {
		return false, nil
	}
	path := filepath.Join(h.dir, id)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return true, func() {}
	} else if err != nil {
		return false, nil
	}
	ok, err := tryLock(f)
	if err != nil || !ok {
		f.Close()
		return false, nil
	}
	return true, func() {
		os.Remove(path)
		f.Close()
	}
}

// removeGone removes the files of holders that are gone (they claimed no
// run, or their runs were recovered by lease expiry).
func (h *holderLock) removeGone() {
	entries, err := os.ReadDir(h.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if ok, done := h.gone(e.Name()); ok {
			done()
		}
	}
}

var _ driver.RunRecoverer = (*DB)(nil)

// RecoverRuns implements driver.RunRecoverer: it gives sweep the
// running runs whose holder is gone (the process that
// claimed them closed the database or died), without waiting for their
// leases to expire. Runs held by this DB, by holders still open (in this
// process or another one) and by unknown holders are left to lease expiry.
func (db *DB) RecoverRuns(ctx context.Context, sweep func(ctx context.Context, tx driver.Tx, runs []driver.RunRef) error) error {
	if db.holder.file == nil {
		return nil
	}
	var holders []string
	if err := db.reader.SelectContext(ctx, &holders, otherHoldersQuery, db.holder.id); err != nil {
		return translate(fmt.Errorf("list run holders: %w", err))
	}
	var dead []any
	var cleanups []func()
	defer func() {
		for _, c := range cleanups {
			c()
		}
	}()
	for _, id := range holders {
		if ok, done := db.holder.gone(id); ok {
			dead = append(dead, id)
			cleanups = append(cleanups, done)
		}
	}
	if len(dead) == 0 {
		return nil
	}
	return db.WithTx(ctx, func(ctx context.Context, tx driver.Tx) error {
		var rows []runRefRow
		if err := db.txOf(tx).SelectContext(ctx, &rows, heldRunsQuery(len(dead)), dead...); err != nil {
			return fmt.Errorf("select runs of gone holders: %w", err)
		}
		if len(rows) == 0 {
			return nil
		}
		return sweep(ctx, tx, runRefs(rows))
	})
}
