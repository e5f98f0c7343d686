// Command remote serves a graph whose node is a RemoteGraph: a graph hosted
// by a second server, called over HTTP as if it were a local subgraph.
//
//	go run ./examples/remote                                   # both servers in one process
//	go run ./examples/remote -remote http://127.0.0.1:2024     # the review graph on another server
//	go run ./examples/remote -h                                # every flag
//
// The local graph "publisher" writes a draft about a topic ("write"), has it
// reviewed by the remote graph ("review", a RemoteGraph node), and publishes
// it if the review approved it ("publish"). The remote graph "review" asks a
// human with interrupt(); that pauses the local run too, and resuming the
// local run resumes the remote one:
//
//	# start a run on the local server (the address it prints)
//	curl -s localhost:8124/threads -d '{}'                                  # -> thread_id
//	curl -s localhost:8124/threads/$T/runs/wait -d '{"assistant_id":"publisher","input":{"topic":"Go"}}'
//	#   -> {"__interrupt__": [{"value": {"question": "Publish this draft?", ...}, "id": ...}]}
//	curl -s localhost:8124/threads/$T/runs/wait -d '{"assistant_id":"publisher","command":{"resume":"yes"}}'
//	#   -> {..., "approved": true, "published": "A post about Go"}
//
// Without -remote it also starts the remote server, on a free port and a
// temporary database, hosting "review"; with -remote it expects a server
// (a graphserver, or any LangGraph-compatible one) that hosts a graph named
// by -remote-graph taking {"draft"} and returning {"approved": bool}.
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
	"syscall"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/client"
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
		fmt.Fprintln(os.Stderr, "remote:", err)
		os.Exit(1)
	}
}

// config is what the flags set.
type config struct {
	addr, db              string
	remoteURL, remoteName string
	apiKey                string
}

func parseFlags(args []string, stdout io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("remote", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8124", "address of the local server (127.0.0.1:0 picks a free port)")
	fs.StringVar(&c.db, "db", "remote-example.db", "SQLite database file of the local server")
	fs.StringVar(&c.remoteURL, "remote", "", "URL of the server hosting the remote graph; empty starts one in this process")
	fs.StringVar(&c.remoteName, "remote-graph", "review", "assistant id or graph name of the remote graph")
	fs.StringVar(&c.apiKey, "remote-api-key", "", "API key for the remote server (default: LANGGRAPH_API_KEY, LANGSMITH_API_KEY or LANGCHAIN_API_KEY)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage: remote [flags]\n\nServes \"publisher\", a graph whose node is a RemoteGraph to a second server.\n\nFlags:\n")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags only; -h lists them)", fs.Arg(0))
	}
	return c, nil
}

// reviewGraph is the remote graph: it asks a human whether to publish the
// draft and records the answer.
func reviewGraph() (*graph.Compiled, error) {
	g := graph.New(graph.Channels{"draft": graph.LastValue(), "approved": graph.LastValue()})
	g.AddNode("ask", func(ctx context.Context, s graph.State) (any, error) {
		answer, err := graph.Interrupt(ctx, map[string]any{"question": "Publish this draft?", "draft": s.String("draft")})
		if err != nil {
			return nil, err
		}
		return graph.Update{"approved": answer == "yes"}, nil
	})
	g.AddEdge(graph.Start, "ask").AddEdge("ask", graph.End)
	return g.Compile(graph.CompileOptions{Name: "review"})
}

// publisherGraph is the local graph: write, review (remote), publish.
func publisherGraph(review *client.RemoteGraph) (*graph.Compiled, error) {
	g := graph.New(graph.Channels{
		"topic": graph.LastValue(), "draft": graph.LastValue(), "approved": graph.LastValue(), "published": graph.LastValue(),
	})
	g.AddNode("write", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"draft": "A post about " + s.String("topic")}, nil
	})
	g.AddNode("review", review.Node)
	g.AddNode("publish", func(ctx context.Context, s graph.State) (any, error) {
		if !s.Bool("approved") {
			return graph.Update{"published": nil}, nil
		}
		return graph.Update{"published": s.String("draft")}, nil
	})
	g.AddEdge(graph.Start, "write").AddEdge("write", "review").AddEdge("review", "publish").AddEdge("publish", graph.End)
	return g.Compile(graph.CompileOptions{Name: "publisher"})
}

// server is a graphserver on one SQLite file, served over HTTP.
type server struct {
	db   *sqlite.DB
	srv  *graphserver.Server
	hs   *http.Server
	url  string
	done chan error
}

// serve starts a graphserver hosting graphs on addr.
func serve(ctx context.Context, addr, dbPath string, graphs map[string]graphserver.Graph, logger *slog.Logger) (*server, error) {
	db, err := sqlite.Open(dbPath)
	if err != nil {
		return nil, err
	}
	srv, err := graphserver.New(graphserver.Options{Storage: db, Graphs: graphs, Logger: logger})
	if err != nil {
		db.Close()
		return nil, err
	}
	if err := srv.Start(ctx); err != nil {
		db.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = srv.Close(context.Background())
		db.Close()
		return nil, err
	}
	s := &server{db: db, srv: srv, url: "http://" + ln.Addr().String(), done: make(chan error, 1),
		hs: &http.Server{Handler: httpapi.New(srv, httpapi.Options{}), ReadHeaderTimeout: 10 * time.Second}}
	go func() { s.done <- s.hs.Serve(ln) }()
	return s, nil
}

// stop shuts the server down: HTTP first, then the graphserver, then the
// database.
func (s *server) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s.hs.Shutdown(ctx) != nil {
		_ = s.hs.Close()
	}
	<-s.done
	_ = s.srv.Close(ctx)
	_ = s.db.Close()
}

// run serves until ctx ends. It prints the local server's address to stdout
// ("listening on http://HOST:PORT") and logs to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))

	remoteURL := c.remoteURL
	if remoteURL == "" {
		review, err := reviewGraph()
		if err != nil {
			return err
		}
		dir, err := os.MkdirTemp("", "remote-example-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		remote, err := serve(ctx, "127.0.0.1:0", filepath.Join(dir, "review.db"), map[string]graphserver.Graph{"review": review}, logger.With("server", "remote"))
		if err != nil {
			return err
		}
		defer remote.stop() // after the local server, whose runs call it
		remoteURL = remote.url
		logger.Info("remote server", "url", remoteURL)
	}

	review, err := client.NewRemoteGraph(client.RemoteOptions{AssistantID: c.remoteName, URL: remoteURL, APIKey: c.apiKey, Name: "review"})
	if err != nil {
		return err
	}
	publisher, err := publisherGraph(review)
	if err != nil {
		return err
	}
	local, err := serve(ctx, c.addr, c.db, map[string]graphserver.Graph{"publisher": publisher}, logger.With("server", "local"))
	if err != nil {
		return err
	}
	defer local.stop()
	fmt.Fprintf(stdout, "listening on %s\n", local.url)

	select {
	case <-ctx.Done():
		return nil
	case err := <-local.done:
		local.done <- err // for stop
		return err
	}
}
