package sqlite

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"
)

// connTx is a transaction begun and ended with statements (BEGIN ...,
// COMMIT, ROLLBACK) on a connection held for its length, instead of
// database/sql's BeginTx. A *sql.Tx watches its context with a goroutine,
// and each query run in it with another one (a transaction's context is
// always cancellable), which costs more than most statements of the hot
// paths: a run's statements would start about seven goroutines on the
// writer. The statements of a connTx run with the contexts they are given:
// the transaction's functions pass contexts without cancellation (see
// writeGrouped), and a cachedConn interrupts no statement anyway.
//
// Its statements are those of the connection (sqlx.Conn); Commit or
// Rollback end it and give the connection back to its pool.
type connTx struct {
	*sqlx.Conn
	done bool
}

// The statements that begin a transaction: a write takes the write lock at
// once, waiting for it (busy_timeout) if another process holds it, where a
// deferred transaction that read first would fail with SQLITE_BUSY at its
// first write; a read takes its snapshot at its first statement.
const (
	beginWrite = "BEGIN IMMEDIATE"
	beginRead  = "BEGIN"
)

// beginTx takes a connection of pool and begins a transaction on it with
// begin ("BEGIN IMMEDIATE" on the writer, "BEGIN" on a reader). Waiting
// for the connection ends with ctx; the transaction does not.
func beginTx(ctx context.Context, pool *sqlx.DB, begin string) (*connTx, error) {
	conn, err := pool.Connx(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(context.WithoutCancel(ctx), begin); err != nil {
		conn.Close()
		return nil, err
	}
	return &connTx{Conn: conn}, nil
}

// Commit commits the transaction. A COMMIT that fails (SQLITE_BUSY, say)
// may leave the transaction open: it is rolled back, so that the
// connection goes back to its pool out of any transaction.
func (t *connTx) Commit() error {
	if t.done {
		return sql.ErrTxDone
	}
	t.done = true
	defer t.Conn.Close()
	if _, err := t.ExecContext(context.Background(), "COMMIT"); err != nil {
		_, _ = t.ExecContext(context.Background(), "ROLLBACK") // "no transaction is active" when COMMIT ended it
		return err
	}
	return nil
}

// Rollback rolls the transaction back; sql.ErrTxDone once it has ended.
// An error of ROLLBACK itself ("no transaction is active" when SQLite
// ended it already, after a failed statement) is not returned.
func (t *connTx) Rollback() error {
	if t.done {
		return sql.ErrTxDone
	}
	t.done = true
	defer t.Conn.Close()
	_, _ = t.ExecContext(context.Background(), "ROLLBACK")
	return nil
}
