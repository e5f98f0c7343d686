package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/httpapi"
)

// A browser's Accept header (Chromium's, for a navigation).
const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"

// get sends GET url with an Accept header ("" sends none).
func get(t *testing.T, url, accept string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func TestLanding(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	h := httpapi.New(srv, httpapi.Options{})
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.Handle("/agents/", http.StripPrefix("/agents", h))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)

	t.Run("JSON", func(t *testing.T) {
		t.Parallel()
		for _, accept := range []string{"", "*/*", "application/json", "text/html;q=0.5, application/json"} {
			resp, body := get(t, ts.URL+"/", accept)
			require.Equal(t, http.StatusOK, resp.StatusCode, accept)
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"), accept)
			require.Contains(t, resp.Header.Values("Vary"), "Accept")
			require.JSONEq(t, `{"name":"graphserver","version":"`+graphserver.Version+`","docs":"/docs","openapi":"/openapi.json","graphs":["agent","other"]}`, body, accept)
		}
	})
	t.Run("LinksWork", func(t *testing.T) {
		t.Parallel()
		for _, prefix := range []string{"", "/agents"} {
			_, body := get(t, ts.URL+prefix+"/", "")
			var l struct{ Docs, OpenAPI string }
			require.NoError(t, json.Unmarshal([]byte(body), &l))
			require.Equal(t, prefix+"/docs", l.Docs)
			require.Equal(t, prefix+"/openapi.json", l.OpenAPI)
			resp, _ := get(t, ts.URL+l.Docs, "")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Contains(t, resp.Header.Get("Content-Type"), "text/html")
			resp, _ = get(t, ts.URL+l.OpenAPI, "")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		}
	})
	t.Run("HTMLForBrowsers", func(t *testing.T) {
		t.Parallel()
		for _, accept := range []string{browserAccept, "text/html", "application/json;q=0.5, text/html"} {
			resp, body := get(t, ts.URL+"/agents/", accept)
			require.Equal(t, http.StatusOK, resp.StatusCode, accept)
			require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"), accept)
			require.Contains(t, body, "<title>graphserver "+graphserver.Version+"</title>")
			require.Contains(t, body, `<a href="docs">API reference</a>`)
			require.Contains(t, body, `<a href="assistants/agent"><code>agent</code></a>`)
			require.Contains(t, body, `<a href="assistants/other"><code>other</code></a>`)
		}
		// the page's relative links resolve under the prefix
		resp, body := get(t, ts.URL+"/agents/assistants/agent", "")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, body, `"graph_id":"agent"`)
	})
	t.Run("OnlyTheRoot", func(t *testing.T) {
		t.Parallel()
		resp, body := get(t, ts.URL+"/nope", browserAccept)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		require.NotContains(t, body, "graphserver")
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/", nil)
		require.NoError(t, err)
		resp, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	})
}
