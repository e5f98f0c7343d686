package postgres_test

import (
	"testing"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/storagetest"
)

// TestStorage runs the shared driver conformance suite on a fresh schema
// per call.
func TestStorage(t *testing.T) {
	t.Parallel()
	requireURL(t)
	storagetest.Run(t, func(t *testing.T) graphserver.Storage {
		return openDB(t)
	})
}

// BenchmarkStorage runs the shared storage benchmarks on PostgreSQL.
func BenchmarkStorage(b *testing.B) {
	requireURL(b)
	storagetest.Benchmark(b, func(b *testing.B) graphserver.Storage {
		return openDB(b)
	})
}
