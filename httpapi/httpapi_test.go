package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/internal/graphtest"
	"github.com/graphserver/graphserver/sqlite"
)

// Fixed ids the scenarios refer to.
const (
	agentID   = "fe096781-5601-53d2-b2f6-0d3403f7e9ca" // system assistant of "agent"
	asstID    = "a0000000-0000-4000-8000-000000000001"
	threadID  = "70000000-0000-4000-8000-000000000001"
	missingID = "00000000-0000-4000-8000-00000000dead"
)

// newServer returns a started Server on a fresh temp-file SQLite database
// with graphs "agent" and "other" registered.
func newServer(t *testing.T) *graphserver.Server {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	srv, err := graphserver.New(graphserver.Options{
		Storage: db,
		Graphs:  map[string]graphserver.Graph{"agent": graphtest.Nop{}, "other": graphtest.Nop{}},
	})
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, srv.Close(context.WithoutCancel(t.Context()))) })
	return srv
}

// scenario is one HTTP request against a fresh server, in the style of
// pocketbase's ApiScenario.
type scenario struct {
	name    string
	method  string
	url     string
	body    string
	headers map[string]string
	opts    httpapi.Options
	// before prepares data through the Server's Go API.
	before func(t *testing.T, srv *graphserver.Server)

	status             int
	expectedContent    []string
	notExpectedContent []string
	expectedHeaders    map[string]string
	// after checks the server's state once the request is done.
	after func(t *testing.T, srv *graphserver.Server)
}

// run serves the scenario through httptest and checks the response.
func (s scenario) run(t *testing.T) {
	t.Helper()
	t.Run(s.name, func(t *testing.T) {
		t.Parallel()
		srv := newServer(t)
		if s.before != nil {
			s.before(t, srv)
		}
		var body io.Reader
		if s.body != "" {
			body = strings.NewReader(s.body)
		}
		req := httptest.NewRequest(s.method, s.url, body)
		for k, v := range s.headers {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		httpapi.New(srv, s.opts).ServeHTTP(rec, req)

		got := rec.Body.String()
		require.Equal(t, s.status, rec.Code, "body: %s", got)
		if rec.Code != http.StatusNoContent {
			require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		} else {
			require.Empty(t, got)
		}
		for _, c := range s.expectedContent {
			require.Contains(t, got, c)
		}
		for _, c := range s.notExpectedContent {
			require.NotContains(t, got, c)
		}
		for k, v := range s.expectedHeaders {
			require.Equal(t, v, rec.Header().Get(k), "header %s", k)
		}
		if s.after != nil {
			s.after(t, srv)
		}
	})
}

// createAssistant is a before hook creating assistant asstID on graph agent.
func createAssistant(t *testing.T, srv *graphserver.Server) {
	t.Helper()
	_, err := srv.CreateAssistant(t.Context(), graphserver.AssistantCreate{
		AssistantID: asstID, GraphID: "agent", Name: "mine", Metadata: graphserver.Metadata{"team": "a"},
	})
	require.NoError(t, err)
}

// createThread is a before hook creating thread threadID.
func createThread(t *testing.T, srv *graphserver.Server) {
	t.Helper()
	_, err := srv.CreateThread(t.Context(), graphserver.ThreadCreate{
		ThreadID: threadID, Metadata: graphserver.Metadata{"owner": "ann"}, TTL: &graphserver.ThreadTTL{Minutes: 60},
	})
	require.NoError(t, err)
}

func TestSystem(t *testing.T) {
	t.Parallel()
	for _, s := range []scenario{
		{name: "OK", method: "GET", url: "/ok", status: 200, expectedContent: []string{`{"ok":true}`}},
		{name: "OKCheckDB", method: "GET", url: "/ok?check_db=1", status: 200, expectedContent: []string{`{"ok":true}`}},
		{name: "OKBadBool", method: "GET", url: "/ok?check_db=perhaps", status: 422, expectedContent: []string{`"detail":"Invalid check_db`}},
		{name: "Info", method: "GET", url: "/info", status: 200, expectedContent: []string{
			`"version":"` + graphserver.Version + `"`,
			`"flags":{"assistants":true,"crons":true,"langsmith":false,"langsmith_tracing_replicas":true,"auth":false}`,
			`"host":{"kind":"self-hosted"`,
		}},
		{name: "UnknownPath", method: "GET", url: "/nope", status: 404, expectedContent: []string{`{"detail":"Not Found"}`}},
		{name: "WrongMethod", method: "PUT", url: "/threads", status: 405,
			expectedContent: []string{`{"detail":"Method Not Allowed"}`}, expectedHeaders: map[string]string{"Allow": "POST"}},
		{name: "RequestIDEchoed", method: "GET", url: "/ok", headers: map[string]string{"X-Request-Id": "abc-123"}, status: 200,
			expectedHeaders: map[string]string{"X-Request-Id": "abc-123"}},
		{name: "CORSExposesHeaders", method: "GET", url: "/ok", headers: map[string]string{"Origin": "http://studio.example"}, status: 200,
			expectedHeaders: map[string]string{
				"Access-Control-Allow-Origin":   "*",
				"Access-Control-Expose-Headers": "Content-Location, Location, X-Pagination-Next, X-Pagination-Total, X-Request-Id",
			}},
		{name: "CORSRestricted", method: "GET", url: "/ok", headers: map[string]string{"Origin": "http://evil.example"},
			opts: httpapi.Options{CORSOrigins: []string{"http://studio.example"}}, status: 200,
			expectedHeaders: map[string]string{"Access-Control-Allow-Origin": ""}},
		{name: "CORSAllowedOrigin", method: "GET", url: "/ok", headers: map[string]string{"Origin": "http://studio.example"},
			opts: httpapi.Options{CORSOrigins: []string{"http://studio.example"}}, status: 200,
			expectedHeaders: map[string]string{"Access-Control-Allow-Origin": "http://studio.example", "Vary": "Origin"}},
	} {
		s.run(t)
	}
}

func TestCORSPreflight(t *testing.T) {
	t.Parallel()
	req := httptest.NewRequest("OPTIONS", "/threads/search", nil)
	req.Header.Set("Origin", "http://localhost:3000")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type, x-api-key")
	rec := httptest.NewRecorder()
	httpapi.New(newServer(t), httpapi.Options{}).ServeHTTP(rec, req)
	require.Equal(t, http.StatusNoContent, rec.Code)
	require.Equal(t, "*", rec.Header().Get("Access-Control-Allow-Origin"))
	require.Contains(t, rec.Header().Get("Access-Control-Allow-Methods"), "PATCH")
	require.Equal(t, "content-type, x-api-key", rec.Header().Get("Access-Control-Allow-Headers"))
}

// brokenStorage is a Storage whose Ping fails and whose other methods panic
// (the embedded interface is nil).
type brokenStorage struct {
	driver.Storage
	pingErr error
}

func (b brokenStorage) Ping(context.Context) error {
	if b.pingErr == nil {
		panic("storage exploded")
	}
	return b.pingErr
}

func TestInternalErrorsAndPanics(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		pingErr error
		logged  string
	}{
		{"Error", errors.New("disk on fire"), "disk on fire"},
		{"Panic", nil, "storage exploded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			srv, err := graphserver.New(graphserver.Options{Storage: brokenStorage{pingErr: tc.pingErr}})
			require.NoError(t, err)
			h := httpapi.New(srv, httpapi.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			req := httptest.NewRequest("GET", "/ok?check_db=true", nil)
			req.Header.Set("X-Request-Id", "req-42")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			require.Equal(t, http.StatusInternalServerError, rec.Code)
			require.JSONEq(t, `{"detail":"Internal error."}`, rec.Body.String())
			require.NotContains(t, rec.Body.String(), tc.logged, "internal details never reach the client")
			require.Contains(t, logs.String(), tc.logged)
			require.Contains(t, logs.String(), `"request_id":"req-42"`)
		})
	}
}
