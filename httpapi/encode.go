package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/graphserver/graphserver"
)

// jsonAppender is a value that appends its own JSON encoding, byte for
// byte json.Marshal's, without reflection (graphserver.Thread,
// graphserver.Item): the answers of the busiest routes.
type jsonAppender interface {
	AppendJSON(b []byte) ([]byte, error)
}

// responseBuffers recycles the buffers responses are encoded into:
// ResponseWriter.Write copies the body, so the buffer is free after it.
var responseBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// responseBufferMax is the largest buffer put back in responseBuffers, so
// that one large answer does not stay in memory.
const responseBufferMax = 64 << 10

// writeJSON encodes v and writes it with status. v is encoded before any
// header is written, so an encoding failure still becomes a 500.
func (h *handler) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) error {
	var b []byte
	if a, ok := v.(jsonAppender); ok {
		buf := responseBuffers.Get().(*[]byte)
		defer func() {
			if cap(b) <= responseBufferMax {
				*buf = b[:0]
				responseBuffers.Put(buf)
			}
		}()
		var err error
		if b, err = a.AppendJSON((*buf)[:0]); err != nil {
			return err
		}
	} else {
		var err error
		if b, err = json.Marshal(v); err != nil {
			return err
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b = append(b, '\n')
	if _, err := w.Write(b); err != nil {
		h.logger.DebugContext(r.Context(), "write response", slog.String("request_id", requestID(w)), slog.Any("err", err))
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
