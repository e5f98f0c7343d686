// Package sqlite implements driver.Storage on one SQLite file, using the
// pure-Go driver modernc.org/sqlite (no cgo) and sqlx.
//
// Open creates the file if needed and applies the embedded migrations
// (migrations/*.sql, in lexical order, one transaction each, recorded in the
// migrations table), so reopening a database is a no-op.
//
// Every connection runs with busy_timeout(10000), journal_mode(WAL),
// synchronous(NORMAL) and foreign_keys(ON). Writes go through a pool of one
// connection whose transactions begin IMMEDIATE, so writers queue in Go
// instead of failing with SQLITE_BUSY; reads use a separate pool of
// query-only connections that never block the writer (WAL). Each connection
// keeps its prepared statements (the last 256 query texts, BEGIN and COMMIT
// included), so a query is parsed and planned once per connection, not at
// every execution. The short writes of the hot paths (create a thread, put a
// store item, create, claim and finish a run, put a checkpoint or pending
// writes) queued while another commits are committed together, each in its
// own savepoint, by a goroutine the DB owns. Every write is committed before
// its method returns. A store item's full-text entry is committed with the
// item but indexed (into FTS5) later, in batches, by another goroutine the
// DB owns; a full-text search indexes what waits before it reads, so it
// finds every committed put.
//
// Processes on one machine may share the file. A program that is the only
// one to open it can say so (OpenOptions.Exclusive): its transactions then
// lock in memory rather than through system calls, which makes short reads
// about twice as fast, and the assistants and store items it read are kept
// in memory until they change.
//
// Storage conventions (see migrations/0001_core.sql): timestamps are TEXT in
// UTC with fixed microsecond precision (2006-01-02T15:04:05.000000Z), so they
// sort as strings; JSON values are TEXT.
//
// Crash recovery: each open DB holds an OS lock on a file of its own in the
// directory <path>-holders, and records its id on the runs it claims. The
// kernel drops the lock when the process dies, so the next Server to start
// on the file (or another one running on it) recovers those runs at once
// (RecoverRuns) instead of after their leases expire. Without flock
// (non-Unix systems) lease expiry is the only recovery.
//
// Limits: SQLite allows one writer at a time, so write throughput is that of a
// single connection; the database must live on a local file system, and only
// processes on one machine may share it. A
// statement does not start once its context is done but is not interrupted
// when it ends meanwhile. Metadata filters cannot name keys containing a
// double quote.
package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// TimeFormat is how every timestamp column stores time: UTC, fixed
// microsecond precision, so that string order is time order.
const TimeFormat = "2006-01-02T15:04:05.000000Z"

// ReadConnsDefault is the default size of the read pool.
const ReadConnsDefault = 4

// DB is a driver.Storage backed by one SQLite file. It is safe for
// concurrent use. Close it when done, after the Server using it is closed.
type DB struct {
	// Now returns the current time; it defaults to time.Now. Tests may
	// replace it before the DB is used.
	Now func() time.Time

	path   string
	writer *sqlx.DB // one connection, BEGIN IMMEDIATE
	reader *sqlx.DB // several query-only connections
	group  *groupWriter
	text   *textIndexer     // indexes store texts in batches (textindex.go)
	wal    *walCheckpointer // copies the write-ahead log (walcheckpoint.go)

	assistants   assistantCache // decoded assistants, see GetAssistant
	assistantGen *atomic.Int64  // the file's, see assistantGens
	items        *itemCache     // store item rows, the file's, see GetItem
	latest       *latestCache   // threads' latest root checkpoints (latest_cache.go)
	exclusive    bool           // OpenOptions.Exclusive
	holder       *holderLock    // this DB's lease holder id and lock (holder.go)

	observers dbObservers

	closeOnce sync.Once
	closeErr  error
}

var (
	_ driver.Storage   = (*DB)(nil)
	_ driver.Optimizer = (*DB)(nil)

	_ driver.CheckpointBatcher = (*DB)(nil)
	_ driver.RunCheckpointer   = (*DB)(nil)
)

// OpenOptions tunes Open. The zero value is the default.
type OpenOptions struct {
	// ReadConns is the maximum number of read connections; 0 means
	// ReadConnsDefault (or the number of CPUs, if greater).
	ReadConns int

	// Exclusive makes this process the only one that may open the file
	// while this DB has it open (SQLite's unix-excl VFS): the write-ahead
	// log index lives in memory and transactions lock inside the process,
	// instead of taking and releasing file locks through system calls
	// (fcntl on the database and its -shm file), which is most of the cost
	// of a short read. Every DB opened on the file in this process still
	// shares it; another process's Open fails with EUNAVAILABLE until this
	// one closes it or exits. Every change to the file is then made in
	// this process, so GetAssistant (a run's creation) returns a cached
	// assistant without reading the change counter, and GetItem returns a
	// store item read before while that item has not been written since
	// (up to 4,096 items, 8 MiB of values; a TTL sweep that deleted items
	// drops them all). By default (false)
	// processes on one machine may share the file, as the lease holders of
	// RecoverRuns expect.
	Exclusive bool
}

// Open opens (creating it if needed) and migrates the SQLite database at
// path. The path is a plain file name; it must not contain '?'. Open returns
// EINVALID for such a path and a wrapped error when the file cannot be
// opened or migrated.
func Open(path string) (*DB, error) {
	return OpenWith(path, OpenOptions{})
}

// OpenWith is Open with options.
func OpenWith(path string, opts OpenOptions) (*DB, error) {
	if path == "" || strings.ContainsAny(path, "?#") || path == ":memory:" {
		return nil, graphserver.Errorf(graphserver.EINVALID, "The SQLite path %q is invalid: give a file name without '?' or '#'.", path)
	}
	readConns := cmp.Or(opts.ReadConns, max(ReadConnsDefault, runtime.NumCPU()))

	pragmas := url.Values{}
	pragmas.Add("_pragma", "busy_timeout(10000)")
	pragmas.Add("_pragma", "journal_mode(WAL)")
	pragmas.Add("_pragma", "synchronous(NORMAL)")
	pragmas.Add("_pragma", "foreign_keys(ON)")
	// The writer runs no checkpoint of its own accord: walCheckpointer.
	wq := url.Values{"_txlock": {"immediate"}, "_pragma": append(pragmas["_pragma"], "wal_autocheckpoint(0)")}
	if opts.Exclusive {
		wq.Set("vfs", "unix-excl")
	}

	if opts.Exclusive {
		// Take the process's lock on the file first, without waiting, so
		// that a file another process holds fails Open at once with a clear
		// message. The lock stays while any connection of this process has
		// the file open.
		probe, err := openPool(path + "?vfs=unix-excl")
		if err != nil {
			return nil, fmt.Errorf("open sqlite %s: %w", path, err)
		}
		defer probe.Close()
		var n int
		if err := probe.GetContext(context.Background(), &n, `SELECT count(*) FROM sqlite_master`); isBusy(err) {
			return nil, graphserver.Errorf(graphserver.EUNAVAILABLE,
				"The SQLite file %s is in use by another process (OpenOptions.Exclusive asks for the file to itself).", path)
		} else if err != nil {
			return nil, fmt.Errorf("open sqlite %s: %w", path, err)
		}
	}
	writer, err := openPool(path + "?" + wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)

	db := &DB{Now: time.Now, path: path, writer: writer, wal: newWALCheckpointer(), latest: newLatestCache(opts.Exclusive)}
	ctx := context.Background()
	if err := writer.PingContext(ctx); err != nil {
		writer.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	if err := db.migrate(ctx); err != nil {
		writer.Close()
		return nil, err
	}
	// Planner statistics: without them a search whose prefix matches most
	// items picks a poor index. 0x10002 is SQLite's advice for a connection
	// that stays open: analyze what needs it, with a bounded effort.
	if _, err := writer.ExecContext(ctx, `PRAGMA optimize=0x10002`); err != nil {
		writer.Close()
		return nil, fmt.Errorf("open sqlite %s: optimize: %w", path, err)
	}

	// The file exists and is in WAL mode now. Readers set the same pragmas
	// (journal_mode is persistent, so setting it again is a no-op) and refuse
	// writes.
	rq := url.Values{"_pragma": append(pragmas["_pragma"], "query_only(1)")}
	if opts.Exclusive {
		rq.Set("vfs", "unix-excl")
	}
	reader, err := openPool(path + "?" + rq.Encode())
	if err != nil {
		writer.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	reader.SetMaxOpenConns(readConns)
	reader.SetMaxIdleConns(readConns)
	if err := reader.PingContext(ctx); err != nil {
		reader.Close()
		writer.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	db.reader = reader
	db.exclusive = opts.Exclusive
	if db.assistantGen, err = fileGen(&assistantGens, path); err != nil {
		reader.Close()
		writer.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	db.assistantsChanged() // the migrations may have
	if db.items, err = acquireItemCache(path); err != nil {
		reader.Close()
		writer.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	db.items.changed() // the migrations may have
	if db.holder, err = acquireHolder(path); err != nil {
		reader.Close()
		writer.Close()
		db.items.release()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	// The checkpointer's connection: the readers' pragmas, able to write
	// (a checkpoint writes the database file).
	cq := url.Values{"_pragma": pragmas["_pragma"]}
	if opts.Exclusive {
		cq.Set("vfs", "unix-excl")
	}
	ckpt, err := openPool(path + "?" + cq.Encode())
	if err != nil {
		reader.Close()
		writer.Close()
		db.holder.release()
		db.items.release()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	ckpt.SetMaxOpenConns(1)
	ckpt.SetMaxIdleConns(1)
	ckpt.SetConnMaxLifetime(0)
	ckpt.SetConnMaxIdleTime(0)
	db.wal.conn = ckpt
	go db.walCheckpointLoop()
	db.group = newGroupWriter()
	go db.groupLoop()
	db.text = newTextIndexer()
	go db.textIndexLoop()
	return db, nil
}

// openPool opens a pool of connections to dsn that cache their prepared
// statements (cachingConnector).
func openPool(dsn string) (*sqlx.DB, error) {
	c, err := newCachingConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sqlx.NewDb(sql.OpenDB(c), "sqlite"), nil
}

// Close closes both connection pools. It does not wait for Server work;
// close the Server first. Closing again returns the first result.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		// The indexer writes through the group: stop it first. Texts still
		// waiting are indexed after the next Open.
		close(db.text.stop)
		<-db.text.done
		// Refuse new writes first: under a steady load the group loop
		// would otherwise never find its queue empty and see stop.
		db.group.mu.Lock()
		db.group.closed = true
		db.group.mu.Unlock()
		close(db.group.stop)
		<-db.group.done
		close(db.wal.stop)
		<-db.wal.done
		// The writer closes last: closing the file's last connection
		// checkpoints the whole log into it.
		db.closeErr = errors.Join(db.wal.conn.Close(), db.reader.Close(), db.writer.Close())
		db.items.release()
		// Last: this DB can write no more, so its runs may be recovered.
		db.holder.release()
	})
	return db.closeErr
}

// Path returns the file name the DB was opened with.
func (db *DB) Path() string { return db.path }

// Ping checks that both pools answer a query.
func (db *DB) Ping(ctx context.Context) error {
	var n int
	if err := db.reader.GetContext(ctx, &n, `SELECT 1`); err != nil {
		return fmt.Errorf("ping sqlite reader: %w", err)
	}
	if err := db.writer.GetContext(ctx, &n, `SELECT 1`); err != nil {
		return fmt.Errorf("ping sqlite writer: %w", err)
	}
	return nil
}

// Optimize runs PRAGMA optimize and a truncating WAL checkpoint. It
// implements driver.Optimizer: a started Server calls it every
// Options.OptimizeInterval. It is safe at any time.
func (db *DB) Optimize(ctx context.Context) error {
	if _, err := db.writer.ExecContext(ctx, `PRAGMA optimize`); err != nil {
		return fmt.Errorf("sqlite optimize: %w", err)
	}
	if _, err := db.writer.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return fmt.Errorf("sqlite wal checkpoint: %w", err)
	}
	return nil
}

func (db *DB) now() time.Time {
	if db.Now == nil {
		return time.Now()
	}
	return db.Now()
}

// write runs fn in one IMMEDIATE transaction on the writer connection,
// committing when fn returns nil and rolling back otherwise. The error fn
// returns is passed through translate.
func (db *DB) write(ctx context.Context, fn func(tx *connTx) error) error {
	tx, err := beginTx(ctx, db.writer, beginWrite)
	if err != nil {
		return translate(fmt.Errorf("begin write: %w", err))
	}
	defer rollback(tx)
	if err := fn(tx); err != nil {
		return translate(err)
	}
	if err := tx.Commit(); err != nil {
		return translate(fmt.Errorf("commit: %w", err))
	}
	db.wal.committed()
	return nil
}

// read runs fn in one read transaction (a consistent snapshot) on the
// reader pool.
func (db *DB) read(ctx context.Context, fn func(tx *connTx) error) error {
	tx, err := beginTx(ctx, db.reader, beginRead)
	if err != nil {
		return translate(fmt.Errorf("begin read: %w", err))
	}
	defer rollback(tx)
	if err := fn(tx); err != nil {
		return translate(err)
	}
	if err := tx.Commit(); err != nil {
		return translate(fmt.Errorf("end read: %w", err))
	}
	return nil
}

// rollback ends tx if it is still open (sql.ErrTxDone after Commit,
// ignored here). Rollback takes no context: it runs even after the
// caller's context is cancelled.
func rollback(tx *connTx) {
	_ = tx.Rollback()
}

// translate turns driver errors into *graphserver.Error once, at the
// package boundary: an *Error passes through; sql.ErrNoRows becomes
// ENOTFOUND; UNIQUE and PRIMARY KEY violations become ECONFLICT; a FOREIGN KEY
// violation becomes ENOTFOUND (the parent row is missing). Anything else is
// returned unchanged (an internal error).
func translate(err error) error {
	if err == nil {
		return nil
	}
	var ge *graphserver.Error
	if errors.As(err, &ge) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return graphserver.Errorf(graphserver.ENOTFOUND, "Not found.")
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return graphserver.Errorf(graphserver.ECONFLICT, "The resource already exists.")
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return graphserver.Errorf(graphserver.ENOTFOUND, "The resource it refers to does not exist.")
		}
	}
	return err
}

// isBusy reports whether err is SQLITE_BUSY (a lock held elsewhere).
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// isConstraint reports whether err is a UNIQUE or PRIMARY KEY violation.
func isConstraint(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return true
		}
	}
	return false
}

// migrate applies every embedded migrations/*.sql file not yet recorded in
// the migrations table, in lexical order, each in its own transaction.
func (db *DB) migrate(ctx context.Context) error {
	if _, err := db.writer.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS migrations (
	name       TEXT PRIMARY KEY,
	applied_at TEXT NOT NULL
)`); err != nil {
		return fmt.Errorf("create migrations table: %w", err)
	}
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("list migrations: %w", err)
	}
	sort.Strings(names)
	for _, name := range names {
		body, err := fs.ReadFile(migrationFS, name)
		if err != nil {
			return fmt.Errorf("read migration %s: %w", name, err)
		}
		base := strings.TrimPrefix(name, "migrations/")
		err = db.write(ctx, func(tx *connTx) error {
			var n int
			if err := tx.GetContext(ctx, &n, `SELECT count(*) FROM migrations WHERE name = ?`, base); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, string(body)); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO migrations (name, applied_at) VALUES (?, ?)`, base, formatTime(db.now()))
			return err
		})
		if err != nil {
			return fmt.Errorf("apply migration %s: %w", base, err)
		}
	}
	return nil
}
