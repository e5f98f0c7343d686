package httpapi

import (
	"net/http"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// truncateRequest is the body of POST /internal/truncate; the JS dev server
// names the checkpoint flag "checkpointer", the Python one "checkpoint".
type truncateRequest struct {
	Runs         bool `json:"runs"`
	Threads      bool `json:"threads"`
	Assistants   bool `json:"assistants"`
	Checkpoint   bool `json:"checkpoint"`
	Checkpointer bool `json:"checkpointer"`
	Store        bool `json:"store"`
}

// truncate answers POST /internal/truncate (served only with
// Options.Truncate): it cancels the runs in flight when runs or threads go,
// empties what the body flags and answers {"ok": true}.
func (h *handler) truncate(w http.ResponseWriter, r *http.Request) error {
	var req truncateRequest
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	opts := driver.TruncateOptions{
		Runs:       req.Runs,
		Threads:    req.Threads,
		Assistants: req.Assistants,
		// The system assistants stay, as in the LangGraph servers.
		KeepAssistants: graphserver.SystemAssistantFilter(),
		Checkpoints:    req.Checkpoint || req.Checkpointer,
		Store:          req.Store,
	}
	if opts.Runs || opts.Threads {
		err := h.srv.CancelRuns(r.Context(), graphserver.RunCancelSelect{Status: "all"}, graphserver.CancelInterrupt)
		if err != nil && graphserver.ErrorCode(err) != graphserver.ENOTFOUND {
			return err
		}
	}
	if err := h.opts.Truncate.Truncate(r.Context(), opts); err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, okResponse{OK: true})
}
