package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/sqlite"
)

// openDB opens a fresh temp-file database closed at cleanup.
func openDB(t testing.TB) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

func TestOpen(t *testing.T) {
	t.Parallel()

	t.Run("ReopenIsNoOp", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "gs.db")
		db, err := sqlite.Open(path)
		require.NoError(t, err)
		ctx := t.Context()
		_, err = db.CreateAssistant(ctx, &graphserver.Assistant{AssistantID: "a1", GraphID: "g"}, "", nil)
		require.NoError(t, err)
		before := migrationRows(t, db)
		require.NotEmpty(t, before)
		require.NoError(t, db.Close())

		db, err = sqlite.Open(path)
		require.NoError(t, err)
		defer db.Close()
		require.Equal(t, before, migrationRows(t, db))
		a, err := db.GetAssistant(ctx, "a1", nil)
		require.NoError(t, err)
		require.Equal(t, "g", a.GraphID)
	})

	t.Run("InvalidPath", func(t *testing.T) {
		t.Parallel()
		for _, p := range []string{"", ":memory:", "x.db?mode=memory"} {
			_, err := sqlite.Open(p)
			require.Equal(t, graphserver.EINVALID, graphserver.ErrorCode(err), p)
		}
	})

	t.Run("PragmasOnEveryConnection", func(t *testing.T) {
		t.Parallel()
		db := openDB(t)
		got, err := db.ConnPragmas(t.Context(), 4)
		require.NoError(t, err)
		require.Len(t, got, 5)
		for _, p := range got {
			require.Equal(t, [3]string{"wal", "1", "10000"}, p)
		}
		require.Error(t, db.WriteThroughReader(t.Context()), "reader connections are query-only")
	})

	t.Run("Ping", func(t *testing.T) {
		t.Parallel()
		db := openDB(t)
		require.NoError(t, db.Ping(t.Context()))
		require.NoError(t, db.Optimize(t.Context()))
	})
}

func migrationRows(t *testing.T, db *sqlite.DB) []string {
	t.Helper()
	rows, err := db.Migrations(context.Background())
	require.NoError(t, err)
	return rows
}
