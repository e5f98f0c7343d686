package httpapi

import (
	"net/http"
	"strings"

	"github.com/graphserver/graphserver"
)

// putItem handles PUT /store/items.
func (h *handler) putItem(w http.ResponseWriter, r *http.Request) error {
	var body graphserver.ItemPut
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	if err := h.srv.PutItem(r.Context(), body); err != nil {
		return err
	}
	return writeNoContent(w)
}

// getItem handles GET /store/items?namespace=a.b&key=k&refresh_ttl= (or
// namespace=a&namespace=b); a missing item is 200 null.
func (h *handler) getItem(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query() // parsed once: this is the store's busiest read
	refresh, err := queryValuesBool(q, "refresh_ttl", true)
	if err != nil {
		return err
	}
	it, err := h.srv.GetItem(r.Context(), queryNamespace(q["namespace"]), q.Get("key"), &refresh)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, it)
}

// deleteItem handles DELETE /store/items (with a JSON body).
func (h *handler) deleteItem(w http.ResponseWriter, r *http.Request) error {
	var body graphserver.ItemDelete
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	if err := h.srv.DeleteItem(r.Context(), body.Namespace, body.Key); err != nil {
		return err
	}
	return writeNoContent(w)
}

// searchItems handles POST /store/items/search.
func (h *handler) searchItems(w http.ResponseWriter, r *http.Request) error {
	var body graphserver.ItemSearchRequest
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	items, err := h.srv.SearchItems(r.Context(), body)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, itemsResponse{Items: items})
}

// listNamespaces handles POST /store/namespaces.
func (h *handler) listNamespaces(w http.ResponseWriter, r *http.Request) error {
	var body graphserver.NamespaceList
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	nss, err := h.srv.ListNamespaces(r.Context(), body)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, namespacesResponse{Namespaces: nss})
}

// queryNamespace reads the namespace of GET /store/items. The SDKs send the
// labels joined with "." (namespace=users.alice); the Platform's OpenAPI
// document declares an array, which a generic client sends as repeated keys
// (namespace=users&namespace=alice). Labels cannot contain ".", so every
// value is split on it and the parts concatenated: both forms, and a mix,
// give one unambiguous namespace. An empty value stays an empty label, which
// GetItem rejects, rather than vanishing.
func queryNamespace(values []string) []string {
	if len(values) == 1 {
		return graphserver.ParseNamespace(values[0])
	}
	var ns []string
	for _, v := range values {
		ns = append(ns, strings.Split(v, ".")...)
	}
	return ns
}
