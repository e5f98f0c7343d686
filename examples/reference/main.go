// Command reference serves Go equivalents of the eleven LangGraph reference
// graphs (agent, agent_simple, weather, nested, error, delay, dynamic,
// simple_runtime, state_schema_graph, zod_registry_graph, plain_zod_graph)
// over the LangGraph Platform API, with their system assistants and the
// test-only POST /internal/truncate. The official-SDK compatibility suite in
// e2e/ runs against it.
//
//	go run ./examples/reference                       # http://127.0.0.1:8123, temp database
//	go run ./examples/reference -addr 127.0.0.1:0     # any free port
//	go run ./examples/reference -db ref.db -config '{"agent":{"configurable":{"model_name":"x"}}}'
//	go run ./examples/reference -prefix /agents       # the API under http://127.0.0.1:8123/agents
//	go run ./examples/reference -auth                 # JWT access control of reference-auth.md
//
// -config seeds the system assistants' config and context, in the shape of
// LangGraph's LANGGRAPH_CONFIG (its default, also read from that variable,
// is the reference set). The program prints "listening on http://HOST:PORT"
// (followed by the -prefix) once the port is bound and shuts down cleanly on SIGINT or SIGTERM.
package main

import (
	"cmp"
	"context"
	"encoding/json"
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
		fmt.Fprintln(os.Stderr, "reference:", err)
		os.Exit(1)
	}
}

// shutdownTimeout bounds how long shutdown waits for requests and runs.
const shutdownTimeout = 10 * time.Second

// run parses args, serves until ctx ends, then shuts down: HTTP first, then
// the graphserver, then the database (and its temp directory, if it made
// one). It returns the first error, including a port already in use.
func run(ctx context.Context, args []string, stdout io.Writer, logger *slog.Logger) error {
	fs := flag.NewFlagSet("reference", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8123", "address to listen on (127.0.0.1:0 picks a free port)")
	dbPath := fs.String("db", "", "SQLite database file (default: a new temp file, removed at exit), or a postgres:// URL")
	prefix := fs.String("prefix", "", "serve the API under this path prefix (e.g. /agents), through http.StripPrefix, as an application mounting it beside its own routes does")
	lease := fs.Duration("lease", graphserver.LeaseDurationDefault, "run lease: how long a run of a process that died stays claimed before another process takes it over")
	withAuth := fs.Bool("auth", false, "require the JWT bearer tokens and apply the handlers of the reference auth configuration (reference-auth.md)")
	privateWebhooks := fs.Bool("allow-private-webhooks", false, "accept webhook URLs on private and loopback addresses (tests with a local receiver)")
	configJSON := fs.String("config", cmp.Or(os.Getenv("LANGGRAPH_CONFIG"), defaultConfig),
		`system assistants' config/context by graph id: {"<graph_id>": {"configurable": {...}} | {"context": {...}}}`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	*prefix = strings.TrimRight(*prefix, "/")
	if *prefix != "" && !strings.HasPrefix(*prefix, "/") {
		return fmt.Errorf("-prefix %q: must start with /", *prefix)
	}
	var seeds map[string]graphserver.Object
	if err := json.Unmarshal([]byte(*configJSON), &seeds); err != nil {
		return fmt.Errorf("-config: %w", err)
	}

	if *dbPath == "" {
		dir, err := os.MkdirTemp("", "graphserver-reference-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*dbPath = filepath.Join(dir, "graphserver.db")
	}
	db, err := openStorage(ctx, *dbPath)
	if err != nil {
		return err
	}
	defer db.Close()

	graphs, err := referenceGraphs(logger)
	if err != nil {
		return err
	}
	var auth *graphserver.Auth
	if *withAuth {
		if auth, err = referenceAuth(); err != nil {
			return err
		}
	}
	srv, err := graphserver.New(graphserver.Options{
		Storage:       db,
		LeaseDuration: *lease,
		Graphs:        graphs,
		GraphConfigs:  seeds,
		Logger:        logger,
		Auth:          auth,
		Webhooks: graphserver.WebhookOptions{
			Sender: httpapi.NewWebhookSender(httpapi.WebhookSenderOptions{AllowPrivate: *privateWebhooks}),
			Policy: graphserver.WebhookPolicy{AllowPrivate: *privateWebhooks},
			// Retries come quickly so a test receiver that fails sees them.
			Backoff: 100 * time.Millisecond,
		},
	})
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		_ = srv.Close(closeCtx)
	}()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	var handler http.Handler = httpapi.New(srv, httpapi.Options{Logger: logger, Truncate: db})
	if *prefix != "" {
		mux := http.NewServeMux()
		mux.Handle(*prefix+"/", http.StripPrefix(*prefix, handler))
		handler = mux
	}
	hs := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "listening on http://%s%s\n", ln.Addr(), *prefix)

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

// storage is a driver.Storage the program closes.
type storage interface {
	driver.Storage
	Close() error
}

// openStorage opens the database -db names: a postgres:// or
// postgresql:// URL opens PostgreSQL (several processes may serve one
// database), anything else is a SQLite file.
func openStorage(ctx context.Context, db string) (storage, error) {
	if strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://") {
		return postgres.Open(ctx, db)
	}
	return sqlite.Open(db)
}
