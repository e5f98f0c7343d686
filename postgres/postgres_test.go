package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphserver/graphserver/postgres"
)

// URLEnv names the environment variable holding the URL of a PostgreSQL
// server the tests may create databases on, such as
// postgres://postgres@127.0.0.1:5432/test. Without it the tests skip.
const URLEnv = "GRAPHSERVER_POSTGRES_URL"

// testDB is the URL of the database this test run created (TestMain), ""
// when the tests skip.
var testDB string

// TestMain creates a database of its own for the run (a unique name) on
// the server GRAPHSERVER_POSTGRES_URL names, and drops it afterwards.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	base := os.Getenv(URLEnv)
	if base == "" {
		return m.Run()
	}
	url, drop, err := createDatabase(context.Background(), base)
	if err != nil {
		fmt.Fprintf(os.Stderr, "postgres tests: %v\n", err)
		return 1
	}
	defer drop()
	testDB = url
	return m.Run()
}

// createDatabase creates a database with a unique name on the server of
// base and returns its URL and a function dropping it.
func createDatabase(ctx context.Context, base string) (string, func(), error) {
	cfg, err := pgx.ParseConfig(base)
	if err != nil {
		return "", nil, fmt.Errorf("parse %s: %w", URLEnv, err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return "", nil, fmt.Errorf("connect to %s: %w", URLEnv, err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "gs_test_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		conn.Close(ctx)
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	drop := func() {
		if _, err := conn.Exec(context.Background(), `DROP DATABASE `+name+` WITH (FORCE)`); err != nil {
			fmt.Fprintf(os.Stderr, "postgres tests: drop database %s: %v\n", name, err)
		}
		conn.Close(context.Background())
	}
	dbCfg := cfg.Copy()
	dbCfg.Database = name
	return dbCfg.ConnString(), drop, nil
}

// requireURL skips tb when no PostgreSQL server is configured and returns
// the URL of the run's database.
func requireURL(tb testing.TB) string {
	tb.Helper()
	if testDB == "" {
		tb.Skipf("PostgreSQL tests skipped: set %s (for example postgres://postgres@127.0.0.1:5432/test) to run them", URLEnv)
	}
	return testDB
}

// schemas are migrated schemas of the run's database that no test uses,
// emptied for reuse (as river's riverdbtest.TestSchema does): migrating a
// fresh schema costs about a second on a busy machine, emptying one
// milliseconds.
var schemas struct {
	sync.Mutex
	free []string
}

// openDB opens a storage on an empty, migrated schema of its own in the
// run's database, closed and returned to the pool at cleanup.
func openDB(tb testing.TB) *postgres.DB {
	tb.Helper()
	db, _ := openSchema(tb, 4)
	return db
}

// openShared opens n storages on one schema, as n processes sharing a
// database would.
func openShared(tb testing.TB, n int) []*postgres.DB {
	tb.Helper()
	first, cfg := openSchema(tb, 8)
	out := []*postgres.DB{first}
	for range n - 1 {
		db, err := postgres.OpenConfig(context.Background(), cfg.Copy())
		if err != nil {
			tb.Fatalf("open: %v", err)
		}
		tb.Cleanup(func() { db.Close() })
		out = append(out, db)
	}
	return out
}

// openSchema is openDB with a pool of at most conns connections; it also
// returns the pool configuration.
func openSchema(tb testing.TB, conns int32) (*postgres.DB, *pgxpool.Config) {
	tb.Helper()
	url := requireURL(tb)
	ctx := context.Background()
	schemas.Lock()
	var schema string
	if n := len(schemas.free); n > 0 {
		schema, schemas.free = schemas.free[n-1], schemas.free[:n-1]
	}
	schemas.Unlock()
	if schema == "" {
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		schema = "s_" + hex.EncodeToString(b)
		admin, err := pgx.Connect(ctx, url)
		if err != nil {
			tb.Fatalf("connect: %v", err)
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
			tb.Fatalf("create schema: %v", err)
		}
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.MaxConns = conns
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	// Tests need no durability: commits without waiting for the disk.
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	db, err := postgres.OpenConfig(ctx, cfg.Copy())
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() {
		db.Close()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			tb.Errorf("connect: %v", err)
			return
		}
		defer conn.Close(ctx)
		// Empty every table but the migrations' record, then give the
		// schema back.
		if _, err := conn.Exec(ctx, `DO $$ DECLARE t text; BEGIN
			EXECUTE (SELECT 'TRUNCATE ' || string_agg(format('%I.%I', schemaname, tablename), ', ') || ' CASCADE'
				FROM pg_tables WHERE schemaname = '`+schema+`' AND tablename <> 'graphserver_migrations');
			END $$`); err != nil {
			tb.Errorf("empty schema %s: %v", schema, err)
			return
		}
		schemas.Lock()
		schemas.free = append(schemas.free, schema)
		schemas.Unlock()
	})
	return db, cfg
}
