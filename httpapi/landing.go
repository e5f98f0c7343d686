package httpapi

import (
	"html/template"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/graphserver/graphserver"
)

// landingResponse is the JSON answer of GET /: what a person or a tool that
// opened the server's address sees first.
type landingResponse struct {
	// Name is always "graphserver".
	Name string `json:"name"`
	// Version is graphserver.Version.
	Version string `json:"version"`
	// Docs is the path of the API reference page (GET /docs), under the
	// prefix the handler is mounted at.
	Docs string `json:"docs"`
	// OpenAPI is the path of the OpenAPI document (GET /openapi.json).
	OpenAPI string `json:"openapi"`
	// Graphs lists the ids of the graphs served, sorted; each is also the
	// id of its system assistant in every route taking an assistant_id.
	Graphs []string `json:"graphs"`
}

// landing answers GET / (exactly) with the server's name, version, where its
// documentation is and the graphs it serves: JSON, or a small HTML page when
// the client prefers text/html (a browser).
func (h *handler) landing(w http.ResponseWriter, r *http.Request) error {
	base := mountPrefix(r)
	resp := landingResponse{
		Name:    "graphserver",
		Version: graphserver.Version,
		Docs:    base + "/docs",
		OpenAPI: base + "/openapi.json",
		Graphs:  h.srv.GraphIDs(),
	}
	w.Header().Add("Vary", "Accept")
	if !prefersHTML(r.Header.Values("Accept")) {
		return h.writeJSON(w, r, http.StatusOK, resp)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(http.StatusOK)
	return landingPage.Execute(w, resp)
}

// mountPrefix is the path prefix the handler is mounted under when an
// http.StripPrefix in front of it removed one ("/agents" for a request to
// /agents/ served as /); "" otherwise. StripPrefix shortens URL.Path (and
// RawPath) but leaves RequestURI as the client sent it.
func mountPrefix(r *http.Request) string {
	full, _, _ := strings.Cut(r.RequestURI, "?")
	if p, ok := strings.CutSuffix(full, r.URL.EscapedPath()); ok && strings.HasPrefix(p, "/") {
		return p
	}
	return ""
}

// prefersHTML reports whether an Accept header ranks text/html above
// application/json: browsers send text/html with q=1 and JSON only through
// */* with a lower q; curl's */* and the SDKs' application/json get JSON.
func prefersHTML(accept []string) bool {
	html, json := -1.0, -1.0
	for _, v := range accept {
		for part := range strings.SplitSeq(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(s, 64); err == nil {
					q = f
				}
			}
			switch mt {
			case "text/html":
				html = max(html, q)
			case "application/json":
				json = max(json, q)
			case "text/*":
				html = max(html, min(q, 0.99)) // an exact type outranks a wildcard
			case "application/*", "*/*":
				json = max(json, min(q, 0.99))
			}
		}
	}
	return html > 0 && html > json
}

// landingPage is the HTML form of GET /. Links are relative, so they work
// under any mount prefix.
var landingPage = template.Must(template.New("landing").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Name}} {{.Version}}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem}code{background:#f3f3f3;padding:0 .2em}</style>
</head>
<body>
<h1>{{.Name}} <small>{{.Version}}</small></h1>
<p>A LangGraph Platform API server. Point the LangGraph SDKs (JS or Python) or LangGraph Studio at this address.</p>
<ul>
<li><a href="docs">API reference</a> (<a href="openapi.json">OpenAPI document</a>)</li>
<li><a href="https://pkg.go.dev/github.com/graphserver/graphserver">Go package documentation</a></li>
</ul>
<h2>Graphs</h2>
{{if .Graphs}}<ul>
{{range .Graphs}}<li><a href="assistants/{{.}}"><code>{{.}}</code></a></li>
{{end}}</ul>{{else}}<p>None.</p>{{end}}
</body>
</html>
`))
