package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"
)

// openCachedPool opens a one-connection pool of caching connections on a
// fresh file with a table t(x INTEGER PRIMARY KEY) holding 1..5.
func openCachedPool(t *testing.T) *sql.DB {
	t.Helper()
	c, err := newCachingConnector(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	_, err = db.Exec(`CREATE TABLE t (x INTEGER PRIMARY KEY); INSERT INTO t VALUES (1), (2), (3), (4), (5)`)
	require.NoError(t, err)
	return db
}

// cacheLen returns the number of statements the pool's connection caches.
func cacheLen(t *testing.T, db *sql.DB) int {
	t.Helper()
	conn, err := db.Conn(context.Background())
	require.NoError(t, err)
	defer conn.Close()
	n := -1
	require.NoError(t, conn.Raw(func(dc any) error {
		n = dc.(*cachedConn).lru.Len()
		return nil
	}))
	return n
}

func TestStmtCache(t *testing.T) {
	t.Parallel()
	const q = `SELECT x FROM t WHERE x > ? ORDER BY x`
	collect := func(t *testing.T, tx *sql.Tx, min int) []int {
		t.Helper()
		rows, err := tx.Query(q, min)
		require.NoError(t, err)
		defer rows.Close()
		var out []int
		for rows.Next() {
			var x int
			require.NoError(t, rows.Scan(&x))
			out = append(out, x)
		}
		require.NoError(t, rows.Err())
		return out
	}

	t.Run("ReusedWithNewArgs", func(t *testing.T) {
		t.Parallel()
		db := openCachedPool(t)
		base := cacheLen(t, db)
		for _, min := range []int{0, 3, 5} {
			var n int
			require.NoError(t, db.QueryRow(`SELECT count(*) FROM t WHERE x > ?`, min).Scan(&n))
			require.Equal(t, 5-min, n)
		}
		require.Equal(t, base+1, cacheLen(t, db))
	})

	t.Run("NestedSameQuery", func(t *testing.T) {
		t.Parallel()
		db := openCachedPool(t)
		tx, err := db.Begin()
		require.NoError(t, err)
		defer tx.Rollback()
		rows, err := tx.Query(q, 2)
		require.NoError(t, err)
		var outer []int
		var inner [][]int
		for rows.Next() {
			var x int
			require.NoError(t, rows.Scan(&x))
			outer = append(outer, x)
			// The same text while its rows are open: a one-shot statement.
			inner = append(inner, collect(t, tx, x))
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
		require.Equal(t, []int{3, 4, 5}, outer)
		require.Equal(t, [][]int{{4, 5}, {5}, nil}, inner)
		// The cached statement is free again.
		require.Equal(t, []int{1, 2, 3, 4, 5}, collect(t, tx, 0))
	})

	t.Run("ErrorThenReuse", func(t *testing.T) {
		t.Parallel()
		db := openCachedPool(t)
		const ins = `INSERT INTO t (x) VALUES (?)`
		_, err := db.Exec(ins, 3)
		require.True(t, isConstraint(err), "got %v", err)
		_, err = db.Exec(ins, 6)
		require.NoError(t, err)
		var n int
		require.NoError(t, db.QueryRow(`SELECT count(*) FROM t`).Scan(&n))
		require.Equal(t, 6, n)
	})

	t.Run("Eviction", func(t *testing.T) {
		t.Parallel()
		db := openCachedPool(t)
		tx, err := db.Begin()
		require.NoError(t, err)
		defer tx.Rollback()
		rows, err := tx.Query(q, 0) // busy while more statements than the cache holds run
		require.NoError(t, err)
		require.True(t, rows.Next())
		for i := range stmtCacheSize + 20 {
			var got int
			require.NoError(t, tx.QueryRow(fmt.Sprintf(`SELECT x + %d FROM t WHERE x = ?`, i), 1).Scan(&got))
			require.Equal(t, 1+i, got)
		}
		var rest []int
		for rows.Next() {
			var x int
			require.NoError(t, rows.Scan(&x))
			rest = append(rest, x)
		}
		require.NoError(t, rows.Close())
		require.Equal(t, []int{2, 3, 4, 5}, rest)
		require.Equal(t, []int{2, 3, 4, 5}, collect(t, tx, 1))
		require.NoError(t, tx.Commit())
		require.Equal(t, stmtCacheSize, cacheLen(t, db))
	})

	t.Run("Transactions", func(t *testing.T) {
		t.Parallel()
		db := openCachedPool(t)
		base := cacheLen(t, db)
		pool := sqlx.NewDb(db, "sqlite")
		for i, commit := range []bool{true, false, true} {
			tx, err := beginTx(t.Context(), pool, beginWrite)
			require.NoError(t, err)
			_, err = tx.ExecContext(t.Context(), `INSERT INTO t (x) VALUES (?)`, 10+i)
			require.NoError(t, err)
			if commit {
				require.NoError(t, tx.Commit())
			} else {
				require.NoError(t, tx.Rollback())
			}
		}
		var got []int
		rows, err := db.Query(`SELECT x FROM t WHERE x >= 10 ORDER BY x`)
		require.NoError(t, err)
		for rows.Next() {
			var x int
			require.NoError(t, rows.Scan(&x))
			got = append(got, x)
		}
		require.NoError(t, rows.Close())
		require.Equal(t, []int{10, 12}, got)
		// BEGIN IMMEDIATE, COMMIT, ROLLBACK, the insert and the select:
		// cached once.
		require.Equal(t, base+5, cacheLen(t, db))
	})

	t.Run("CancelledContext", func(t *testing.T) {
		t.Parallel()
		db := openCachedPool(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := db.ExecContext(ctx, `INSERT INTO t (x) VALUES (7)`)
		require.ErrorIs(t, err, context.Canceled)
		var n int
		require.NoError(t, db.QueryRow(`SELECT count(*) FROM t`).Scan(&n))
		require.Equal(t, 5, n, "a statement whose context is done does not run")
	})
}
