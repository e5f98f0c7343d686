package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/internal/storagetest"
	"github.com/graphserver/graphserver/sqlite"
)

// TestStorage runs the shared driver conformance suite on a fresh temp-file
// database per call.
func TestStorage(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) driver.Storage {
		return openDB(t)
	})
}

// TestStorageExclusive runs the suite on files opened Exclusive, where
// GetAssistant trusts the process's own record of assistant changes
// instead of reading the change counter.
func TestStorageExclusive(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) driver.Storage {
		db, err := sqlite.OpenWith(filepath.Join(t.TempDir(), "gs.db"), sqlite.OpenOptions{Exclusive: true})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, db.Close()) })
		return db
	})
}

// BenchmarkStorage runs the shared storage benchmarks on SQLite.
func BenchmarkStorage(b *testing.B) {
	storagetest.Benchmark(b, func(b *testing.B) driver.Storage {
		return openDB(b)
	})
}
