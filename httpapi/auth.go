package httpapi

import (
	"net/http"
	"regexp"

	"github.com/graphserver/graphserver"
)

// publicRoutes need no credentials even with access control on: health
// checks, server info, the API description and metrics (as LangGraph
// mounts its meta routes outside authentication), and the test-only
// truncate route.
var publicRoutes = map[string]bool{
	"GET /ok":                 true,
	"GET /info":               true,
	"GET /openapi.json":       true,
	"GET /docs":               true,
	"GET /metrics":            true,
	"POST /internal/truncate": true,
}

var pathParamRE = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)(?:\.\.\.)?\}`)

// pathParams returns the names of a route pattern's path parameters.
func pathParams(pattern string) []string {
	var names []string
	for _, m := range pathParamRE.FindAllStringSubmatch(pattern, -1) {
		names = append(names, m[1])
	}
	return names
}

// authenticate runs the Server's Authenticator on r and returns r carrying
// the user in its context (graphserver.NewContextWithUser), so that the
// Server methods the handler calls authorize that user. The error is the
// Authenticator's rejection, written by writeError with its status and
// headers.
func (h *handler) authenticate(r *http.Request, params []string) (*http.Request, error) {
	req := &graphserver.AuthRequest{
		Method:     r.Method,
		Path:       r.URL.Path,
		Headers:    r.Header,
		Query:      r.URL.Query(),
		PathParams: make(map[string]string, len(params)),
	}
	for _, p := range params {
		req.PathParams[p] = r.PathValue(p)
	}
	user, err := h.srv.Authenticate(r.Context(), req)
	if err != nil {
		return r, err
	}
	return r.WithContext(graphserver.NewContextWithUser(r.Context(), user)), nil
}
