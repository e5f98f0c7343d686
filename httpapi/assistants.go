package httpapi

import (
	"net/http"

	"github.com/graphserver/graphserver"
)

// createAssistant handles POST /assistants.
func (h *handler) createAssistant(w http.ResponseWriter, r *http.Request) error {
	var body graphserver.AssistantCreate
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	a, err := h.srv.CreateAssistant(r.Context(), body)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, a)
}

// searchAssistants handles POST /assistants/search.
func (h *handler) searchAssistants(w http.ResponseWriter, r *http.Request) error {
	var body graphserver.AssistantSearch
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	page, err := h.srv.SearchAssistants(r.Context(), body)
	if err != nil {
		return err
	}
	return writePage(h, w, r, page)
}

// countAssistants handles POST /assistants/count.
func (h *handler) countAssistants(w http.ResponseWriter, r *http.Request) error {
	var body graphserver.AssistantSearch
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	n, err := h.srv.CountAssistants(r.Context(), body)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, n)
}

// getAssistant handles GET /assistants/{assistant_id}.
func (h *handler) getAssistant(w http.ResponseWriter, r *http.Request) error {
	a, err := h.srv.GetAssistant(r.Context(), r.PathValue("assistant_id"))
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, a)
}

// updateAssistant handles PATCH /assistants/{assistant_id}.
func (h *handler) updateAssistant(w http.ResponseWriter, r *http.Request) error {
	var body graphserver.AssistantPatch
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	a, err := h.srv.UpdateAssistant(r.Context(), r.PathValue("assistant_id"), body)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, a)
}

// deleteAssistant handles DELETE /assistants/{assistant_id}?delete_threads=.
func (h *handler) deleteAssistant(w http.ResponseWriter, r *http.Request) error {
	deleteThreads, err := queryBool(r, "delete_threads", false)
	if err != nil {
		return err
	}
	if err := h.srv.DeleteAssistant(r.Context(), r.PathValue("assistant_id"), deleteThreads); err != nil {
		return err
	}
	return writeNoContent(w)
}

// listAssistantVersions handles POST /assistants/{assistant_id}/versions.
func (h *handler) listAssistantVersions(w http.ResponseWriter, r *http.Request) error {
	var body graphserver.AssistantVersionSearch
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	versions, err := h.srv.ListAssistantVersions(r.Context(), r.PathValue("assistant_id"), body)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, versions)
}

// latestVersionBody is the body of POST /assistants/{assistant_id}/latest.
type latestVersionBody struct {
	Version *int `json:"version"`
}

// setLatestAssistantVersion handles POST /assistants/{assistant_id}/latest.
// The version comes from the body {"version": n} (what the SDKs send) or the
// version query parameter (what the OpenAPI spec documents).
func (h *handler) setLatestAssistantVersion(w http.ResponseWriter, r *http.Request) error {
	var body latestVersionBody
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	if body.Version == nil {
		v, ok, err := queryInt(r, "version")
		if err != nil {
			return err
		} else if !ok {
			return graphserver.Errorf(graphserver.EINVALID, "version is required")
		}
		body.Version = &v
	}
	a, err := h.srv.SetLatestAssistantVersion(r.Context(), r.PathValue("assistant_id"), *body.Version)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, a)
}
