package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/internal/graphtest"
	"github.com/graphserver/graphserver/sqlite"
)

// jsonLines decodes JSON log lines.
func jsonLines(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
		out = append(out, m)
	}
	return out
}

func TestRequestLogs(t *testing.T) {
	t.Parallel()
	// One Logger, given to the Server only, covers httpapi too.
	var logs bytes.Buffer
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	srv, err := graphserver.New(graphserver.Options{
		Storage: db,
		Graphs:  map[string]graphserver.Graph{"agent": graphtest.Nop{}},
		Logger:  slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	require.NoError(t, err)
	h := httpapi.New(srv, httpapi.Options{})

	serve := func(method, url, requestID string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, url, strings.NewReader(`{}`))
		if requestID != "" {
			req.Header.Set("X-Request-Id", requestID)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	rec := serve("GET", "/assistants/"+missingID, "id-1")
	require.Equal(t, http.StatusNotFound, rec.Code)
	require.Equal(t, "id-1", rec.Header().Get("X-Request-Id"))
	// Ids with spaces or control characters, or too long, are replaced.
	for _, bad := range []string{"two words", "line\tbreak", strings.Repeat("x", 201)} {
		rec = serve("GET", "/ok", bad)
		require.Len(t, rec.Header().Get("X-Request-Id"), 36, "%q", bad)
	}
	rec = serve("GET", "/no/such/route", "id-2")
	require.Equal(t, http.StatusNotFound, rec.Code)
	rec = serve("DELETE", "/ok", "id-3")
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	req := httptest.NewRequest("OPTIONS", "/threads", nil)
	req.Header.Set("Origin", "http://ui.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("X-Request-Id", "id-4")
	h.ServeHTTP(httptest.NewRecorder(), req)

	lines := jsonLines(t, logs.Bytes())
	byID := map[string]map[string]any{}
	for _, l := range lines {
		require.Equal(t, "request", l["msg"])
		byID[l["request_id"].(string)] = l
	}
	require.Len(t, byID, 7)
	l := byID["id-1"]
	require.Equal(t, "INFO", l["level"])
	require.Equal(t, "GET", l["method"])
	require.Equal(t, "/assistants/{assistant_id}", l["route"], "the route pattern, not the path")
	require.Equal(t, "/assistants/"+missingID, l["path"])
	require.EqualValues(t, 404, l["status"])
	require.Contains(t, l, "duration")
	require.Equal(t, "", byID["id-2"]["route"], "no route matched")
	require.EqualValues(t, 404, byID["id-2"]["status"])
	require.EqualValues(t, 405, byID["id-3"]["status"])
	require.Equal(t, "(preflight)", byID["id-4"]["route"])
	require.EqualValues(t, 204, byID["id-4"]["status"])
}
