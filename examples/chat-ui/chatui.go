// Package chatui is a chat page for graphserver built on the official
// useStream React hook (@langchain/langgraph-sdk/react): send messages,
// watch replies stream token by token, stop them, and switch between
// threads. examples/quickstart serves it at /chat/.
//
// The page (src/main.jsx) is bundled by esbuild into dist/, which is
// committed and embedded here, so Go programs serve it without node. After
// changing src/ or the npm dependencies, run npm ci && npm run build in this
// directory and commit dist/ (TestBundleUpToDate and .ci/run check it).
// test/chat.test.mjs drives the page in headless Chromium.
package chatui

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed dist/index.html dist/app.js
var dist embed.FS

// Handler serves the page: index.html at "/" and its script. Mount it one
// level below the API, which the page calls at "..": with the API at the
// root of a mux, mux.Handle("/chat/", http.StripPrefix("/chat", chatui.Handler())).
// The page talks to the assistant named by ?assistant= (default "chat").
func Handler() http.Handler {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // the embedded directory exists: a build error otherwise
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The script's name carries no hash: revalidate, so that a new
		// binary's page is never mixed with a cached script.
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
