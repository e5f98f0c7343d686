package soaktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/postgres"
)

// pgMaxConns is the size of the soak's PostgreSQL pool.
const pgMaxConns = 8

// openPostgres opens the postgres driver on a fresh schema of the database
// GRAPHSERVER_POSTGRES_URL names (dropped at cleanup); it skips t without
// the URL. There the run event logs are stored, so resumes and replays
// read them from the database.
func openPostgres(t *testing.T) backend {
	url := os.Getenv("GRAPHSERVER_POSTGRES_URL")
	if url == "" {
		t.Skip("PostgreSQL skipped: set GRAPHSERVER_POSTGRES_URL (for example postgres://postgres@127.0.0.1:5432/test) to run it")
	}
	ctx := context.WithoutCancel(t.Context())
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "soak_" + hex.EncodeToString(b)
	admin := func(sql string) {
		conn, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		require.NoError(t, err)
	}
	admin(`CREATE SCHEMA ` + schema)
	t.Cleanup(func() { admin(`DROP SCHEMA ` + schema + ` CASCADE`) })
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.MaxConns = pgMaxConns
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	db, err := postgres.OpenConfig(ctx, cfg)
	require.NoError(t, err)
	return backend{
		set:     func(o *graphserver.Options) { o.Storage = db },
		close:   db.Close,
		fdSlack: pgMaxConns, // the pool's connections; the LISTEN one is opened with the server
	}
}
