// Command agents serves five LangGraph agents ported to the graph package,
// over the LangGraph Platform API:
//
//   - react: a ReAct tool loop (LangGraph's create_react_agent) that stops
//     with "Sorry, need more steps to process this request." when its
//     RemainingSteps run out instead of failing on the recursion limit;
//   - map_reduce: jokes written in parallel with Send, and an audience
//     profile built on a longer branch, joined before the best joke is
//     picked (a join edge: the picker runs once);
//   - supervisor: a supervisor and two sub-agents run as subgraphs, handing
//     off to each other with a Command to the parent graph;
//   - approval: a booking whose execution invokes an approval graph from a
//     node; its interrupt() pauses the whole run until a human resumes it;
//   - essay: LangGraph's functional API (graph.Entrypoint, graph.Task): a
//     task drafts an essay and interrupt() asks for a review; resumed, the
//     entrypoint gets the draft back without running the task again, and
//     the topics written are saved for the thread's next run (graph.Final,
//     graph.Previous).
//
// The chat models are scripted (no network, no keys): they stream their
// replies word by word as a chat model does, so every stream mode of the
// API shows them.
//
//	go run ./examples/agents                     # http://127.0.0.1:8124, temp database
//	go run ./examples/agents -addr 127.0.0.1:0   # any free port
//
// It prints "listening on http://HOST:PORT" once the port is bound and
// shuts down cleanly on SIGINT or SIGTERM. e2e/test/agents.test.js drives
// each agent through the official JS SDK.
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
		fmt.Fprintln(os.Stderr, "agents:", err)
		os.Exit(1)
	}
}

// shutdownTimeout bounds how long shutdown waits for requests and runs.
const shutdownTimeout = 10 * time.Second

// graphs builds the five agents by graph id.
func graphs() (map[string]graphserver.Graph, error) {
	builders := map[string]func() (graphserver.Graph, error){
		"react":      func() (graphserver.Graph, error) { return reactAgent() },
		"map_reduce": func() (graphserver.Graph, error) { return mapReduce() },
		"supervisor": func() (graphserver.Graph, error) { return supervisor() },
		"approval":   func() (graphserver.Graph, error) { return approval() },
		"essay":      func() (graphserver.Graph, error) { return essay(), nil },
	}
	out := map[string]graphserver.Graph{}
	for id, build := range builders {
		g, err := build()
		if err != nil {
			return nil, fmt.Errorf("graph %s: %w", id, err)
		}
		out[id] = g
	}
	return out, nil
}

// run parses args, serves until ctx ends, then shuts down: HTTP first, then
// the graphserver, then the database (and its temp directory, if it made
// one).
func run(ctx context.Context, args []string, stdout io.Writer, logger *slog.Logger) error {
	fs := flag.NewFlagSet("agents", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8124", "address to listen on (127.0.0.1:0 picks a free port)")
	dbPath := fs.String("db", "", "SQLite database file (default: a new temp file, removed at exit), or a postgres:// URL")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dbPath == "" {
		dir, err := os.MkdirTemp("", "graphserver-agents-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*dbPath = filepath.Join(dir, "graphserver.db")
	}
	var db interface {
		driver.Storage
		Close() error
	}
	var err error
	if strings.HasPrefix(*dbPath, "postgres://") || strings.HasPrefix(*dbPath, "postgresql://") {
		db, err = postgres.Open(ctx, *dbPath) // several processes may serve one database
	} else {
		db, err = sqlite.Open(*dbPath)
	}
	if err != nil {
		return err
	}
	defer db.Close()

	gs, err := graphs()
	if err != nil {
		return err
	}
	srv, err := graphserver.New(graphserver.Options{Storage: db, Graphs: gs, Logger: logger})
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
	hs := &http.Server{Handler: httpapi.New(srv, httpapi.Options{Logger: logger}), ReadHeaderTimeout: 10 * time.Second}
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
		_ = hs.Close()
	}
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
