package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
)

// openThreadStream GETs /threads/{id}/stream with query and Last-Event-ID.
func (f *stateFixture) openThreadStream(t *testing.T, tid, query, lastEventID string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", f.url+"/threads/"+tid+"/stream"+query, nil)
	require.NoError(t, err)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// TestThreadStreamHTTP: GET /threads/{thread_id}/stream (§2.11, §4.7),
// as langgraph-api's join_thread_stream serves it.
func TestThreadStreamHTTP(t *testing.T) {
	t.Parallel()
	f := newStateFixture(t)
	tid := f.runToBreakpoint(t)

	t.Run("ReplayRunEventsAndStateUpdates", func(t *testing.T) {
		res := f.openThreadStream(t, tid, "?stream_mode=run_modes,state_update", "-")
		require.Equal(t, 200, res.StatusCode)
		require.Equal(t, "text/event-stream; charset=utf-8", res.Header.Get("Content-Type"))
		require.Equal(t, "/threads/"+tid+"/stream?stream_mode=run_modes,state_update", res.Header.Get("Location"))
		sse := newSSEReader(res.Body)
		var evs []sseEvent
		for len(evs) == 0 || evs[len(evs)-1].Event != "metadata" || !strings.Contains(evs[len(evs)-1].Data, "run_done") {
			ev, ok := sse.next()
			require.True(t, ok)
			evs = append(evs, ev)
		}
		require.Equal(t, "metadata", evs[0].Event)
		require.Contains(t, evs[0].Data, `"attempt":1`)
		require.Equal(t, "values", evs[1].Event)
		for _, ev := range evs {
			require.Regexp(t, `^\d+-\d+$`, ev.ID)
		}

		// A state update arrives live on the same stream.
		require.Equal(t, 200, f.call(t, "POST", "/threads/"+tid+"/state", `{"values":{"note":"edited"},"as_node":"review"}`, nil))
		ev, ok := sse.next()
		require.True(t, ok)
		require.Equal(t, "state_update", ev.Event)
		var su struct {
			State    graphserver.ThreadState `json:"state"`
			ThreadID string                  `json:"thread_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev.Data), &su))
		require.Equal(t, tid, su.ThreadID)
		require.Equal(t, "edited", su.State.Values.(map[string]any)["note"])

		// Resuming after the first event with stream_modes=lifecycle gives
		// the run_done marker next.
		res2 := f.openThreadStream(t, tid, "?stream_modes=lifecycle", evs[0].ID)
		require.Equal(t, 200, res2.StatusCode)
		ev, ok = newSSEReader(res2.Body).next()
		require.True(t, ok)
		require.Equal(t, "metadata", ev.Event)
		require.JSONEq(t, `{"status":"run_done","run_id":`+mustJSONString(t, evs[0].Data, "run_id")+`}`, ev.Data)
	})

	t.Run("Errors", func(t *testing.T) {
		for _, c := range []struct {
			path, lastEventID string
			status            int
			detail            string
		}{
			{"/threads/" + tid + "/stream?stream_mode=values", "", 422, "Invalid stream mode: values"},
			{"/threads/" + tid + "/stream?stream_modes=lifecycle,bogus", "", 422, "Invalid stream mode: bogus"},
			{"/threads/" + tid + "/stream", "not-an-id", 422, "Invalid last-event-id"},
			{"/threads/nope/stream", "", 422, "Invalid thread ID"},
			{"/threads/00000000-0000-4000-8000-000000000000/stream", "", 404, "not found"},
		} {
			req, err := http.NewRequestWithContext(t.Context(), "GET", f.url+c.path, nil)
			require.NoError(t, err)
			if c.lastEventID != "" {
				req.Header.Set("Last-Event-ID", c.lastEventID)
			}
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			var body struct{ Detail string }
			require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
			res.Body.Close()
			require.Equal(t, c.status, res.StatusCode, c.path)
			require.Contains(t, body.Detail, c.detail)
		}
	})
}

func mustJSONString(t *testing.T, data, key string) string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(data), &m))
	return string(m[key])
}

// TestPatchThreadStateHTTP: PATCH /threads/{thread_id}/state, sent by the
// JS SDK's threads.patchState, answers 204 and merges the metadata into the
// latest checkpoint's.
func TestPatchThreadStateHTTP(t *testing.T) {
	t.Parallel()
	f := newStateFixture(t)
	tid := f.runToBreakpoint(t)

	require.Equal(t, 204, f.call(t, "PATCH", "/threads/"+tid+"/state", `{"metadata":{"label":"checked"}}`, nil))
	var st graphserver.ThreadState
	require.Equal(t, 200, f.call(t, "GET", "/threads/"+tid+"/state", "", &st))
	require.Equal(t, "checked", st.Metadata["label"])
	require.Equal(t, "loop", st.Metadata["source"])
	require.Equal(t, []string{"review"}, st.Next)

	var errBody struct{ Detail string }
	require.Equal(t, 422, f.call(t, "PATCH", "/threads/"+tid+"/state", `{}`, &errBody))
	require.Contains(t, errBody.Detail, "metadata is required")
	require.Equal(t, 422, f.call(t, "PATCH", "/threads/"+tid+"/state", `{"metadata":[1]}`, &errBody))
	require.Equal(t, 404, f.call(t, "PATCH", "/threads/00000000-0000-4000-8000-000000000000/state", `{"metadata":{}}`, &errBody))
	var th graphserver.Thread
	require.Equal(t, 200, f.call(t, "POST", "/threads", `{}`, &th))
	require.Equal(t, 404, f.call(t, "PATCH", "/threads/"+th.ThreadID+"/state", `{"metadata":{"a":1}}`, &errBody))
	require.Contains(t, errBody.Detail, "no checkpoint")
}
