package sqlite_test

import (
	"testing"

	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/internal/storagetest"
)

// TestStorage runs the shared driver conformance suite on a fresh temp-file
// database per call.
func TestStorage(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) driver.Storage {
		return openDB(t)
	})
}

// BenchmarkStorage runs the shared storage benchmarks on SQLite.
func BenchmarkStorage(b *testing.B) {
	storagetest.Benchmark(b, func(b *testing.B) driver.Storage {
		return openDB(b)
	})
}
