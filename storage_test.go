package graphserver_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/internal/storagetest"
	"github.com/graphserver/graphserver/postgres"
	"github.com/graphserver/graphserver/sqlite"
)

// storageRules are the Server's run rules, handed to the driver suite.
var storageRules = storagetest.Rules{
	CreateRun:        graphserver.InsertRunForTest,
	CancelRuns:       graphserver.CancelRunsForTest,
	FinishRun:        graphserver.FinishRunForTest,
	SweepRuns:        graphserver.SweepExpiredForTest,
	SetThreadSummary: graphserver.SetThreadSummaryForTest,
}

// openSQLite opens a fresh SQLite storage in a temp dir, closed at cleanup.
func openSQLite(tb testing.TB) driver.Storage {
	tb.Helper()
	db, err := sqlite.Open(filepath.Join(tb.TempDir(), "gs.db"))
	require.NoError(tb, err)
	tb.Cleanup(func() { db.Close() })
	return db
}

// openPostgres opens a storage on a fresh schema of the PostgreSQL
// database GRAPHSERVER_POSTGRES_URL names, dropped at cleanup; it skips tb
// without the URL.
func openPostgres(tb testing.TB) driver.Storage {
	tb.Helper()
	url := os.Getenv("GRAPHSERVER_POSTGRES_URL")
	if url == "" {
		tb.Skip("PostgreSQL skipped: set GRAPHSERVER_POSTGRES_URL (for example postgres://postgres@127.0.0.1:5432/test) to run it")
	}
	ctx := context.WithoutCancel(tb.Context())
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "rules_" + hex.EncodeToString(b)
	admin, err := pgx.Connect(ctx, url)
	require.NoError(tb, err)
	_, err = admin.Exec(ctx, `CREATE SCHEMA `+schema)
	require.NoError(tb, err)
	tb.Cleanup(func() {
		_, err := admin.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`)
		require.NoError(tb, err)
		require.NoError(tb, admin.Close(ctx))
	})
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(tb, err)
	cfg.MaxConns = 4
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	db, err := postgres.OpenConfig(ctx, cfg)
	require.NoError(tb, err)
	tb.Cleanup(func() { db.Close() })
	return db
}

// TestStorageRules runs the driver suite with the Server's run rules
// (creating, cancelling, finishing and sweeping runs, thread summaries) on
// each driver: the rules live once in this package and run over any
// driver's Storage.WithTx.
func TestStorageRules(t *testing.T) {
	t.Parallel()
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		storagetest.RunWithRules(t, func(t *testing.T) driver.Storage { return openSQLite(t) }, storageRules)
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		t.Parallel()
		if os.Getenv("GRAPHSERVER_POSTGRES_URL") == "" {
			t.Skip("PostgreSQL skipped: set GRAPHSERVER_POSTGRES_URL (for example postgres://postgres@127.0.0.1:5432/test) to run it")
		}
		storagetest.RunWithRules(t, func(t *testing.T) driver.Storage { return openPostgres(t) }, storageRules)
	})
}

// BenchmarkStorage runs the storage benchmarks on SQLite with the run
// rules, so that the run rows (Hot/StatelessRun, Hot/ThreadRun) measure the
// rules' transactions.
func BenchmarkStorage(b *testing.B) {
	storagetest.BenchmarkWithRules(b, func(b *testing.B) driver.Storage { return openSQLite(b) }, storageRules)
}
