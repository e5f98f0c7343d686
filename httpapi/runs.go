package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/graphserver/graphserver"
)

// runCreateBody decodes a RunCreate and records the request headers the
// Server copies into config.configurable.
func (h *handler) runCreateBody(w http.ResponseWriter, r *http.Request) (graphserver.RunCreate, error) {
	var body graphserver.RunCreate
	if err := h.decode(w, r, &body); err != nil {
		return body, err
	}
	body.Headers = requestHeaders(r)
	return body, nil
}

// requestHeaders returns the request headers by lower-case name (first
// value of each).
func requestHeaders(r *http.Request) map[string]string {
	out := make(map[string]string, len(r.Header))
	for k, v := range r.Header {
		if len(v) > 0 {
			out[strings.ToLower(k)] = v[0]
		}
	}
	return out
}

// runLocation is the path of a run: /threads/{tid}/runs/{rid}, or
// /runs/{rid} for a stateless run.
func runLocation(threadID, runID string, stateless bool) string {
	if stateless {
		return "/runs/" + runID
	}
	return "/threads/" + threadID + "/runs/" + runID
}

// createRun handles POST /threads/{thread_id}/runs.
func (h *handler) createRun(w http.ResponseWriter, r *http.Request) error {
	return h.createBackgroundRun(w, r, r.PathValue("thread_id"))
}

// createStatelessRun handles POST /runs.
func (h *handler) createStatelessRun(w http.ResponseWriter, r *http.Request) error {
	return h.createBackgroundRun(w, r, "")
}

func (h *handler) createBackgroundRun(w http.ResponseWriter, r *http.Request, threadID string) error {
	body, err := h.runCreateBody(w, r)
	if err != nil {
		return err
	}
	run, err := h.srv.CreateRun(r.Context(), threadID, body)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Location", runLocation(run.ThreadID, run.RunID, threadID == ""))
	return h.writeJSON(w, r, http.StatusOK, run)
}

// streamRun handles POST /threads/{thread_id}/runs/stream.
func (h *handler) streamRun(w http.ResponseWriter, r *http.Request) error {
	return h.createStreamRun(w, r, r.PathValue("thread_id"))
}

// streamStatelessRun handles POST /runs/stream.
func (h *handler) streamStatelessRun(w http.ResponseWriter, r *http.Request) error {
	return h.createStreamRun(w, r, "")
}

func (h *handler) createStreamRun(w http.ResponseWriter, r *http.Request, threadID string) error {
	body, err := h.runCreateBody(w, r)
	if err != nil {
		return err
	}
	st, err := h.srv.StreamRun(r.Context(), threadID, body)
	if err != nil {
		return err
	}
	loc := runLocation(st.Run.ThreadID, st.Run.RunID, threadID == "")
	h.writeSSE(w, r, st.Events, loc, loc+"/stream", true)
	return nil
}

// waitRun handles POST /threads/{thread_id}/runs/wait.
func (h *handler) waitRun(w http.ResponseWriter, r *http.Request) error {
	return h.createWaitRun(w, r, r.PathValue("thread_id"))
}

// waitStatelessRun handles POST /runs/wait.
func (h *handler) waitStatelessRun(w http.ResponseWriter, r *http.Request) error {
	return h.createWaitRun(w, r, "")
}

func (h *handler) createWaitRun(w http.ResponseWriter, r *http.Request, threadID string) error {
	body, err := h.runCreateBody(w, r)
	if err != nil {
		return err
	}
	st, err := h.srv.StreamRun(r.Context(), threadID, body)
	if err != nil {
		return err
	}
	loc := runLocation(st.Run.ThreadID, st.Run.RunID, false)
	h.writeWait(w, r, st.Wait, loc, loc+"/join")
	return nil
}

// createRunBatch handles POST /runs/batch.
func (h *handler) createRunBatch(w http.ResponseWriter, r *http.Request) error {
	var body []graphserver.RunCreate
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	hdr := requestHeaders(r)
	for i := range body {
		body[i].Headers = hdr
	}
	runs, err := h.srv.CreateRunBatch(r.Context(), body)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, runs)
}

// listRuns handles GET /threads/{thread_id}/runs.
func (h *handler) listRuns(w http.ResponseWriter, r *http.Request) error {
	q := graphserver.RunSearch{Status: r.URL.Query().Get("status")}
	var err error
	if q.Limit, _, err = queryInt(r, "limit"); err != nil {
		return err
	}
	if q.Offset, _, err = queryInt(r, "offset"); err != nil {
		return err
	}
	if q.Select, err = queryStrings(r, "select"); err != nil {
		return err
	}
	runs, err := h.srv.ListRuns(r.Context(), r.PathValue("thread_id"), q)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, graphserver.Page[*graphserver.Run]{Items: runs, Select: q.Select})
}

// getRun handles GET /threads/{thread_id}/runs/{run_id}.
func (h *handler) getRun(w http.ResponseWriter, r *http.Request) error {
	run, err := h.srv.GetRun(r.Context(), r.PathValue("thread_id"), r.PathValue("run_id"))
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, run)
}

// deleteRun handles DELETE /threads/{thread_id}/runs/{run_id}.
func (h *handler) deleteRun(w http.ResponseWriter, r *http.Request) error {
	if err := h.srv.DeleteRun(r.Context(), r.PathValue("thread_id"), r.PathValue("run_id")); err != nil {
		return err
	}
	return writeNoContent(w)
}

// cancelRun handles POST /threads/{thread_id}/runs/{run_id}/cancel
// ?wait=&action=: 202 without wait, else the run's final output once it
// ended.
func (h *handler) cancelRun(w http.ResponseWriter, r *http.Request) error {
	wait, err := queryBool(r, "wait", false)
	if err != nil {
		return err
	}
	tid, rid := r.PathValue("thread_id"), r.PathValue("run_id")
	if err := h.srv.CancelRun(r.Context(), tid, rid, r.URL.Query().Get("action")); err != nil {
		return err
	}
	if !wait {
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	st, err := h.srv.JoinRunStream(r.Context(), tid, rid, graphserver.JoinStreamOptions{WaitOnly: true})
	if graphserver.ErrorCode(err) == graphserver.ENOTFOUND {
		return writeNoContent(w) // rolled back: nothing left to show
	} else if err != nil {
		return err
	}
	loc := runLocation(tid, rid, false)
	h.writeWait(w, r, st.Wait, loc, loc+"/join")
	return nil
}

// cancelRuns handles POST /runs/cancel?action=.
func (h *handler) cancelRuns(w http.ResponseWriter, r *http.Request) error {
	var body graphserver.RunCancelSelect
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	if err := h.srv.CancelRuns(r.Context(), body, r.URL.Query().Get("action")); err != nil {
		return err
	}
	return writeNoContent(w)
}

// joinRun handles GET /threads/{thread_id}/runs/{run_id}/join.
func (h *handler) joinRun(w http.ResponseWriter, r *http.Request) error {
	tid, rid := r.PathValue("thread_id"), r.PathValue("run_id")
	st, err := h.srv.JoinRunStream(r.Context(), tid, rid, graphserver.JoinStreamOptions{WaitOnly: true})
	if err != nil {
		return err
	}
	loc := runLocation(tid, rid, false)
	h.writeWait(w, r, st.Wait, loc, loc+"/join")
	return nil
}

// joinRunStream handles GET /threads/{thread_id}/runs/{run_id}/stream and
// GET /runs/{run_id}/stream.
func (h *handler) joinRunStream(w http.ResponseWriter, r *http.Request) error {
	cancelOnDisconnect, err := queryBool(r, "cancel_on_disconnect", false)
	if err != nil {
		return err
	}
	modes, err := queryStrings(r, "stream_mode")
	if err != nil {
		return err
	}
	tid, rid := r.PathValue("thread_id"), r.PathValue("run_id")
	st, err := h.srv.JoinRunStream(r.Context(), tid, rid, graphserver.JoinStreamOptions{
		LastEventID:        r.Header.Get("Last-Event-ID"),
		StreamMode:         modes,
		CancelOnDisconnect: cancelOnDisconnect,
	})
	if err != nil {
		return err
	}
	loc := runLocation(st.Run.ThreadID, rid, false)
	location := loc + "/stream"
	if tid == "" {
		location = "/runs/" + rid + "/stream"
	}
	h.writeSSE(w, r, st.Events, loc, location, false)
	return nil
}

// errorOutput is the final output written when waiting fails after the
// response started.
func errorOutput(err error) json.RawMessage {
	b, _ := json.Marshal(map[string]json.RawMessage{"__error__": errorJSON(err)})
	return b
}
