package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/postgres"
	"github.com/graphserver/graphserver/sqlite"
)

// serveConfig is how the measured server is set up.
type serveConfig struct {
	db       string     // SQLite file ("" = a new temp file, removed at exit) or postgres:// URL
	logLevel slog.Level // the quickstart logs requests at info, the reference server at warn
	cpu      string     // profile files ("" = none)
	mutex    string
	block    string
	bare     bool // serve only net/http's empty answer (the HTTP limit), no graphserver
}

// graphs are the loadtest's graphs: "echo", one node returning its input
// (the "one-node graph"), and "wait", one node that sleeps for
// input.seconds or until the run is cancelled (the idle-subscriber
// scenario's long run). bench/graph.mjs holds the same two for the JS dev
// server.
func graphs() map[string]graphserver.Graph {
	echo := graph.Func("echo", func(_ context.Context, input any) (any, error) { return input, nil })
	wait := graph.Func("wait", func(ctx context.Context, input any) (any, error) {
		secs := 60.0
		if m, ok := input.(map[string]any); ok {
			if s, ok := m["seconds"].(float64); ok {
				secs = s
			}
		}
		t := time.NewTimer(time.Duration(secs * float64(time.Second)))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		return input, nil
	})
	return map[string]graphserver.Graph{"echo": echo, "wait": wait}
}

// serve runs the measured server, wired as examples/quickstart wires it
// (sqlite.OpenWith Exclusive, graphserver.New, httpapi.New with default
// options), on a
// free loopback port. It prints "listening on http://HOST:PORT" to stdout
// and serves until ctx ends.
func serve(ctx context.Context, c serveConfig, stdout, stderr io.Writer) (err error) {
	if c.bare {
		return serveBare(ctx, stdout)
	}
	stopProfiles, err := startProfiles(c)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProfiles()) }()

	var db storage
	if isPostgres(c.db) {
		pg, err := postgres.Open(ctx, c.db)
		if err != nil {
			return err
		}
		db = pg
	} else if c.db == "" {
		dir, err := os.MkdirTemp("", "gs-loadtest-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		c.db = filepath.Join(dir, "graphserver.db")
	}
	if db == nil {
		lite, err := sqlite.OpenWith(c.db, sqlite.OpenOptions{Exclusive: true}) // as the quickstart does
		if err != nil {
			return err
		}
		db = lite
	}
	defer db.Close()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: c.logLevel}))
	srv, err := graphserver.New(graphserver.Options{Storage: db, Graphs: graphs(), Logger: logger})
	if err != nil {
		return err
	}
	groups := &groupStats{}
	srv.AddObserver(groups)
	defer groups.report(stderr)
	if err := srv.Start(ctx); err != nil {
		return err
	}
	defer srv.Close(context.WithoutCancel(ctx))
	return serveHTTP(ctx, httpapi.New(srv, httpapi.Options{}), stdout)
}

// serveHTTP serves h on a free loopback port, printing "listening on
// http://HOST:PORT" to stdout, until ctx ends.
func serveHTTP(ctx context.Context, h http.Handler, stdout io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	select {
	case err = <-served:
		return err
	case <-ctx.Done():
	}
	// Streams still open (idle subscribers) would hold Shutdown: close.
	_ = hs.Close()
	<-served
	return nil
}

// startProfiles starts the profiles c asks for; the returned function
// writes them.
func startProfiles(c serveConfig) (func() error, error) {
	var stops []func() error
	if c.cpu != "" {
		f, err := os.Create(c.cpu)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		stops = append(stops, func() error { pprof.StopCPUProfile(); return f.Close() })
	}
	write := func(name, file string) func() error {
		return func() error {
			f, err := os.Create(file)
			if err != nil {
				return err
			}
			return errors.Join(pprof.Lookup(name).WriteTo(f, 0), f.Close())
		}
	}
	if c.mutex != "" {
		runtime.SetMutexProfileFraction(5)
		stops = append(stops, write("mutex", c.mutex))
	}
	if c.block != "" {
		runtime.SetBlockProfileRate(int(10 * time.Microsecond))
		stops = append(stops, write("block", c.block))
	}
	return func() error {
		var errs []error
		for _, stop := range stops {
			errs = append(errs, stop())
		}
		return errors.Join(errs...)
	}, nil
}

// waitInput is the input of the idle-subscriber scenario's run.
func waitInput(seconds float64) string {
	b, _ := json.Marshal(map[string]any{"assistant_id": "wait", "input": map[string]any{"seconds": seconds}})
	return string(b)
}

// groupStats counts the grouped write transactions of the SQLite driver
// (graphserver.StorageWriteEvent): how many writes each commit served, how
// long the writer connection spent in them (from its transaction's begin
// to its commit), and how long their oldest writes queued for them.
type groupStats struct {
	commits, writes, busy, wait atomic.Int64
}

func (g *groupStats) Observe(ev graphserver.Event) {
	if w, ok := ev.(graphserver.StorageWriteEvent); ok && w.Err == nil {
		g.commits.Add(1)
		g.writes.Add(int64(w.Size))
		g.busy.Add(int64(w.Duration))
		g.wait.Add(int64(w.Wait))
	}
}

func (g *groupStats) report(w io.Writer) {
	if c := g.commits.Load(); c > 0 {
		fmt.Fprintf(w, "loadtest server: %d grouped writes in %d commits (%.1f per commit), %v in them (%v each); the oldest write of each waited %v on average for its commit to begin\n",
			g.writes.Load(), c, float64(g.writes.Load())/float64(c), time.Duration(g.busy.Load()).Round(time.Millisecond),
			(time.Duration(g.busy.Load()) / time.Duration(c)).Round(time.Microsecond), (time.Duration(g.wait.Load()) / time.Duration(c)).Round(time.Microsecond))
	}
}

// storage is a driver.Storage the server closes.
type storage interface {
	driver.Storage
	Close() error
}

// isPostgres reports whether -db names a PostgreSQL database.
func isPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}
