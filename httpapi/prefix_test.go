package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/httpapi"
)

// TestMountedUnderPrefix: behind http.StripPrefix, the run endpoints'
// Location and Content-Location stay paths relative to the API's base URL,
// without the prefix. That is what the official clients expect: SDK-JS
// requests `${apiUrl}${location}` (client/base.js prepareFetchOptions),
// SDK-PY hands it to httpx, which joins a relative path to its base_url,
// and the Go client joins it to its base path (client.resolve). A prefixed
// Location would reconnect to /agents/agents/... (e2e/test/prefix.test.js
// and e2e/python/test_prefix.py drive the SDKs through such a reconnection).
func TestMountedUnderPrefix(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	mux := http.NewServeMux()
	mux.Handle("/agents/", http.StripPrefix("/agents", httpapi.New(srv, httpapi.Options{})))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	th, err := srv.CreateThread(t.Context(), graphserver.ThreadCreate{})
	require.NoError(t, err)
	base := ts.URL + "/agents"

	post := func(path string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+path, strings.NewReader(`{"assistant_id":"agent"}`))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		return resp
	}
	runPath := regexp.MustCompile(`^/threads/` + th.ThreadID + `/runs/[0-9a-f-]{36}$`)
	for path, suffix := range map[string]string{
		"/threads/" + th.ThreadID + "/runs/stream": "/stream",
		"/threads/" + th.ThreadID + "/runs/wait":   "/join",
	} {
		resp := post(path)
		cl := resp.Header.Get("Content-Location")
		require.Regexp(t, runPath, cl, path)
		require.Equal(t, cl+suffix, resp.Header.Get("Location"), path)
		// resolved against the API's base URL, as the SDKs do, it works
		again, err := http.Get(base + resp.Header.Get("Location"))
		require.NoError(t, err)
		again.Body.Close()
		require.Equal(t, http.StatusOK, again.StatusCode, path)
	}
	resp := post("/runs/stream")
	require.Regexp(t, `^/runs/[0-9a-f-]{36}$`, resp.Header.Get("Content-Location"))
	require.Regexp(t, `^/runs/[0-9a-f-]{36}/stream$`, resp.Header.Get("Location"))
}
