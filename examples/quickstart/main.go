// Command quickstart serves the LangGraph Platform API on one SQLite file,
// with one small example graph registered: "chat", which answers each
// message and streams its reply.
//
//	go run ./examples/quickstart                      # http://127.0.0.1:8123, graphserver.db
//	go run ./examples/quickstart -addr 127.0.0.1:0    # any free port
//	go run ./examples/quickstart -h                   # every flag
//
// then open http://127.0.0.1:8123/chat/ for a chat with the graph.
//
// It prints "listening on http://HOST:PORT" once the port is bound, serves a
// chat page at /chat/ (examples/chat-ui, embedded), the API reference at
// /docs, Prometheus metrics at /metrics, logs one line per request and per run
// state change to stderr (-log-level, -log-format), and shuts down gracefully on SIGINT or SIGTERM: it stops
// accepting, lets requests and runs in flight finish until -shutdown-timeout,
// hands the runs still running back to the queue (the next start resumes
// them), then closes the database.
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
	"strings"
	"syscall"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	chatui "github.com/graphserver/graphserver/examples/chat-ui"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/postgres"
	"github.com/graphserver/graphserver/sqlite"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		// -h printed the usage.
	case err != nil:
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// config is what the flags set.
type config struct {
	addr, db        string
	logLevel        slog.Level
	logFormat       string
	shutdownTimeout time.Duration
	tokenDelay      time.Duration
}

// parseFlags parses args. -h prints the usage to stdout and returns
// flag.ErrHelp; a bad flag returns an error naming it.
func parseFlags(args []string, stdout io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned; -h prints below
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8123", "address to listen on (127.0.0.1:0 picks a free port)")
	fs.StringVar(&c.db, "db", "graphserver.db", "SQLite database file (created if missing), or a postgres:// URL (several processes may serve one PostgreSQL database)")
	fs.TextVar(&c.logLevel, "log-level", slog.LevelInfo, "log level: debug, info, warn or error")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 10*time.Second,
		"on SIGINT/SIGTERM, how long requests and runs in flight may take to finish before runs are handed back to the queue")
	fs.DurationVar(&c.tokenDelay, "token-delay", 30*time.Millisecond, "delay between the words the chat graph streams (0: none)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage: quickstart [flags]\n\nServes the LangGraph Platform API with one example graph, \"chat\", on one SQLite file.\n\nFlags:\n")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags only; -h lists them)", fs.Arg(0))
	}
	if c.logFormat != "text" && c.logFormat != "json" {
		return nil, fmt.Errorf("-log-format must be text or json, not %q", c.logFormat)
	}
	if c.shutdownTimeout < 0 || c.tokenDelay < 0 {
		return nil, errors.New("-shutdown-timeout and -token-delay must not be negative")
	}
	return c, nil
}

// newLogger returns the logger the flags ask for, writing to w.
func (c *config) newLogger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.logLevel}
	if c.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// run parses args, serves until ctx ends, then shuts down gracefully. It
// prints the address to stdout and logs to stderr. It returns the first
// error, including a port already in use, and flag.ErrHelp after -h.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	logger := c.newLogger(stderr)

	db, err := openStorage(ctx, c.db)
	if err != nil {
		return err
	}
	defer db.Close() // last: after the HTTP server and the graphserver

	chat, err := chatGraph(c.tokenDelay)
	if err != nil {
		return err
	}
	srv, err := graphserver.New(graphserver.Options{
		Storage: db,
		Graphs:  map[string]graphserver.Graph{"chat": chat},
		Logger:  logger, // httpapi logs to it too
		// Runs may ask for a webhook: POSTed over net/http, to public
		// addresses only (private ones are refused, see WebhookPolicy).
		Webhooks: graphserver.WebhookOptions{Sender: httpapi.NewWebhookSender(httpapi.WebhookSenderOptions{})},
	})
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		_ = srv.Close(context.Background())
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/", httpapi.New(srv, httpapi.Options{Metrics: true})) // the API, with GET /metrics for Prometheus
	mux.Handle("/chat/", http.StripPrefix("/chat", chatui.Handler())) // the chat page, calling the API at "/"
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	logger.Info("listening", "addr", "http://"+ln.Addr().String(), "db", c.db)

	select {
	case err = <-serveErr:
	case <-ctx.Done():
	}
	return shutdown(hs, srv, serveErr, err, c.shutdownTimeout, logger)
}

// shutdown stops hs and srv within timeout. hs.Shutdown stops accepting
// and waits for the requests in flight (a stream or /wait of a run ends with
// the run); meanwhile srv.Close stops claiming queued runs and waits for
// those still running, or when the deadline passes first, cancels them and
// hands them back to the queue (the next start resumes them from their last
// checkpoint). Close ends the streams that never end by themselves (thread
// streams), so hs.Shutdown can finish; at the deadline hs.Close cuts the
// connections left. The caller closes the database after. serveErr is
// hs.Serve's result channel; served is its result if it already came.
func shutdown(hs *http.Server, srv *graphserver.Server, serveErr <-chan error, served error, timeout time.Duration, logger *slog.Logger) error {
	logger.Info("shutting down", "timeout", timeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	httpDone := make(chan error, 1)
	go func() { httpDone <- hs.Shutdown(ctx) }()
	if err := srv.Close(ctx); err != nil {
		logger.Warn("shutdown deadline passed: runs still running were handed back to the queue", "err", err)
	}
	if err := <-httpDone; err != nil {
		_ = hs.Close() // connections still open after the deadline
	}
	if served == nil {
		served = <-serveErr
	}
	if !errors.Is(served, http.ErrServerClosed) {
		return served
	}
	logger.Info("stopped")
	return nil
}

// storage is a driver.Storage the program closes.
type storage interface {
	driver.Storage
	Close() error
}

// openStorage opens the database -db names: a postgres:// or
// postgresql:// URL opens PostgreSQL, anything else is a SQLite file. The
// quickstart is the only process using a SQLite file: its transactions then
// lock in memory instead of through system calls.
func openStorage(ctx context.Context, db string) (storage, error) {
	if strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://") {
		return postgres.Open(ctx, db)
	}
	return sqlite.OpenWith(db, sqlite.OpenOptions{Exclusive: true})
}
