package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/graphserver/graphserver"
)

// writeJSON encodes v and writes it with status. v is encoded before any
// header is written, so an encoding failure still becomes a 500.
func (h *handler) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if _, err := w.Write(append(b, '\n')); err != nil {
		h.logger.DebugContext(r.Context(), "write response", slog.String("request_id", requestID(r.Context())), slog.Any("err", err))
	}
	return nil
}

// writePage writes a search page with its pagination headers:
// X-Pagination-Next when more rows exist, X-Pagination-Total always.
func writePage[T any](h *handler, w http.ResponseWriter, r *http.Request, p *graphserver.Page[T]) error {
	if p.Next != nil {
		w.Header().Set("X-Pagination-Next", strconv.Itoa(*p.Next))
	}
	w.Header().Set("X-Pagination-Total", strconv.Itoa(p.Total))
	return h.writeJSON(w, r, http.StatusOK, p)
}

// writeNoContent answers 204 with no body.
func writeNoContent(w http.ResponseWriter) error {
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// Small response bodies, named so that /openapi.json describes them.
type (
	okResponse struct {
		OK bool `json:"ok"`
	}
	prunedResponse struct {
		PrunedCount int `json:"pruned_count"`
	}
	itemsResponse struct {
		Items []graphserver.SearchItem `json:"items"`
	}
	namespacesResponse struct {
		Namespaces [][]string `json:"namespaces"`
	}
)
