package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver/postgres"
)

// TestMigrateConcurrently opens one fresh schema from several processes'
// worth of storages at once: the advisory lock lets one migrate while the
// others wait, then find nothing left to do; every open succeeds and each
// migration is recorded once. Opening again is a no-op.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	url := requireURL(t)
	ctx := context.Background()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "m_" + hex.EncodeToString(b)
	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, `CREATE SCHEMA `+schema)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`) })

	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.MaxConns = 2
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	const n = 4
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			db, err := postgres.OpenConfig(ctx, cfg.Copy())
			if err == nil {
				err = db.Ping(ctx)
				db.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	var applied, distinct int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*), count(DISTINCT name) FROM `+schema+`.graphserver_migrations`).Scan(&applied, &distinct))
	require.Equal(t, distinct, applied, "each migration recorded once")
	require.GreaterOrEqual(t, applied, 2)

	db, err := postgres.OpenConfig(ctx, cfg.Copy())
	require.NoError(t, err)
	db.Close()
	var again int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM `+schema+`.graphserver_migrations`).Scan(&again))
	require.Equal(t, applied, again, "reopening applies nothing")
}
