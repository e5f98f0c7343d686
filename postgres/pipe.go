package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pipeTx is a pgx.Tx that spends no round trip of its own: its BEGIN goes
// to the server with its first statement (pgx.Batch.BeginTx), and its
// notifications and the statements queued with deferExec go with its
// COMMIT, in one batch. A run's transactions are short and many (its
// creation, each checkpoint, its end), and on a loaded machine each round
// trip waits for a PostgreSQL backend to be scheduled. Durability is as
// with pgx's own transactions: Commit returns nil only once COMMIT
// succeeded. Only the methods the driver uses are provided (Exec, Query,
// QueryRow, Commit, Rollback); it is used by one goroutine.
type pipeTx struct {
	pgx.Tx // the transaction once begun; nil before the first statement

	conn     *pgxpool.Conn
	deferred pgx.Batch // statements sent with the next one or the commit
	notes    [][2]string
	done     bool // committed or rolled back
}

// deferExec queues a statement whose result matters only at commit (an
// insert that ends the transaction's work): it is sent with the next
// statement, or with COMMIT, and its error is Commit's.
func (t *pipeTx) deferExec(sql string, args ...any) {
	t.deferred.Queue(sql, args...)
}

// notify queues a notification (channel, payload) for COMMIT.
func (t *pipeTx) notify(channel, payload string) {
	t.notes = append(t.notes, [2]string{channel, payload})
}

// send sends b (after the deferred statements) as the next statements of
// the transaction, beginning it first when it has not begun: the returned
// results are those of b's queries, in order.
func (t *pipeTx) send(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error) {
	if t.done {
		return nil, pgx.ErrTxClosed
	}
	nDeferred := len(t.deferred.QueuedQueries)
	if t.Tx == nil || nDeferred > 0 {
		all := &pgx.Batch{}
		if t.Tx == nil {
			all.BeginTx(pgx.TxOptions{})
		}
		all.QueuedQueries = append(all.QueuedQueries, t.deferred.QueuedQueries...)
		all.QueuedQueries = append(all.QueuedQueries, b.QueuedQueries...)
		t.deferred = pgx.Batch{}
		var br pgx.BatchResults
		if t.Tx == nil {
			br = t.conn.SendBatch(ctx, all)
			t.Tx = br.Tx()
			if _, err := br.Exec(); err != nil { // BEGIN
				br.Close()
				return nil, err
			}
		} else {
			br = t.Tx.SendBatch(ctx, all)
		}
		for range nDeferred {
			if _, err := br.Exec(); err != nil {
				br.Close()
				return nil, err
			}
		}
		return br, nil
	}
	return t.Tx.SendBatch(ctx, b), nil
}

// Exec implements pgx.Tx.
func (t *pipeTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.Tx != nil && len(t.deferred.QueuedQueries) == 0 {
		return t.Tx.Exec(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br, err := t.send(ctx, b)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// Query implements pgx.Tx.
func (t *pipeTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.Tx != nil && len(t.deferred.QueuedQueries) == 0 {
		return t.Tx.Query(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br, err := t.send(ctx, b)
	if err != nil {
		return &errRows{err: err}, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return &errRows{err: err}, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// QueryRow implements pgx.Tx.
func (t *pipeTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := t.Query(ctx, sql, args...)
	return &row{rows: rows, err: err}
}

// Commit implements pgx.Tx: the deferred statements, the notifications and
// COMMIT in one batch. A transaction that never began has nothing to
// commit.
func (t *pipeTx) Commit(ctx context.Context) error {
	if t.done {
		return pgx.ErrTxClosed
	}
	if t.Tx == nil && len(t.deferred.QueuedQueries) == 0 {
		t.done = true
		return nil
	}
	b := &pgx.Batch{}
	for _, n := range t.notes {
		b.Queue(`SELECT pg_notify($1, $2)`, n[0], n[1])
	}
	b.Queue("commit")
	br, err := t.send(ctx, b)
	if err == nil {
		for range t.notes {
			if _, err = br.Exec(); err != nil {
				break
			}
		}
		if err == nil {
			var tag pgconn.CommandTag
			if tag, err = br.Exec(); err == nil && tag.String() != "COMMIT" {
				err = pgx.ErrTxCommitRollback
			}
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		_ = t.Rollback(ctx)
		return fmt.Errorf("commit: %w", err)
	}
	t.done = true
	return nil
}

// Rollback implements pgx.Tx; it does nothing once the transaction ended.
func (t *pipeTx) Rollback(ctx context.Context) error {
	if t.done {
		return nil
	}
	t.done = true
	if t.Tx == nil || t.conn.Conn().PgConn().TxStatus() == 'I' {
		return nil
	}
	_, err := t.conn.Exec(ctx, "rollback")
	return err
}

// batchRows are the rows of a query sent in a batch: closing them closes
// the batch, so that the connection can be used again.
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if r.br != nil {
		if err := r.br.Close(); err != nil && r.err == nil {
			r.err = err
		}
		r.br = nil
	}
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// errRows are the rows of a query that could not be sent.
type errRows struct {
	pgx.Rows
	err error
}

func (r *errRows) Close()                                       {}
func (r *errRows) Err() error                                   { return r.err }
func (r *errRows) Next() bool                                   { return false }
func (r *errRows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (r *errRows) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (r *errRows) Scan(...any) error                            { return r.err }
func (r *errRows) Values() ([]any, error)                       { return nil, r.err }
func (r *errRows) RawValues() [][]byte                          { return nil }
func (r *errRows) Conn() *pgx.Conn                              { return nil }

// row is QueryRow's result, as pgx's own: the first row, or
// pgx.ErrNoRows.
type row struct {
	rows pgx.Rows
	err  error
}

func (r *row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}
