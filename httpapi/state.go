package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/graphserver/graphserver"
)

// getThreadState handles GET /threads/{thread_id}/state and
// GET /threads/{thread_id}/state/{checkpoint_id}.
func (h *handler) getThreadState(w http.ResponseWriter, r *http.Request) error {
	subgraphs, err := queryBool(r, "subgraphs", false)
	if err != nil {
		return err
	}
	q := graphserver.ThreadStateQuery{Subgraphs: subgraphs}
	if id := r.PathValue("checkpoint_id"); id != "" {
		q.Checkpoint.CheckpointID = &id
	}
	st, err := h.srv.GetThreadState(r.Context(), r.PathValue("thread_id"), q)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, st)
}

// stateCheckpointBody is the body of POST /threads/{thread_id}/state/checkpoint.
type stateCheckpointBody struct {
	Checkpoint *checkpointRef `json:"checkpoint"`
	Subgraphs  bool           `json:"subgraphs"`
}

// getThreadStateAtCheckpoint handles POST /threads/{thread_id}/state/checkpoint.
func (h *handler) getThreadStateAtCheckpoint(w http.ResponseWriter, r *http.Request) error {
	var body stateCheckpointBody
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	if body.Checkpoint == nil {
		return graphserver.Errorf(graphserver.EINVALID, "checkpoint is required")
	}
	st, err := h.srv.GetThreadState(r.Context(), r.PathValue("thread_id"), graphserver.ThreadStateQuery{
		Checkpoint: graphserver.Checkpoint(*body.Checkpoint), Subgraphs: body.Subgraphs,
	})
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, st)
}

// stateUpdateBody is the body of POST /threads/{thread_id}/state.
type stateUpdateBody struct {
	graphserver.ThreadStateUpdate
	Checkpoint *checkpointRef `json:"checkpoint"`
}

// updateThreadState handles POST /threads/{thread_id}/state.
func (h *handler) updateThreadState(w http.ResponseWriter, r *http.Request) error {
	var body stateUpdateBody
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	u := body.ThreadStateUpdate
	if body.Checkpoint != nil {
		cp := graphserver.Checkpoint(*body.Checkpoint)
		u.Checkpoint = &cp
	}
	out, err := h.srv.UpdateThreadState(r.Context(), r.PathValue("thread_id"), u)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, out)
}

// patchThreadState handles PATCH /threads/{thread_id}/state: 204 once
// metadata is merged into the latest checkpoint's.
func (h *handler) patchThreadState(w http.ResponseWriter, r *http.Request) error {
	var body graphserver.ThreadStatePatch
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	if err := h.srv.PatchThreadState(r.Context(), r.PathValue("thread_id"), body); err != nil {
		return err
	}
	return writeNoContent(w)
}

// getThreadHistory handles GET /threads/{thread_id}/history.
func (h *handler) getThreadHistory(w http.ResponseWriter, r *http.Request) error {
	limit, _, err := queryInt(r, "limit")
	if err != nil {
		return err
	}
	hist, err := h.srv.GetThreadHistory(r.Context(), r.PathValue("thread_id"), graphserver.ThreadHistoryQuery{
		Limit: limit, Before: r.URL.Query().Get("before"),
	})
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, hist)
}

// historyBody is the body of POST /threads/{thread_id}/history.
type historyBody struct {
	Limit      int                  `json:"limit"`
	Before     *checkpointRef       `json:"before"`
	Metadata   graphserver.Metadata `json:"metadata"`
	Checkpoint *checkpointRef       `json:"checkpoint"`
}

// postThreadHistory handles POST /threads/{thread_id}/history.
func (h *handler) postThreadHistory(w http.ResponseWriter, r *http.Request) error {
	var body historyBody
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	q := graphserver.ThreadHistoryQuery{Limit: body.Limit, Metadata: body.Metadata}
	if body.Before != nil && body.Before.CheckpointID != nil {
		q.Before = *body.Before.CheckpointID
	}
	if body.Checkpoint != nil {
		q.Checkpoint = graphserver.Checkpoint(*body.Checkpoint)
	}
	hist, err := h.srv.GetThreadHistory(r.Context(), r.PathValue("thread_id"), q)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, hist)
}

// checkpointRef decodes the three ways clients name a checkpoint: a bare id
// string, a flat checkpoint object, or a config {"configurable": {...}}.
type checkpointRef graphserver.Checkpoint

// UnmarshalJSON implements json.Unmarshaler.
func (c *checkpointRef) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var id string
		if err := json.Unmarshal(b, &id); err != nil {
			return err
		}
		c.CheckpointID = &id
		return nil
	}
	var wrapped struct {
		Configurable *graphserver.Checkpoint `json:"configurable"`
	}
	if err := json.Unmarshal(b, &wrapped); err != nil {
		return graphserver.Errorf(graphserver.EINVALID, "Invalid checkpoint: must be a checkpoint id or a checkpoint object")
	}
	if wrapped.Configurable != nil {
		*c = checkpointRef(*wrapped.Configurable)
		return nil
	}
	var flat graphserver.Checkpoint
	if err := json.Unmarshal(b, &flat); err != nil {
		return graphserver.Errorf(graphserver.EINVALID, "Invalid checkpoint: must be a checkpoint id or a checkpoint object")
	}
	*c = checkpointRef(flat)
	return nil
}

// getAssistantGraph handles GET /assistants/{assistant_id}/graph?xray=.
func (h *handler) getAssistantGraph(w http.ResponseWriter, r *http.Request) error {
	xray, err := queryXray(r)
	if err != nil {
		return err
	}
	d, err := h.srv.GetAssistantGraph(r.Context(), r.PathValue("assistant_id"), xray)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, d)
}

// queryXray reads xray: a boolean (true = every level) or a depth.
func queryXray(r *http.Request) (int, error) {
	v := strings.ToLower(r.URL.Query().Get("xray"))
	switch v {
	case "", "false", "0", "no":
		return 0, nil
	case "true", "yes":
		return 1 << 20, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, graphserver.Errorf(graphserver.EINVALID, "Invalid xray %q: must be true, false or a non-negative integer", v)
	}
	return n, nil
}

// getAssistantSchemas handles GET /assistants/{assistant_id}/schemas.
func (h *handler) getAssistantSchemas(w http.ResponseWriter, r *http.Request) error {
	sc, err := h.srv.GetAssistantSchemas(r.Context(), r.PathValue("assistant_id"))
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, sc)
}

// getAssistantSubgraphs handles GET /assistants/{assistant_id}/subgraphs and
// GET /assistants/{assistant_id}/subgraphs/{namespace}.
func (h *handler) getAssistantSubgraphs(w http.ResponseWriter, r *http.Request) error {
	recurse, err := queryBool(r, "recurse", false)
	if err != nil {
		return err
	}
	sg, err := h.srv.GetAssistantSubgraphs(r.Context(), r.PathValue("assistant_id"), r.PathValue("namespace"), recurse)
	if err != nil {
		return err
	}
	return h.writeJSON(w, r, http.StatusOK, sg)
}
