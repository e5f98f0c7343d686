package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/httpapi"
)

// openAPIDoc is the part of an OpenAPI document the tests read.
type openAPIDoc struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]openAPIOp       `json:"paths"`
	Components map[string]map[string]json.RawMessage `json:"components"`
}

type openAPIOp struct {
	OperationID string `json:"operationId"`
	Summary     string `json:"summary"`
	Parameters  []struct {
		Name string `json:"name"`
		In   string `json:"in"`
	} `json:"parameters"`
	RequestBody *struct {
		Content map[string]struct {
			Schema map[string]any `json:"schema"`
		} `json:"content"`
	} `json:"requestBody"`
	Responses map[string]json.RawMessage `json:"responses"`
}

// getOpenAPI fetches and decodes /openapi.json, also returning its raw form.
func getOpenAPI(t *testing.T, h http.Handler) (*openAPIDoc, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var doc openAPIDoc
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
	return &doc, rec.Body.Bytes()
}

var placeholder = regexp.MustCompile(`\{([a-z_]+)\}`)

func TestOpenAPI(t *testing.T) {
	t.Parallel()
	h := httpapi.New(newServer(t), httpapi.Options{Metrics: true, Truncate: truncateNop{}})
	doc, raw := getOpenAPI(t, h)
	require.Equal(t, "3.1.0", doc.OpenAPI)

	ids := map[string]bool{}
	ops := 0
	for path, item := range doc.Paths {
		for method, op := range item {
			ops++
			name := strings.ToUpper(method) + " " + path
			require.NotEmpty(t, op.Summary, name)
			require.NotContains(t, op.Summary, "not described", name)
			require.False(t, ids[op.OperationID], "operationId %s is not unique", op.OperationID)
			ids[op.OperationID] = true
			// Every path placeholder is a declared path parameter, and back.
			want := map[string]bool{}
			for _, m := range placeholder.FindAllStringSubmatch(path, -1) {
				want[m[1]] = true
			}
			got := map[string]bool{}
			for _, p := range op.Parameters {
				if p.In == "path" {
					got[p.Name] = true
				}
			}
			require.Equal(t, want, got, name)
			require.True(t, op.Responses["200"] != nil || op.Responses["204"] != nil, "%s has no success response", name)

			// Described means served: the request reaches a route (anything
			// but the unmatched 404 "Not Found" or a 405).
			url := placeholder.ReplaceAllString(path, "00000000-0000-4000-8000-00000000dead")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(strings.ToUpper(method), url, strings.NewReader("{}")))
			require.NotEqual(t, http.StatusMethodNotAllowed, rec.Code, name)
			if rec.Code == http.StatusNotFound {
				require.NotEqual(t, `{"detail":"Not Found"}`, strings.TrimSpace(rec.Body.String()), "%s is described but not served", name)
			}
		}
	}
	require.GreaterOrEqual(t, ops, 50)

	// Every $ref resolves.
	schemas, responses := doc.Components["schemas"], doc.Components["responses"]
	refs := regexp.MustCompile(`"\$ref":\s*"([^"]+)"`).FindAllStringSubmatch(string(raw), -1)
	require.NotEmpty(t, refs)
	for _, m := range refs {
		switch {
		case strings.HasPrefix(m[1], "#/components/schemas/"):
			require.Contains(t, schemas, strings.TrimPrefix(m[1], "#/components/schemas/"))
		case strings.HasPrefix(m[1], "#/components/responses/"):
			require.Contains(t, responses, strings.TrimPrefix(m[1], "#/components/responses/"))
		default:
			t.Fatalf("unexpected $ref %s", m[1])
		}
	}

	// Bodies and responses come from the Go types.
	create := doc.Paths["/threads/{thread_id}/runs"]["post"]
	require.Equal(t, "#/components/schemas/RunCreate", create.RequestBody.Content["application/json"].Schema["$ref"])
	var runCreate struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(schemas["RunCreate"], &runCreate))
	for _, field := range []string{"assistant_id", "input", "command", "config", "stream_mode", "multitask_strategy", "webhook"} {
		require.Contains(t, runCreate.Properties, field)
	}
	require.NotContains(t, runCreate.Properties, "Headers", "json:\"-\" fields are not on the wire")
	require.Contains(t, runCreate.Properties["stream_mode"], "oneOf", "a string or a list")
	require.Contains(t, string(schemas["Thread"]), `"thread_id"`)
	require.Contains(t, string(doc.Paths["/threads/search"]["post"].Responses["200"]), "X-Pagination-Next")
}

func TestDocsPage(t *testing.T) {
	t.Parallel()
	h := httpapi.New(newServer(t), httpapi.Options{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/docs", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "text/html; charset=utf-8", rec.Header().Get("Content-Type"))
	page, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	require.Contains(t, string(page), `fetch("openapi.json")`, "relative, so it works under a mount prefix")
	// Self-contained: nothing is loaded from another origin.
	require.NotRegexp(t, `(src|href)\s*=\s*["']?(https?:)?//`, string(page))
	require.NotRegexp(t, `@import|url\(`, string(page))
}

// truncateNop stands in for the storage behind POST /internal/truncate
// where only the route's presence matters.
type truncateNop struct{}

func (truncateNop) Truncate(context.Context, driver.TruncateOptions) error { return nil }
