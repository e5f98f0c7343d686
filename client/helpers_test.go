package client_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/client"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/internal/graphtest"
	"github.com/graphserver/graphserver/sqlite"
)

// env is an in-process graphserver behind httptest, and a client for it.
type env struct {
	srv  *graphserver.Server
	http *httptest.Server
	url  string
	c    *client.Client
}

// envOptions tunes newEnv.
type envOptions struct {
	graphs map[string]graphserver.Graph // added to the default graphs
	wrap   func(http.Handler) http.Handler
	client client.Options // URL is filled in
	server func(*graphserver.Options)
}

// chatGraph appends an AI "hello #n" to messages and counts its runs.
func chatGraph(t testing.TB) *graph.Compiled {
	t.Helper()
	g := graph.New(graph.Channels{"messages": graph.AddMessages(), "count": graph.LastValue()})
	g.AddNode("agent", func(ctx context.Context, s graph.State) (any, error) {
		n := s.Number("count") + 1
		return graph.Update{"messages": graph.AI("hello #" + itoa(int(n))), "count": n}, nil
	})
	g.AddEdge(graph.Start, "agent").AddEdge("agent", graph.End)
	c, err := g.Compile(graph.CompileOptions{Name: "chat"})
	require.NoError(t, err)
	return c
}

// askGraph asks a question with Interrupt and stores the answer.
func askGraph(t testing.TB) *graph.Compiled {
	t.Helper()
	g := graph.New(graph.Channels{"question": graph.LastValue(), "answer": graph.LastValue()})
	g.AddNode("ask", func(ctx context.Context, s graph.State) (any, error) {
		a, err := graph.Interrupt(ctx, map[string]any{"question": s.String("question")})
		if err != nil {
			return nil, err
		}
		return graph.Update{"answer": a}, nil
	})
	g.AddEdge(graph.Start, "ask").AddEdge("ask", graph.End)
	c, err := g.Compile(graph.CompileOptions{Name: "ask"})
	require.NoError(t, err)
	return c
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// newEnv starts a server on a fresh SQLite file with graphs chat, ask, echo,
// fail and parts (plus opts.graphs), serves it on 127.0.0.1:0 and returns a
// client for it.
func newEnv(t testing.TB, opts envOptions) *env {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	graphs := map[string]graphserver.Graph{
		"chat":  chatGraph(t),
		"ask":   askGraph(t),
		"echo":  graphtest.Echo{},
		"fail":  graphtest.Fail{},
		"parts": graphtest.Parts{},
	}
	for k, g := range opts.graphs {
		graphs[k] = g
	}
	so := graphserver.Options{Storage: db, Graphs: graphs, Logger: slog.New(slog.DiscardHandler)}
	if opts.server != nil {
		opts.server(&so)
	}
	srv, err := graphserver.New(so)
	require.NoError(t, err)
	require.NoError(t, srv.Start(context.WithoutCancel(t.Context())))
	var h http.Handler = httpapi.New(srv, httpapi.Options{HeartbeatInterval: 20 * time.Millisecond})
	if opts.wrap != nil {
		h = opts.wrap(h)
	}
	hs := httptest.NewServer(h)
	// Close order: connections first, then the server, then storage.
	t.Cleanup(func() { require.NoError(t, srv.Close(context.WithoutCancel(t.Context()))) })
	t.Cleanup(hs.Close)
	co := opts.client
	co.URL = hs.URL
	co.NoEnvAPIKey = true
	if co.RetryBackoff == 0 {
		co.RetryBackoff = time.Millisecond
	}
	c, err := client.New(co)
	require.NoError(t, err)
	return &env{srv: srv, http: hs, url: hs.URL, c: c}
}

// requireCode asserts err's graphserver code.
func requireCode(t testing.TB, err error, code string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, graphserver.ErrorCode(err), "error: %v", err)
}

// collect drains a stream, failing the test on an error.
func collect(t testing.TB, seq func(func(graphserver.StreamEvent, error) bool)) []graphserver.StreamEvent {
	t.Helper()
	var out []graphserver.StreamEvent
	for ev, err := range seq {
		require.NoError(t, err)
		out = append(out, ev)
	}
	return out
}

// names lists the events' names.
func names(evs []graphserver.StreamEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Event
	}
	return out
}

// raw marshals v.
func raw(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// object unmarshals a JSON object.
func object(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), string(b))
	return m
}

func ptr[T any](v T) *T { return &v }

// nestedGraph runs askGraph as its subgraph node "child".
func nestedGraph(t testing.TB) *graph.Compiled {
	t.Helper()
	g := graph.New(graph.Channels{"question": graph.LastValue(), "answer": graph.LastValue()})
	g.AddNode("child", askGraph(t))
	g.AddEdge(graph.Start, "child").AddEdge("child", graph.End)
	c, err := g.Compile(graph.CompileOptions{Name: "nested"})
	require.NoError(t, err)
	return c
}
