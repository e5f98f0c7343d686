package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the driver graphserver's sqlite package uses
)

// The box's limits: what net/http and SQLite alone do on this machine, in
// this run, so that each row can be read as a fraction of what the machine
// allows (issue #15's "within a few × of what SQLite and net/http allow")
// rather than as an absolute figure, which moves with the machine.

// limitRows are the names of the limits table's rows.
const (
	limitHTTP   = "net/http on loopback: an empty JSON answer (its own process, the same clients)"
	limitSQLite = "SQLite (modernc.org/sqlite): a one-row write transaction, WAL, synchronous NORMAL, one writer"
)

// limitRequests is how many requests or writes one limit measurement
// makes: ten times a row's, as the limits are about ten times faster, so
// that each measurement lasts about as long as a row's.
func limitRequests(o *options) int { return 10 * o.n }

// adjacentRequests is how many requests each measurement of net/http
// alone before and after each of graphserver's measurements makes (about
// half a row's time, at about ten times a row's rate: shorter, it varies
// more).
func adjacentRequests(o *options) int { return 5 * o.n }

// limitResults are the limits' measurements.
type limitResults struct {
	web, lite []result
	after     bool // measured after the rows too
}

// addAfter appends the measurements m taken after the rows to l's.
func (l *limitResults) addAfter(m limitResults) {
	l.web = append(l.web, m.web...)
	l.lite = append(l.lite, m.lite...)
	l.after = true
}

// table renders the limits table, printed after the servers'.
func (l *limitResults) table() [][]string {
	title := "the box's limit, in this run"
	if l.after {
		title += ", before and after the rows"
	}
	return [][]string{{title, "rate", "p50", "p99", "CPU/req"}, limitRow(limitHTTP, l.web), limitRow(limitSQLite, l.lite)}
}

// getOK is the request of the HTTP limit: an empty JSON answer.
var getOK = timed(func(ctx context.Context, t *target, _ int) error {
	_, err := t.call(ctx, http.MethodGet, "/ok", "", http.StatusOK)
	return err
})

// startBare starts the server of the HTTP limit (net/http alone, in a
// process of its own), ready and warmed up; the caller stops it.
func startBare(ctx context.Context, o *options, stderr io.Writer) (*target, error) {
	bo := *o
	bo.url, bo.processes = "", 1
	bo.server = serveConfig{bare: true, logLevel: o.server.logLevel}
	bare, err := startTarget(ctx, &bo, stderr)
	if err != nil {
		return nil, fmt.Errorf("bare HTTP server: %w", err)
	}
	if err := bare.waitReady(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("bare HTTP server: %w", err), bare.stop())
	}
	if _, err := measure(ctx, bare, o.clients, max(limitRequests(o)/10, o.clients), getOK); err != nil { // warm-up
		return nil, errors.Join(fmt.Errorf("bare HTTP server: %w", err), bare.stop())
	}
	return bare, nil
}

// measureLimits measures the HTTP limit (on bare, see startBare) and the
// SQLite limit o.repeat times each.
func measureLimits(ctx context.Context, o *options, bare *target) (limitResults, error) {
	n := limitRequests(o)
	var web, lite []result
	for range o.repeat {
		r, err := measure(ctx, bare, o.clients, n, getOK)
		if err != nil {
			return limitResults{}, fmt.Errorf("bare HTTP server: %w", err)
		}
		web = append(web, r)
		if r, err = sqliteWrites(ctx, n); err != nil {
			return limitResults{}, fmt.Errorf("SQLite writes: %w", err)
		}
		lite = append(lite, r)
	}
	return limitResults{web: web, lite: lite}, nil
}

// limitRow renders a limit's measurements as row does a target's.
func limitRow(name string, ms []result) []string {
	return row(name, [][]result{ms})
}

// sqliteWrites commits n one-row transactions on a new SQLite file opened
// as the sqlite package opens its writer (WAL, synchronous NORMAL, BEGIN
// IMMEDIATE), from one goroutine: the rate of commits SQLite allows a
// single writer, which every write of graphserver's SQLite driver shares.
func sqliteWrites(ctx context.Context, n int) (result, error) {
	dir, err := os.MkdirTemp("", "gs-loadtest-limit-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	dsn := "file:" + filepath.Join(dir, "limit.db") +
		"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return result{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE items (id INTEGER PRIMARY KEY, value TEXT NOT NULL)`); err != nil {
		return result{}, err
	}
	value := `{"text":"the quick brown fox","n":` + strings.Repeat("7", 64) + `}`
	write := func() error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO items (value) VALUES (?)`, value); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	}
	for range max(n/10, 1) { // warm-up: the statement prepared, the file grown
		if err := write(); err != nil {
			return result{}, err
		}
	}
	lat := make([]time.Duration, 0, n)
	cpu0 := cpuTime(os.Getpid()) // this process does nothing else meanwhile
	start := time.Now()
	for range n {
		t := time.Now()
		if err := write(); err != nil {
			return result{}, err
		}
		lat = append(lat, time.Since(t))
	}
	elapsed := time.Since(start)
	cpu := cpuTime(os.Getpid()) - cpu0
	slices.Sort(lat)
	return result{rate: float64(n) / elapsed.Seconds(), p50: lat[n/2], p99: lat[n*99/100], cpu: cpu / time.Duration(n)}, nil
}

// serveBare serves an empty JSON object on every path with net/http alone
// (the HTTP limit), on a free loopback port, until ctx ends.
func serveBare(ctx context.Context, stdout io.Writer) error {
	return serveHTTP(ctx, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
	}), stdout)
}
