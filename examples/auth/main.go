// Command auth serves a multi-tenant graphserver: each user, identified by
// an API key (x-api-key, the header the LangGraph SDKs send), sees only the
// assistants, threads, runs and crons they created and the store
// namespaces under their name.
//
//	go run ./examples/auth -keys ann=secret-a,bob=secret-b
//	curl -s localhost:8125/threads -H 'x-api-key: secret-a' -d '{}'        # owned by ann
//	curl -s localhost:8125/threads/search -H 'x-api-key: secret-b' -d '{}' # bob: []
//	curl -s localhost:8125/threads/$T/runs/wait -H 'x-api-key: secret-a' \
//	     -d '{"assistant_id": "notes", "input": {"note": "buy tea"}}'    # -> {"notes": ["buy tea"]}
//
// The keys come from -keys or the AUTH_KEYS environment variable
// (name=key,...). The graph "notes" keeps each user's notes in the store
// under [identity, "notes"], reading the identity the server passes to the
// graph (configurable.langgraph_auth_user_id).
//
// The access control is the usual owner pattern: every create stamps
// metadata.owner with the caller, every other event is narrowed to
// resources whose metadata.owner is the caller (others' are missing: 404),
// and store requests must name a namespace starting with the caller.
// System assistants have no owner, so they are not listed; runs name them
// by graph id ("notes") as usual.
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
	"github.com/graphserver/graphserver/apikey"
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
		fmt.Fprintln(os.Stderr, "auth:", err)
		os.Exit(1)
	}
}

// parseKeys reads "name=key,name=key" into the apikey table.
func parseKeys(s string) (map[string]graphserver.User, error) {
	users := map[string]graphserver.User{}
	for pair := range strings.SplitSeq(s, ",") {
		name, key, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || name == "" || key == "" {
			return nil, fmt.Errorf("-keys: %q is not name=key", pair)
		}
		users[key] = graphserver.User{Identity: name}
	}
	return users, nil
}

// tenantAuth is the access control: API keys, owner stamping and filters,
// store namespaces under the user's name.
func tenantAuth(users map[string]graphserver.User) *graphserver.Auth {
	owner := func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
		ev.SetMetadata("owner", ev.User.Identity) // values that create or update carry it
		return graphserver.Filter{"owner": ev.User.Identity}, nil
	}
	return graphserver.NewAuth(apikey.New(users)).
		On("assistants", "*", owner).
		On("threads", "*", owner).
		On("crons", "*", owner).
		On("store", "*", func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
			ns := ev.Value.(*graphserver.StoreRequest).Namespace
			if len(ns) > 0 && ns[0] != ev.User.Identity {
				return nil, graphserver.Forbidden("Store namespaces start with your name.")
			}
			return graphserver.Filter{"namespace": graphserver.Object{"$contains": ev.User.Identity}}, nil
		})
}

// notesGraph appends the input's note to the caller's notes in the store
// and returns them all.
func notesGraph() (*graph.Compiled, error) {
	g := graph.New(graph.Channels{"note": graph.LastValue(), "notes": graph.LastValue()})
	g.AddNode("remember", func(ctx context.Context, s graph.State) (any, error) {
		user, _ := graph.Configurable(ctx)["langgraph_auth_user_id"].(string)
		store := graph.GetStore(ctx)
		if user == "" || store == nil {
			return nil, errors.New("notes needs an authenticated user and a store")
		}
		ns := []string{user, "notes"}
		notes := []any{}
		item, err := store.GetItem(ctx, ns, "all")
		if err != nil {
			return nil, err
		}
		if item != nil {
			notes, _ = item.Value["notes"].([]any)
		}
		if note := s.String("note"); note != "" {
			notes = append(notes, note)
		}
		if err := store.PutItem(ctx, ns, "all", graphserver.Object{"notes": notes}); err != nil {
			return nil, err
		}
		return graph.Update{"notes": notes}, nil
	})
	g.AddEdge(graph.Start, "remember").AddEdge("remember", graph.End)
	return g.Compile(graph.CompileOptions{Name: "notes"})
}

// run serves until ctx ends, printing "listening on http://HOST:PORT".
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("auth", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8125", "address to listen on (127.0.0.1:0 picks a free port)")
	dbPath := fs.String("db", "auth-example.db", "SQLite database file")
	keys := fs.String("keys", os.Getenv("AUTH_KEYS"), "API keys as name=key,name=key (default: $AUTH_KEYS)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *keys == "" {
		return errors.New("no API keys: set -keys name=key,... or AUTH_KEYS")
	}
	users, err := parseKeys(*keys)
	if err != nil {
		return err
	}
	notes, err := notesGraph()
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	db, err := sqlite.Open(*dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	srv, err := graphserver.New(graphserver.Options{
		Storage: db,
		Graphs:  map[string]graphserver.Graph{"notes": notes},
		Auth:    tenantAuth(users),
		Logger:  logger,
	})
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = srv.Close(closeCtx)
	}()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: httpapi.New(srv, httpapi.Options{Logger: logger}), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		_ = hs.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
