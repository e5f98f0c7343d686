package httpapi

import (
	"net/http"

	"github.com/graphserver/graphserver"
)

// createThread handles POST /threads.
func (h *handler) createThread(w http.ResponseWriter, r *http.Request) error {
	var body graphserver.ThreadCreate
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	t, err := h.srv.CreateThread(r.Context(), body)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, t)
}

// searchThreads handles POST /threads/search.
func (h *handler) searchThreads(w http.ResponseWriter, r *http.Request) error {
	var body graphserver.ThreadSearch
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	page, err := h.srv.SearchThreads(r.Context(), body)
	if err != nil {
		return err
	}
	return writePage(h, w, r, page)
}

// countThreads handles POST /threads/count.
func (h *handler) countThreads(w http.ResponseWriter, r *http.Request) error {
	var body graphserver.ThreadSearch
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	n, err := h.srv.CountThreads(r.Context(), body)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, n)
}

// pruneThreads handles POST /threads/prune.
func (h *handler) pruneThreads(w http.ResponseWriter, r *http.Request) error {
	var body graphserver.ThreadPrune
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	n, err := h.srv.PruneThreads(r.Context(), body)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, prunedResponse{PrunedCount: n})
}

// getThread handles GET /threads/{thread_id}?include=ttl.
func (h *handler) getThread(w http.ResponseWriter, r *http.Request) error {
	include, err := queryStrings(r, "include")
	if err != nil {
		return err
	}
	t, err := h.srv.GetThread(r.Context(), r.PathValue("thread_id"), include...)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, t)
}

// updateThread handles PATCH /threads/{thread_id}.
func (h *handler) updateThread(w http.ResponseWriter, r *http.Request) error {
	var body graphserver.ThreadPatch
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	t, err := h.srv.UpdateThread(r.Context(), r.PathValue("thread_id"), body)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, t)
}

// deleteThread handles DELETE /threads/{thread_id}.
func (h *handler) deleteThread(w http.ResponseWriter, r *http.Request) error {
	if err := h.srv.DeleteThread(r.Context(), r.PathValue("thread_id")); err != nil {
		return err
	}
	return writeNoContent(w)
}

// copyThread handles POST /threads/{thread_id}/copy.
func (h *handler) copyThread(w http.ResponseWriter, r *http.Request) error {
	t, err := h.srv.CopyThread(r.Context(), r.PathValue("thread_id"))
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, t)
}

// joinThreadStream handles GET /threads/{thread_id}/stream: the thread's
// events as SSE, modes from stream_modes or stream_mode (repeated keys or
// comma lists), resumed after the Last-Event-ID header ("-" replays). It
// never ends on its own; Location is the request itself, so that SDKs
// reconnect to the same stream with the last id they saw.
func (h *handler) joinThreadStream(w http.ResponseWriter, r *http.Request) error {
	var modes []string
	for _, name := range []string{"stream_modes", "stream_mode"} {
		m, err := queryStrings(r, name)
		if err != nil {
			return err
		}
		modes = append(modes, m...)
	}
	st, err := h.srv.JoinThreadStream(r.Context(), r.PathValue("thread_id"), graphserver.ThreadStreamOptions{
		LastEventID: r.Header.Get("Last-Event-ID"),
		StreamModes: modes,
	})
	if err != nil {
		return err
	}
	h.writeSSE(w, r, st.Events, "", r.URL.RequestURI(), false)
	return nil
}
