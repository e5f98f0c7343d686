package chatui_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	chatui "github.com/graphserver/graphserver/examples/chat-ui"
)

// TestBundleUpToDate fails when dist/ was built from other sources than
// those in the tree: it recomputes build.mjs's sourcesDigest (over src/*,
// package.json, package-lock.json and build.mjs) and compares it with
// dist/sources.sha256. (.ci/run also rebuilds dist/ and compares the bytes.)
func TestBundleUpToDate(t *testing.T) {
	t.Parallel()
	files := []string{"build.mjs", "package.json", "package-lock.json"}
	src, err := os.ReadDir("src")
	require.NoError(t, err)
	for _, e := range src {
		files = append(files, "src/"+e.Name())
	}
	slices.Sort(files)
	digest := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.FromSlash(f))
		require.NoError(t, err)
		sum := sha256.Sum256(b)
		io.WriteString(digest, f+"\x00"+hex.EncodeToString(sum[:])+"\n")
	}
	built, err := os.ReadFile("dist/sources.sha256")
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(string(built)), hex.EncodeToString(digest.Sum(nil)),
		"examples/chat-ui/dist is stale: run npm ci && npm run build in examples/chat-ui and commit dist/")
}

func TestHandler(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.Handle("/chat/", http.StripPrefix("/chat", chatui.Handler()))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}
	resp, page := get("/chat/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/html")
	require.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
	require.Contains(t, page, `<script type="module" src="app.js">`)

	resp, script := get("/chat/app.js")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "javascript")
	require.Contains(t, script, "lg:stream:", "the bundle holds the SDK's useStream")

	resp, _ = get("/chat/sources.sha256")
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "only the page and its script are served")
}
