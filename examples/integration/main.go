// Command integration serves the four graphs of the official LangGraph
// Python SDK's integration suite (agent, tools_agent, deep_agent and
// factory_agent; see graphs.go) over the LangGraph Platform API, protocol
// v2 included (POST /threads/{id}/commands, /threads/{id}/stream/events
// over SSE and WebSocket), for the SDKs' client.threads.stream.
//
//	go run ./examples/integration -addr 127.0.0.1:2024
//
// Its graph ids clash with examples/reference's (both have an "agent"),
// hence a server of its own.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/postgres"
	"github.com/graphserver/graphserver/sqlite"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := run(ctx, os.Args[1:], os.Stdout, logger); err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		os.Exit(1)
	}
}

const shutdownTimeout = 10 * time.Second

// storage is a driver.Storage the program closes.
type storage interface {
	driver.Storage
	Close() error
}

// openStorage opens the database -db names: a postgres:// or
// postgresql:// URL opens PostgreSQL, anything else is a SQLite file.
func openStorage(ctx context.Context, db string) (storage, error) {
	if strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://") {
		return postgres.Open(ctx, db)
	}
	return sqlite.Open(db)
}

// newServer opens the database and returns the started server with the
// integration graphs; the caller closes both.
func newServer(ctx context.Context, dbPath string, logger *slog.Logger) (*graphserver.Server, storage, error) {
	db, err := openStorage(ctx, dbPath)
	if err != nil {
		return nil, nil, err
	}
	graphs, err := integrationGraphs()
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	srv, err := graphserver.New(graphserver.Options{Storage: db, Graphs: graphs, Logger: logger})
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	if err := srv.Start(ctx); err != nil {
		db.Close()
		return nil, nil, err
	}
	return srv, db, nil
}

func run(ctx context.Context, args []string, stdout io.Writer, logger *slog.Logger) error {
	fs := flag.NewFlagSet("integration", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:2024", "address to listen on (127.0.0.1:0 picks a free port)")
	dbPath := fs.String("db", "", "SQLite database file (default: a new temp file, removed at exit), or a postgres:// URL")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dbPath == "" {
		dir, err := os.MkdirTemp("", "graphserver-integration-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*dbPath = filepath.Join(dir, "graphserver.db")
	}
	srv, db, err := newServer(ctx, *dbPath, logger)
	if err != nil {
		return err
	}
	defer db.Close()
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		_ = srv.Close(closeCtx)
	}()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{
		Handler:           httpapi.New(srv, httpapi.Options{Logger: logger}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())

	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		_ = hs.Close() // streams still open after the timeout
	}
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
