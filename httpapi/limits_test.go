package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/internal/graphtest"
)

// TestLimits: the limits answer clearly and change nothing. Past
// Options.MaxStreams a streaming request is 503 with Retry-After and a
// detail, before any run is created; a freed slot is taken again. A join
// that needs events a run's log dropped (graphserver
// Options.MaxEventLogBytes) is 503 with a detail naming the first event
// held; a join of the run's output (GET .../join) needs no event and is
// answered. (413 for bodies and 422 for depth and filters: TestBadInputEveryRoute.)
func TestLimits(t *testing.T) {
	t.Parallel()
	t.Run("MaxStreams", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{http: httpapi.Options{MaxStreams: 2}})
		tid := e.thread(t)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var open []*http.Response
		for range 2 {
			resp := e.do(t, ctx, "POST", "/runs/stream", `{"assistant_id":"block","input":{}}`)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			open = append(open, resp)
		}
		var before []graphserver.Run
		require.NoError(t, json.Unmarshal([]byte(e.call(t, "GET", "/threads/"+tid+"/runs", "", 200)), &before))
		for _, path := range []string{"/runs/stream", "/runs/wait", "/threads/" + tid + "/runs/wait", "/threads/" + tid + "/runs/stream"} {
			resp := e.do(t, t.Context(), "POST", path, `{"assistant_id":"echo","input":{}}`)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s: %s", path, b)
			require.Equal(t, "1", resp.Header.Get("Retry-After"))
			require.Contains(t, string(b), `"detail":"Too many open streams`)
		}
		var after []graphserver.Run
		require.NoError(t, json.Unmarshal([]byte(e.call(t, "GET", "/threads/"+tid+"/runs", "", 200)), &after))
		require.Len(t, after, len(before), "a refused stream creates no run")

		open[0].Body.Close() // the client goes: its slot frees
		require.Eventually(t, func() bool {
			resp := e.do(t, t.Context(), "POST", "/runs/wait", `{"assistant_id":"echo","input":{"ok":1}}`)
			defer resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}, 10*time.Second, 10*time.Millisecond)
	})
	t.Run("EventLog", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{server: func(o *graphserver.Options) {
			o.Graphs["emit"] = graphtest.Emitter{Events: 100, Pad: strings.Repeat("x", 100)}
			o.MaxEventLogBytes = 2000
		}})
		out := e.call(t, "POST", "/runs/wait", `{"assistant_id":"emit","input":{"a":1},"stream_mode":["custom"],"on_completion":"keep"}`, 200)
		require.JSONEq(t, `{"a":1}`, strings.TrimSpace(out))
		var runs []graphserver.Run
		// The run is the only one of its (kept) thread: find it by search.
		var threads []graphserver.Thread
		require.NoError(t, json.Unmarshal([]byte(e.call(t, "POST", "/threads/search", `{"metadata":{"graph_id":"emit"}}`, 200)), &threads))
		require.Len(t, threads, 1)
		require.NoError(t, json.Unmarshal([]byte(e.call(t, "GET", "/threads/"+threads[0].ThreadID+"/runs", "", 200)), &runs))
		require.Len(t, runs, 1)
		b := e.call(t, "GET", "/threads/"+threads[0].ThreadID+"/runs/"+runs[0].RunID+"/stream", "", http.StatusServiceUnavailable)
		require.Contains(t, b, `"detail":"Events of this run before id `)
		// A resume from the last event id is served (nothing after it).
		e.call(t, "GET", "/threads/"+threads[0].ThreadID+"/runs/"+runs[0].RunID+"/stream", "", http.StatusOK, "Last-Event-ID", "100")
		// A join reads no event: it answers the run's output all the same.
		joined := e.call(t, "GET", "/threads/"+threads[0].ThreadID+"/runs/"+runs[0].RunID+"/join", "", http.StatusOK)
		require.JSONEq(t, `{"a":1}`, strings.TrimSpace(joined))
	})
}
