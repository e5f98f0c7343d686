package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// watchers counts the goroutines database/sql starts to watch a
// transaction's or a query's context.
func watchers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Count(string(buf), "database/sql.(*Tx).awaitDone") + strings.Count(string(buf), "database/sql.(*Rows).awaitDone")
}

// TestTransactionsStartNoWatchers checks that the transactions of the
// three kinds (grouped write, write, read) run their queries without a
// goroutine of database/sql's watching them (connTx), as a *sql.Tx would
// start one for itself and one per query; and that they commit, roll back
// and give their connection back. Not parallel: it counts every
// goroutine of the process.
func TestTransactionsStartNoWatchers(t *testing.T) {
	db := openGroupDB(t)
	ctx := context.Background()
	before := watchers()
	query := func(tx *connTx, x int) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO g (x) VALUES (?)`, x); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT x FROM g`)
		if err != nil {
			return err
		}
		defer rows.Close()
		require.LessOrEqual(t, watchers(), before, "no goroutine watches the transaction or its open rows (one left by an earlier test may end meanwhile)")
		return rows.Err()
	}
	require.NoError(t, db.writeGrouped(ctx, func(ctx context.Context, tx *connTx) error { return query(tx, 1) }))
	require.NoError(t, db.write(ctx, func(tx *connTx) error { return query(tx, 2) }))
	boom := errors.New("boom")
	require.ErrorIs(t, db.write(ctx, func(tx *connTx) error {
		require.NoError(t, query(tx, 3))
		return boom // rolls back
	}), boom)
	var read []int
	require.NoError(t, db.read(ctx, func(tx *connTx) error {
		rows, err := tx.QueryContext(ctx, `SELECT x FROM g ORDER BY x`)
		if err != nil {
			return err
		}
		defer rows.Close()
		require.LessOrEqual(t, watchers(), before)
		for rows.Next() {
			var x int
			if err := rows.Scan(&x); err != nil {
				return err
			}
			read = append(read, x)
		}
		return rows.Err()
	}))
	require.Equal(t, []int{1, 2}, read, "the two writes committed, the third rolled back")
	require.Equal(t, []int{1, 2}, groupRows(t, db))

	tx, err := beginTx(ctx, db.writer, beginWrite)
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	require.ErrorIs(t, tx.Commit(), sql.ErrTxDone)
	require.ErrorIs(t, tx.Rollback(), sql.ErrTxDone)
	require.Equal(t, 0, db.writer.Stats().InUse, "the writer's connection is back in its pool")

	// What watchers counts: a query whose context can be cancelled, outside
	// a connTx, is watched (by a goroutine the stack dump may show only
	// once it is scheduled).
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	base := watchers()
	rows, err := db.reader.QueryContext(cctx, `SELECT x FROM g`)
	require.NoError(t, err)
	defer rows.Close()
	require.Eventually(t, func() bool { return watchers() > base }, 10*time.Second, time.Millisecond)
}
