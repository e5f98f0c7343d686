package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/sqlite"
)

// TestStoreEngineNodeWritesHTTPReads runs a graph built with the graph
// engine on a thread; its node saves a memory through graph.GetStore, which
// an HTTP client then finds with a store search.
func TestStoreEngineNodeWritesHTTPReads(t *testing.T) {
	t.Parallel()
	remember := func(ctx context.Context, s graph.State) (any, error) {
		st := graph.GetStore(ctx)
		if st == nil {
			return nil, errors.New("the run has no store")
		}
		err := st.PutItem(ctx, []string{"memories", s.String("user")}, "latest", graphserver.Object{"fact": s.String("fact")})
		return graph.Update{"saved": true}, err
	}
	g, err := graph.New(graph.Channels{"user": graph.LastValue(), "fact": graph.LastValue(), "saved": graph.LastValue()}).
		AddNode("remember", remember).
		AddEdge(graph.Start, "remember").
		AddEdge("remember", graph.End).
		Compile(graph.CompileOptions{Name: "memory"})
	require.NoError(t, err)

	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	srv, err := graphserver.New(graphserver.Options{Storage: db, Graphs: map[string]graphserver.Graph{"memory": g}})
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, srv.Close(context.WithoutCancel(t.Context()))) })
	ts := httptest.NewServer(httpapi.New(srv, httpapi.Options{}))
	t.Cleanup(ts.Close)

	th, err := srv.CreateThread(t.Context(), graphserver.ThreadCreate{})
	require.NoError(t, err)
	out, err := srv.WaitRun(t.Context(), th.ThreadID, graphserver.RunCreate{AssistantID: "memory", Input: json.RawMessage(`{"user":"ann","fact":"likes tea"}`)})
	require.NoError(t, err)
	require.JSONEq(t, `{"user":"ann","fact":"likes tea","saved":true}`, string(out))

	resp, err := http.Post(ts.URL+"/store/items/search", "application/json", strings.NewReader(`{"namespace_prefix":["memories"]}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", body)
	var got struct{ Items []graphserver.SearchItem }
	require.NoError(t, json.Unmarshal(body, &got))
	require.Len(t, got.Items, 1)
	require.Equal(t, []string{"memories", "ann"}, got.Items[0].Namespace)
	require.Equal(t, "latest", got.Items[0].Key)
	require.Equal(t, graphserver.Object{"fact": "likes tea"}, got.Items[0].Value)
}
