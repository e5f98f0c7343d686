package httpapi

import (
	"net/http"

	"github.com/graphserver/graphserver"
)

// createThreadCron handles POST /threads/{thread_id}/runs/crons.
func (h *handler) createThreadCron(w http.ResponseWriter, r *http.Request) error {
	return h.createCronOn(w, r, r.PathValue("thread_id"))
}

// createCron handles POST /runs/crons: a stateless cron.
func (h *handler) createCron(w http.ResponseWriter, r *http.Request) error {
	return h.createCronOn(w, r, "")
}

// createCronOn creates a cron on threadID ("" for a stateless cron).
func (h *handler) createCronOn(w http.ResponseWriter, r *http.Request, threadID string) error {
	var body graphserver.CronCreate
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	c, err := h.srv.CreateCron(r.Context(), threadID, body)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, c)
}

// updateCron handles PATCH /runs/crons/{cron_id}.
func (h *handler) updateCron(w http.ResponseWriter, r *http.Request) error {
	var body graphserver.CronPatch
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	c, err := h.srv.UpdateCron(r.Context(), r.PathValue("cron_id"), body)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, c)
}

// deleteCron handles DELETE /runs/crons/{cron_id}.
func (h *handler) deleteCron(w http.ResponseWriter, r *http.Request) error {
	if err := h.srv.DeleteCron(r.Context(), r.PathValue("cron_id")); err != nil {
		return err
	}
	return writeNoContent(w)
}

// searchCrons handles POST /runs/crons/search.
func (h *handler) searchCrons(w http.ResponseWriter, r *http.Request) error {
	var body graphserver.CronSearch
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	page, err := h.srv.SearchCrons(r.Context(), body)
	if err != nil {
		return err
	}
	return writePage(h, w, r, page)
}

// countCrons handles POST /runs/crons/count.
func (h *handler) countCrons(w http.ResponseWriter, r *http.Request) error {
	var body graphserver.CronSearch
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	n, err := h.srv.CountCrons(r.Context(), body)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, n)
}
