package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/httpapi"
)

// TestCronRoutes drives the cron routes as the SDKs call them (the bodies
// are those langgraph_sdk's crons client sends): create on a thread and
// stateless, search with pagination headers, select and sort, count,
// update (an explicit end_time null clears the end time), delete.
func TestCronRoutes(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	createThread(t, srv)
	h := httpapi.New(srv, httpapi.Options{})
	call := func(method, url, body string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(method, url, strings.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	decode := func(rec *httptest.ResponseRecorder, status int, v any) {
		t.Helper()
		require.Equal(t, status, rec.Code, "body: %s", rec.Body.String())
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), v), rec.Body.String())
	}
	search := func(body string) ([]map[string]any, *httptest.ResponseRecorder) {
		t.Helper()
		rec := call("POST", "/runs/crons/search", body)
		var page []map[string]any // fresh: Unmarshal would merge into reused maps
		decode(rec, http.StatusOK, &page)
		return page, rec
	}

	var threadCron, stateless map[string]any
	decode(call("POST", "/threads/"+threadID+"/runs/crons",
		`{"schedule":"*/5 * * * *","assistant_id":"agent","input":{"x":1},"metadata":{"tag":"t"},"multitask_strategy":"enqueue","end_time":"2099-01-01T00:00:00","enabled":true,"timezone":"Europe/Paris","stream_mode":["values"]}`),
		http.StatusOK, &threadCron)
	require.Equal(t, threadID, threadCron["thread_id"])
	require.Equal(t, "*/5 * * * *", threadCron["schedule"])
	require.Equal(t, "Europe/Paris", threadCron["timezone"])
	require.Equal(t, agentID, threadCron["assistant_id"], "a graph id resolves to its system assistant")
	require.Nil(t, threadCron["on_run_completed"])
	require.Nil(t, threadCron["user_id"])
	require.Equal(t, true, threadCron["enabled"])
	require.Equal(t, map[string]any{"tag": "t"}, threadCron["metadata"])
	require.Equal(t, "2099-01-01T00:00:00Z", threadCron["end_time"])
	next, err := time.Parse(time.RFC3339, threadCron["next_run_date"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), next, 5*time.Minute+time.Second)
	payload := threadCron["payload"].(map[string]any)
	require.Equal(t, map[string]any{"x": float64(1)}, payload["input"])
	require.Equal(t, "enqueue", payload["multitask_strategy"])

	decode(call("POST", "/runs/crons", `{"schedule":"@daily","assistant_id":"agent","metadata":{"tag":"t"},"on_run_completed":"keep","enabled":false}`),
		http.StatusOK, &stateless)
	require.Nil(t, stateless["thread_id"])
	require.Nil(t, stateless["timezone"], "UTC is null on the wire")
	require.Equal(t, "keep", stateless["on_run_completed"])
	require.Equal(t, false, stateless["enabled"])

	// Search: sort, pagination headers, select.
	page, rec := search(`{"metadata":{"tag":"t"},"limit":1,"offset":0,"sort_by":"created_at","sort_order":"asc"}`)
	require.Len(t, page, 1)
	require.Equal(t, threadCron["cron_id"], page[0]["cron_id"])
	require.Equal(t, "1", rec.Header().Get("X-Pagination-Next"))
	require.Equal(t, "2", rec.Header().Get("X-Pagination-Total"))
	page, rec = search(`{"metadata":{"tag":"t"},"limit":1,"offset":1,"sort_by":"created_at","sort_order":"asc","select":["cron_id","enabled"]}`)
	require.Equal(t, []map[string]any{{"cron_id": stateless["cron_id"], "enabled": false}}, page)
	require.Empty(t, rec.Header().Get("X-Pagination-Next"))
	page, _ = search(`{"thread_id":"` + threadID + `"}`)
	require.Len(t, page, 1)
	require.Equal(t, threadCron["cron_id"], page[0]["cron_id"])
	page, _ = search(`{"enabled":false}`)
	require.Len(t, page, 1)
	require.Equal(t, stateless["cron_id"], page[0]["cron_id"])

	// Count.
	var n int
	decode(call("POST", "/runs/crons/count", `{}`), http.StatusOK, &n)
	require.Equal(t, 2, n)
	decode(call("POST", "/runs/crons/count", `{"assistant_id":"agent","thread_id":"`+threadID+`"}`), http.StatusOK, &n)
	require.Equal(t, 1, n)

	// Update: end_time null clears it; absent leaves it.
	var updated map[string]any
	id := threadCron["cron_id"].(string)
	decode(call("PATCH", "/runs/crons/"+id, `{"schedule":"0 9 * * 1-5","metadata":{"x":1}}`), http.StatusOK, &updated)
	require.Equal(t, "0 9 * * 1-5", updated["schedule"])
	require.Equal(t, "2099-01-01T00:00:00Z", updated["end_time"])
	require.Equal(t, map[string]any{"tag": "t", "x": float64(1)}, updated["metadata"])
	decode(call("PATCH", "/runs/crons/"+id, `{"end_time":null}`), http.StatusOK, &updated)
	require.Nil(t, updated["end_time"])
	var bad map[string]any
	decode(call("PATCH", "/runs/crons/"+id, `{"schedule":"0 9 * *"}`), http.StatusUnprocessableEntity, &bad)
	require.Contains(t, bad["detail"], "expected exactly 5 fields", "the parser's message")

	// Delete: 204, then 404.
	rec = call("DELETE", "/runs/crons/"+id, "")
	require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
	require.Empty(t, rec.Body.String())
	decode(call("DELETE", "/runs/crons/"+id, ""), http.StatusNotFound, &bad)
	decode(call("PATCH", "/runs/crons/"+id, `{}`), http.StatusNotFound, &bad)
	decode(call("POST", "/threads/"+missingID+"/runs/crons", `{"schedule":"@daily","assistant_id":"agent"}`), http.StatusNotFound, &bad)
	_, err = srv.GetCron(t.Context(), id)
	require.Equal(t, graphserver.ENOTFOUND, graphserver.ErrorCode(err))
	decode(call("POST", "/runs/crons/count", `{}`), http.StatusOK, &n)
	require.Equal(t, 1, n)

	// /info advertises crons.
	var info map[string]any
	decode(call("GET", "/info", ""), http.StatusOK, &info)
	require.Equal(t, true, info["flags"].(map[string]any)["crons"])
}
