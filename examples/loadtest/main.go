// Command loadtest measures graphserver's hot paths over HTTP, as a new
// user would: a fresh SQLite file, the server wired as examples/quickstart
// wires it, in its own process, and N concurrent keep-alive clients on
// loopback. It prints one table row per path:
//
//	POST /threads                    create a thread
//	PUT /store/items                 put a new item (full-text indexed: the default)
//	GET /store/items                 get one of 1,000 items
//	POST /runs/wait                  stateless run of a one-node graph, to its result
//	POST /threads/{id}/runs/wait     the same on a thread (checkpointed)
//	POST /runs/stream                time to the first SSE event
//	idle joined SSE subscribers      server RSS with -subscribers GET .../runs/{id}/stream open
//
// and, unless -limits=false, a second table with the box's limits measured
// in the same run, before the rows and again after them: net/http alone
// (an empty answer, its own process, the same clients) and SQLite alone
// (one-row write transactions on one writer), so that each row reads as a
// fraction of what the machine allows. As the machine's speed drifts
// within a run, net/http alone is also measured just before and just after
// each of graphserver's measurements, and the first table's last column
// gives each row as a fraction of the mean of the two.
//
// Usage:
//
//	go run ./examples/loadtest                          # every row, 8 clients
//	go run ./examples/loadtest -only threads -n 20000   # rows whose key contains "threads"
//	go run ./examples/loadtest -js http://127.0.0.1:PORT -repeat 3
//
// -js also measures another server of the API (bench/run.sh starts the
// official LangGraph JS dev server with the same two graphs) in the same
// run, scenario by scenario, alternating the two, and prints the ratio.
// Before each measurement the servers' processes are left to go quiet
// (under 10% of a core over 250 ms, for at most 30 s), so that a row
// measures one server and not the other's leftover work (runs finishing,
// a collector); the total wait is reported.
// -repeat runs each measurement several times and reports the range.
// -cpuprofile, -mutexprofile and -blockprofile profile the graphserver
// process (use -only to profile one path). -url measures an external
// graphserver (say, examples/quickstart) instead of starting one.
//
// Figures depend on the machine and its load: compare ratios taken in the
// same run rather than absolute numbers from different runs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	n           int
	clients     int
	repeat      int
	subscribers int
	only        string
	url         string
	js          string
	jsName      string
	inProcess   bool
	limits      bool
	processes   int
	serve       bool
	server      serveConfig
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.n, "n", 5000, "requests per measurement")
	fs.IntVar(&o.clients, "clients", 8, "concurrent HTTP clients")
	fs.IntVar(&o.repeat, "repeat", 1, "measurements per row and server (the table gives their range)")
	fs.IntVar(&o.subscribers, "subscribers", 10000, "idle SSE subscribers to join (0 skips the row)")
	fs.StringVar(&o.only, "only", "", "run only the rows whose key (threads, store-put, store-get, wait-stateless, wait-thread, stream-first, subscribers, limits) contains this text")
	fs.StringVar(&o.url, "url", "", "measure the graphserver at this base URL instead of starting one")
	fs.StringVar(&o.js, "js", "", "also measure the server at this base URL (the LangGraph JS dev server, see bench/)")
	fs.StringVar(&o.jsName, "js-name", "JS dev server", "name of the -js server in the table")
	fs.BoolVar(&o.inProcess, "inprocess", false, "run the graphserver in this process (no RSS figure; for tests)")
	fs.BoolVar(&o.limits, "limits", true, "also measure the box's limits in the same run (net/http alone on loopback, SQLite one-row write transactions) and print their table, and each row as a fraction of net/http alone measured around it (just before and just after)")
	fs.BoolVar(&o.server.bare, "bare", false, "with -serve: serve only net/http's empty answer (the HTTP limit)")
	fs.BoolVar(&o.serve, "serve", false, "only serve (the process the load test starts): print the address, serve until stdin closes")
	fs.StringVar(&o.server.db, "db", "", "SQLite file of the started server (default: a new temp file), or a postgres:// URL")
	fs.IntVar(&o.processes, "processes", 1, "server processes to start on the -db database (above 1, -db must be a postgres:// URL); requests go to each in turn")
	fs.TextVar(&o.server.logLevel, "log-level", slog.LevelWarn, "log level of the started server (info logs every request, as the quickstart does)")
	fs.StringVar(&o.server.cpu, "cpuprofile", "", "write a CPU profile of the started server to this file")
	fs.StringVar(&o.server.mutex, "mutexprofile", "", "write a mutex profile of the started server to this file")
	fs.StringVar(&o.server.block, "blockprofile", "", "write a block profile of the started server to this file")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.n < 1 || o.clients < 1 || o.repeat < 1 || o.subscribers < 0 {
		return nil, errors.New("-n, -clients and -repeat must be at least 1, -subscribers at least 0")
	}
	return o, nil
}

// rowsSelected reports whether -only selects any row of the servers'
// table.
func rowsSelected(o *options) bool {
	for _, sc := range scenarios {
		if strings.Contains(sc.key, o.only) {
			return true
		}
	}
	return o.subscribers > 0 && strings.Contains("subscribers", o.only)
}

// run parses args and runs the load test (or, with -serve, the server).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if o.serve {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() { // the load test closes our stdin to stop us
			_, _ = io.Copy(io.Discard, os.Stdin)
			cancel()
		}()
		return serve(ctx, o.server, stdout, stderr)
	}

	gs, err := startTarget(ctx, o, stderr)
	if err != nil {
		return err
	}
	defer gs.stop()
	targets := []*target{gs}
	if o.js != "" {
		js, err := externalTarget(o.jsName, o.js, o.clients)
		if err != nil {
			return err
		}
		targets = append(targets, js)
	}
	// The limits are measured before the rows and again after them, each
	// time with the servers quiet: the machine's speed drifts over a run
	// of minutes, and the table's ranges show by how much. net/http alone
	// is also measured just before and just after each of graphserver's
	// measurements (loadTest), so that each row reads as a fraction of the
	// machine's speed of that moment.
	var bare *target
	if o.limits {
		for _, t := range targets {
			if err := t.waitReady(ctx); err != nil {
				return fmt.Errorf("%s at %s: %w", t.name, t.base, err)
			}
		}
		if bare, err = startBare(ctx, o, stderr); err != nil {
			return err
		}
		defer bare.stop()
	}
	var limits *limitResults
	if bare != nil && (o.only == "" || strings.Contains("limits", o.only)) {
		before, err := measureLimits(ctx, o, bare)
		if err != nil {
			return err
		}
		limits = &before
	}
	if err := loadTest(ctx, o, targets, bare, stdout); err != nil {
		return err
	}
	if limits != nil {
		if rowsSelected(o) {
			if err := new(quietWaits).wait(ctx, targets); err != nil {
				return err
			}
			after, err := measureLimits(ctx, o, bare)
			if err != nil {
				return err
			}
			limits.addAfter(after)
		}
		fmt.Fprintln(stdout)
		printTable(stdout, limits.table())
	}
	return nil
}
