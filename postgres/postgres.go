// Package postgres implements driver.Storage on PostgreSQL, using
// github.com/jackc/pgx/v5 (pgxpool), so that several graphserver processes,
// on one machine or many, serve one database.
//
// Open connects, then applies the embedded migrations (migrations/*.sql, in
// lexical order, one transaction each, recorded in the
// graphserver_migrations table) while holding a session advisory lock, so
// processes starting at once migrate the database once.
//
// The run queue is shared by every process: a worker claims the oldest
// eligible pending run with FOR UPDATE SKIP LOCKED, so claimers never wait
// on each other, and holds it under a lease; the Server of any process
// sweeps runs whose lease expired (a process that died) back to the queue.
// At most one run of a thread is running at a time, which a partial unique
// index enforces whatever the processes do.
//
// Storage conventions (see migrations/0001_init.sql): timestamps are
// timestamptz; identifiers compare byte by byte (COLLATE "C"), as in the
// sqlite driver; metadata and values are jsonb, and access-control filters
// and containment searches run inside the query with jsonb operators.
//
// Limits: the clock of each process stamps what it writes (leases, cron
// firings), so the machines sharing a database need synchronised clocks
// (NTP); a lease must be longer than the skew between them.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationLockKey is the advisory lock key Open holds while it migrates
// (an arbitrary constant: "graphsrv" in ASCII).
const migrationLockKey int64 = 0x6772617068737276

// DB is a driver.Storage backed by a PostgreSQL database. It is safe
// for concurrent use. Close it when done, after the Server using it.
type DB struct {
	// Now returns the current time; it defaults to time.Now. Tests may
	// replace it before the DB is used.
	Now func() time.Time

	pool *pgxpool.Pool

	observers dbObservers

	closeOnce sync.Once
}

var (
	_ driver.Storage         = (*DB)(nil)
	_ driver.RunCheckpointer = (*DB)(nil)

	_ driver.CheckpointBatcher = (*DB)(nil)
	_ driver.RunQueueCounter   = (*DB)(nil)
)

// Open connects to the PostgreSQL database at url (a postgres:// URL or a
// key=value connection string, as pgx reads them) and migrates it. It
// returns EINVALID for a URL pgx cannot parse and a wrapped error when the
// database cannot be reached or migrated. The pool's size and timeouts can
// be set in the URL (pool_max_conns, ...; see pgxpool.ParseConfig).
func Open(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, graphserver.Errorf(graphserver.EINVALID, "The PostgreSQL URL is invalid: %v.", err)
	}
	return OpenConfig(ctx, cfg)
}

// OpenConfig is Open with a parsed pool configuration.
func OpenConfig(ctx context.Context, cfg *pgxpool.Config) (*DB, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	db := &DB{Now: time.Now, pool: pool}
	if err := db.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return db, nil
}

// Close closes the connection pool; it waits for connections in use to be
// returned. Close the Server first. Closing again does nothing.
func (db *DB) Close() error {
	db.closeOnce.Do(db.pool.Close)
	return nil
}

// Pool returns the connection pool, for tools and tests. Do not close it.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Ping implements driver.Storage: it checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping postgres: %w", err)
	}
	return nil
}

func (db *DB) now() time.Time {
	if db.Now == nil {
		return time.Now()
	}
	return db.Now()
}

// querier is what a pool and a transaction both offer.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// tx runs fn in one READ COMMITTED transaction, committing when fn
// returns nil and rolling back otherwise. The error is passed through
// translate.
// Its BEGIN goes with its first statement, its notifications with its
// COMMIT (pipeTx).
func (db *DB) tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return translate(err)
	}
	defer conn.Release() // a connection left in a transaction is closed, not reused
	t := &pipeTx{conn: conn}
	defer func() {
		if !t.done { // fn panicked
			_ = t.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if err := fn(t); err != nil {
		_ = t.Rollback(ctx)
		return translate(err)
	}
	return translate(t.Commit(ctx))
}

// writeTx is tx for the writes of the run hot path (threads, runs,
// checkpoints, store items), reported to the observers.
func (db *DB) writeTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	start := time.Now()
	err := db.tx(ctx, fn)
	db.observeWrite(max(time.Since(start), time.Nanosecond), err)
	return err
}

// rebinds caches the $n form of queries written with '?' placeholders.
var rebinds sync.Map

// rebind turns the '?' placeholders of query into $1, $2, ... Queries never
// hold a '?' of their own (jsonb key tests use jsonb_exists).
func rebind(query string) string {
	if q, ok := rebinds.Load(query); ok {
		return q.(string)
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	out := b.String()
	if len(query) < 4096 {
		rebinds.Store(query, out)
	}
	return out
}

// exec runs a statement written with '?' placeholders.
func exec(ctx context.Context, q querier, query string, args ...any) (int64, error) {
	tag, err := q.Exec(ctx, rebind(query), args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// getRow reads one row into a struct with db tags; pgx.ErrNoRows when there
// is none.
func getRow[T any](ctx context.Context, q querier, query string, args ...any) (T, error) {
	rows, _ := q.Query(ctx, rebind(query), args...)
	return pgx.CollectOneRow(rows, pgx.RowToStructByNameLax[T])
}

// selectRows reads rows into structs with db tags.
func selectRows[T any](ctx context.Context, q querier, query string, args ...any) ([]T, error) {
	rows, _ := q.Query(ctx, rebind(query), args...)
	return pgx.CollectRows(rows, pgx.RowToStructByNameLax[T])
}

// scalar reads the single column of one row.
func scalar[T any](ctx context.Context, q querier, query string, args ...any) (T, error) {
	var v T
	err := q.QueryRow(ctx, rebind(query), args...).Scan(&v)
	return v, err
}

// scalars reads the single column of every row.
func scalars[T any](ctx context.Context, q querier, query string, args ...any) ([]T, error) {
	rows, _ := q.Query(ctx, rebind(query), args...)
	return pgx.CollectRows(rows, pgx.RowTo[T])
}

// PostgreSQL error codes the driver tells apart.
const (
	codeUniqueViolation     = "23505"
	codeForeignKeyViolation = "23503"
	codeUntranslatable      = "22P05" // \u0000 in jsonb
	codeBadEncoding         = "22021" // NUL in text
)

// pgCode returns the SQLSTATE of err, "" when it is not a server error.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// translate turns driver errors into *graphserver.Error once, at the
// package boundary: an *Error passes through; pgx.ErrNoRows becomes
// ENOTFOUND; unique violations ECONFLICT; a foreign key violation ENOTFOUND
// (the row it refers to is missing). Anything else is returned unchanged
// (an internal error).
func translate(err error) error {
	if err == nil {
		return nil
	}
	var ge *graphserver.Error
	if errors.As(err, &ge) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return graphserver.Errorf(graphserver.ENOTFOUND, "Not found.")
	}
	switch pgCode(err) {
	case codeUniqueViolation:
		return graphserver.Errorf(graphserver.ECONFLICT, "The resource already exists.")
	case codeForeignKeyViolation:
		return graphserver.Errorf(graphserver.ENOTFOUND, "The resource it refers to does not exist.")
	case codeUntranslatable, codeBadEncoding:
		return graphserver.Errorf(graphserver.EINVALID, "The value cannot be stored: text and JSON cannot hold NUL characters.")
	}
	return err
}

// migrate applies every embedded migrations/*.sql file not yet recorded,
// in lexical order, each in its own transaction, holding the migration
// advisory lock on one connection meanwhile: a process starting while
// another migrates waits, then finds nothing left to do.
func (db *DB) migrate(ctx context.Context) error {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate postgres: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLockKey); err != nil {
		return fmt.Errorf("migrate postgres: lock: %w", err)
	}
	defer func() {
		// Unlock even when ctx is done; a failed unlock ends with the
		// session, so drop the connection then.
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLockKey); err != nil {
			conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS graphserver_migrations (
	name       TEXT PRIMARY KEY,
	applied_at timestamptz NOT NULL
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
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM graphserver_migrations WHERE name = $1`, base).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			// The simple protocol runs a file of several statements.
			if _, err := tx.Exec(ctx, string(body), pgx.QueryExecModeSimpleProtocol); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO graphserver_migrations (name, applied_at) VALUES ($1, $2)`, base, db.now())
			return err
		})
		if err != nil {
			return fmt.Errorf("apply migration %s: %w", base, err)
		}
	}
	return nil
}
