package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/graphserver/graphserver"
)

// Assistants groups the /assistants operations. Wherever an assistant id is
// taken, a registered graph id may be given instead.
type Assistants struct{ c *Client }

// Create creates an assistant (POST /assistants).
func (a *Assistants) Create(ctx context.Context, body graphserver.AssistantCreate) (*graphserver.Assistant, error) {
	var out graphserver.Assistant
	return &out, a.c.json(ctx, call{method: http.MethodPost, path: "/assistants", body: body}, &out)
}

// Get returns an assistant (GET /assistants/{id}).
func (a *Assistants) Get(ctx context.Context, id string) (*graphserver.Assistant, error) {
	var out graphserver.Assistant
	return &out, a.c.json(ctx, call{method: http.MethodGet, path: "/assistants/" + esc(id), idempotent: true}, &out)
}

// Update patches an assistant, creating a new version (PATCH
// /assistants/{id}).
func (a *Assistants) Update(ctx context.Context, id string, patch graphserver.AssistantPatch) (*graphserver.Assistant, error) {
	var out graphserver.Assistant
	return &out, a.c.json(ctx, call{method: http.MethodPatch, path: "/assistants/" + esc(id), body: patch}, &out)
}

// Delete deletes an assistant, and with deleteThreads the threads whose
// metadata.assistant_id is its id (DELETE /assistants/{id}).
func (a *Assistants) Delete(ctx context.Context, id string, deleteThreads bool) error {
	q := url.Values{"delete_threads": {strconv.FormatBool(deleteThreads)}}
	return a.c.json(ctx, call{method: http.MethodDelete, path: "/assistants/" + esc(id), query: q, idempotent: true}, nil)
}

// Search returns one page of assistants (POST /assistants/search). The
// page's Next and Total come from the X-Pagination-Next and
// X-Pagination-Total headers (Total is 0 when the server sends none).
func (a *Assistants) Search(ctx context.Context, q graphserver.AssistantSearch) (*graphserver.Page[*graphserver.Assistant], error) {
	return search[*graphserver.Assistant](ctx, a.c, "/assistants/search", q, q.Select)
}

// Count counts assistants (POST /assistants/count).
func (a *Assistants) Count(ctx context.Context, q graphserver.AssistantSearch) (int, error) {
	var n int
	return n, a.c.json(ctx, call{method: http.MethodPost, path: "/assistants/count", body: q, idempotent: true}, &n)
}

// GetGraph returns the assistant's graph drawing; xray > 0 expands
// subgraphs that many levels (GET /assistants/{id}/graph).
func (a *Assistants) GetGraph(ctx context.Context, id string, xray int) (*graphserver.Drawing, error) {
	q := url.Values{}
	if xray > 0 {
		q.Set("xray", strconv.Itoa(xray))
	}
	var out graphserver.Drawing
	return &out, a.c.json(ctx, call{method: http.MethodGet, path: "/assistants/" + esc(id) + "/graph", query: q, idempotent: true}, &out)
}

// GetSchemas returns the JSON Schemas of the assistant's graph (GET
// /assistants/{id}/schemas).
func (a *Assistants) GetSchemas(ctx context.Context, id string) (*graphserver.GraphSchemas, error) {
	var out graphserver.GraphSchemas
	return &out, a.c.json(ctx, call{method: http.MethodGet, path: "/assistants/" + esc(id) + "/schemas", idempotent: true}, &out)
}

// GetSubgraphs returns the schemas of the graph's subgraphs by namespace,
// limited to namespace when non-empty, nested ones with recurse (GET
// /assistants/{id}/subgraphs[/{namespace}]).
func (a *Assistants) GetSubgraphs(ctx context.Context, id, namespace string, recurse bool) (map[string]*graphserver.GraphSchemas, error) {
	path := "/assistants/" + esc(id) + "/subgraphs"
	if namespace != "" {
		path += "/" + esc(namespace)
	}
	q := url.Values{"recurse": {strconv.FormatBool(recurse)}}
	out := map[string]*graphserver.GraphSchemas{}
	return out, a.c.json(ctx, call{method: http.MethodGet, path: path, query: q, idempotent: true}, &out)
}

// GetVersions lists the assistant's versions, newest first (POST
// /assistants/{id}/versions).
func (a *Assistants) GetVersions(ctx context.Context, id string, q graphserver.AssistantVersionSearch) ([]*graphserver.AssistantVersion, error) {
	var out []*graphserver.AssistantVersion
	return out, a.c.json(ctx, call{method: http.MethodPost, path: "/assistants/" + esc(id) + "/versions", body: q, idempotent: true}, &out)
}

// SetLatest makes version the assistant's current one (POST
// /assistants/{id}/latest).
func (a *Assistants) SetLatest(ctx context.Context, id string, version int) (*graphserver.Assistant, error) {
	var out graphserver.Assistant
	body := map[string]int{"version": version}
	return &out, a.c.json(ctx, call{method: http.MethodPost, path: "/assistants/" + esc(id) + "/latest", body: body}, &out)
}

// search posts a search body and reads the page and its pagination headers.
func search[T any](ctx context.Context, c *Client, path string, body any, sel []string) (*graphserver.Page[T], error) {
	page := &graphserver.Page[T]{Select: sel}
	hdr, err := c.do(ctx, call{method: http.MethodPost, path: path, body: body, idempotent: true}, func(resp *http.Response) error {
		return decodeBody(resp, &page.Items)
	})
	if err != nil {
		return nil, err
	}
	if page.Items == nil {
		page.Items = []T{}
	}
	if n, err := strconv.Atoi(hdr.Get("X-Pagination-Next")); err == nil {
		page.Next = &n
	}
	page.Total, _ = strconv.Atoi(hdr.Get("X-Pagination-Total"))
	return page, nil
}
