// Command crons serves a graph that a cron runs on a schedule. At start it
// makes sure one thread ("the log") has one cron on it: every -schedule
// (default every ten seconds) the server creates a run of the "heartbeat"
// graph on that thread, which appends the time of the run to the thread's
// "beats".
//
//	go run ./examples/crons                       # serves http://127.0.0.1:8123 on crons.db
//	go run ./examples/crons -schedule '0 9 * * 1-5' -timezone Europe/Paris
//
// It prints the thread and the cron, then serves the API, so any LangGraph
// client sees the cron and its runs:
//
//	curl -s localhost:8123/runs/crons/search -d '{}'     # the cron, with its next_run_date
//	curl -s localhost:8123/threads/$THREAD/runs          # the runs it created
//	curl -s localhost:8123/threads/$THREAD/state         # {"values": {"beats": ["2025-...", ...]}, ...}
//	curl -s -XPATCH localhost:8123/runs/crons/$CRON -d '{"enabled": false}'   # pause it
//
// The cron is stored in the database: a restart on the same -db keeps it
// (and changes its schedule if -schedule or -timezone changed); the firings
// missed while the program was stopped are made up by one run, not one per
// missed firing.
package main

import (
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
	"syscall"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/sqlite"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "crons:", err)
		os.Exit(1)
	}
}

// logThreadID is the thread the cron runs on: a fixed id, so that a restart
// finds it again.
const logThreadID = "c0000000-0000-4000-8000-000000000001"

// heartbeatGraph appends the time of each run to "beats".
func heartbeatGraph() (*graph.Compiled, error) {
	g := graph.New(graph.Channels{"beats": graph.Append()})
	g.AddNode("beat", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"beats": time.Now().UTC().Format(time.RFC3339)}, nil
	})
	g.AddEdge(graph.Start, "beat")
	g.AddEdge("beat", graph.End)
	return g.Compile(graph.CompileOptions{Name: "heartbeat"})
}

// run parses args, sets up the thread and its cron, and serves until ctx
// ends. It prints the address to stdout, then the thread and the cron.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("crons", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8123", "address to listen on (127.0.0.1:0 picks a free port)")
	dbPath := fs.String("db", "crons.db", "SQLite database file")
	schedule := fs.String("schedule", "@every 10s", "when the cron fires: a 5-field cron expression (minute hour day month weekday) or @hourly, @daily, @every 1m30s, ...")
	timezone := fs.String("timezone", "", "IANA time zone the schedule is read in (default UTC)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	db, err := sqlite.Open(*dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	heartbeat, err := heartbeatGraph()
	if err != nil {
		return err
	}
	srv, err := graphserver.New(graphserver.Options{
		Storage: db,
		Graphs:  map[string]graphserver.Graph{"heartbeat": heartbeat},
		Logger:  logger,
		// The scheduler looks for due crons every CronInterval (the default,
		// one second, is the precision of the schedules).
	})
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil { // starts the cron scheduler too
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = srv.Close(closeCtx)
	}()

	c, err := ensureCron(ctx, srv, *schedule, *timezone)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: httpapi.New(srv, httpapi.Options{Logger: logger}), ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	defer hs.Close()
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	fmt.Fprintf(stdout, "thread %s: cron %s (%q) fires next at %s\n", logThreadID, c.CronID, c.Schedule, c.NextRunDate.Format(time.RFC3339))

	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return hs.Shutdown(shutdownCtx)
}

// ensureCron creates the log thread and its cron, or finds them from an
// earlier start and brings the cron's schedule up to date.
func ensureCron(ctx context.Context, srv *graphserver.Server, schedule, timezone string) (*graphserver.Cron, error) {
	if _, err := srv.CreateThread(ctx, graphserver.ThreadCreate{ThreadID: logThreadID, IfExists: "do_nothing"}); err != nil {
		return nil, err
	}
	found, err := srv.SearchCrons(ctx, graphserver.CronSearch{ThreadID: logThreadID, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(found.Items) == 0 {
		return srv.CreateCron(ctx, logThreadID, graphserver.CronCreate{
			// Input {} (not null: a null input resumes the thread
			// instead of starting a run of the graph).
			RunCreate: graphserver.RunCreate{AssistantID: "heartbeat", Input: json.RawMessage(`{}`), Metadata: graphserver.Metadata{"source": "examples/crons"}},
			Schedule:  schedule,
			Timezone:  timezone,
		})
	}
	c := found.Items[0]
	if c.Schedule == schedule && c.Timezone == timezone && c.Enabled {
		return c, nil
	}
	return srv.UpdateCron(ctx, c.CronID, graphserver.CronPatch{Schedule: &schedule, Timezone: &timezone, Enabled: ptr(true)})
}

func ptr[T any](v T) *T { return &v }
