package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/graphserver/graphserver"
)

// Store groups the /store operations on the cross-thread item store.
type Store struct{ c *Client }

// PutItem creates or replaces an item (PUT /store/items).
func (s *Store) PutItem(ctx context.Context, p graphserver.ItemPut) error {
	return s.c.json(ctx, call{method: http.MethodPut, path: "/store/items", body: p, idempotent: true}, nil)
}

// GetItem returns an item, or nil (and no error) when there is none (GET
// /store/items). refreshTTL nil leaves the server's default.
func (s *Store) GetItem(ctx context.Context, namespace []string, key string, refreshTTL *bool) (*graphserver.Item, error) {
	q := url.Values{"namespace": {strings.Join(namespace, ".")}, "key": {key}}
	if refreshTTL != nil {
		q.Set("refresh_ttl", strconv.FormatBool(*refreshTTL))
	}
	var out *graphserver.Item
	return out, s.c.json(ctx, call{method: http.MethodGet, path: "/store/items", query: q, idempotent: true}, &out)
}

// DeleteItem deletes an item; a missing item is no error (DELETE
// /store/items).
func (s *Store) DeleteItem(ctx context.Context, namespace []string, key string) error {
	body := graphserver.ItemDelete{Namespace: namespace, Key: key}
	return s.c.json(ctx, call{method: http.MethodDelete, path: "/store/items", body: body, idempotent: true}, nil)
}

// SearchItems returns items under a namespace prefix (POST
// /store/items/search).
func (s *Store) SearchItems(ctx context.Context, req graphserver.ItemSearchRequest) ([]graphserver.SearchItem, error) {
	if req.NamespacePrefix == nil {
		req.NamespacePrefix = []string{}
	}
	var out struct {
		Items []graphserver.SearchItem `json:"items"`
	}
	if err := s.c.json(ctx, call{method: http.MethodPost, path: "/store/items/search", body: req, idempotent: true}, &out); err != nil {
		return nil, err
	}
	if out.Items == nil {
		out.Items = []graphserver.SearchItem{}
	}
	return out.Items, nil
}

// ListNamespaces lists distinct namespaces (POST /store/namespaces).
func (s *Store) ListNamespaces(ctx context.Context, req graphserver.NamespaceList) ([][]string, error) {
	var out struct {
		Namespaces [][]string `json:"namespaces"`
	}
	if err := s.c.json(ctx, call{method: http.MethodPost, path: "/store/namespaces", body: req, idempotent: true}, &out); err != nil {
		return nil, err
	}
	if out.Namespaces == nil {
		out.Namespaces = [][]string{}
	}
	return out.Namespaces, nil
}
