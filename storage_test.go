package graphserver_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/storagetest"
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
func openSQLite(tb testing.TB) graphserver.Storage {
	tb.Helper()
	db, err := sqlite.Open(filepath.Join(tb.TempDir(), "gs.db"))
	require.NoError(tb, err)
	tb.Cleanup(func() { db.Close() })
	return db
}

// TestStorageRules runs the driver suite with the Server's run rules
// (creating, cancelling, finishing and sweeping runs, thread summaries) on
// SQLite: the rules live once in this package and run over any driver's
// Storage.WithTx.
func TestStorageRules(t *testing.T) {
	t.Parallel()
	storagetest.RunWithRules(t, func(t *testing.T) graphserver.Storage { return openSQLite(t) }, storageRules)
}

// BenchmarkStorage runs the storage benchmarks on SQLite with the run
// rules, so that the run rows (Hot/StatelessRun, Hot/ThreadRun) measure the
// rules' transactions.
func BenchmarkStorage(b *testing.B) {
	storagetest.BenchmarkWithRules(b, func(b *testing.B) graphserver.Storage { return openSQLite(b) }, storageRules)
}
