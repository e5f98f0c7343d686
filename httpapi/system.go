package httpapi

import (
	"net/http"
)

// ok answers GET /ok with {"ok": true}; with check_db=1 it pings the storage
// first and answers 500 when that fails.
func (h *handler) ok(w http.ResponseWriter, r *http.Request) error {
	check, err := queryBool(r, "check_db", false)
	if err != nil {
		return err
	}
	if check {
		if err := h.srv.Ping(r.Context()); err != nil {
			return err
		}
	}
	return h.writeJSON(w, r, http.StatusOK, okResponse{OK: true})
}

// info answers GET /info with the version and feature flags.
func (h *handler) info(w http.ResponseWriter, r *http.Request) error {
	return h.writeJSON(w, r, http.StatusOK, h.srv.Info())
}
