package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"net/http"

	"github.com/graphserver/graphserver"
)

// commandReply is a protocol-v2 command's answer: {type: "success", id,
// result, meta: {applied_through_seq}} or {type: "error", id, error,
// message}. Error replies also carry detail (the API's error body), and
// the HTTP status of the error.
type commandReply struct {
	Type    string       `json:"type"`
	ID      *int64       `json:"id"`
	Result  any          `json:"result,omitempty"`
	Meta    *commandMeta `json:"meta,omitempty"`
	Error   string       `json:"error,omitempty"`
	Message string       `json:"message,omitempty"`
	Detail  string       `json:"detail,omitempty"`
	status  int          // HTTP status
}

type commandMeta struct {
	AppliedThroughSeq int64 `json:"applied_through_seq"`
}

// runCommand executes one command and makes its reply; requestID is the
// id of the request (or WebSocket) that sent it, for the log.
func (h *handler) runCommand(ctx context.Context, requestID, threadID string, cmd graphserver.ThreadCommand) commandReply {
	res, err := h.srv.ThreadCommand(ctx, threadID, cmd)
	if err != nil {
		if graphserver.ErrorCode(err) == graphserver.EINTERNAL {
			h.logger.ErrorContext(ctx, "internal error", slog.String("request_id", requestID), slog.String("command", cmd.Method), slog.Any("err", err))
		}
		msg := graphserver.ErrorMessage(err)
		status := ErrorStatusCode(graphserver.ErrorCode(err))
		var e *graphserver.Error
		if errors.As(err, &e) && e.Status != 0 {
			status = e.Status
		}
		return commandReply{Type: "error", ID: cmd.ID, Error: graphserver.CommandErrorCode(err), Message: msg, Detail: msg, status: status}
	}
	result := res.Result
	if result == nil {
		result = map[string]any{}
	}
	return commandReply{Type: "success", ID: cmd.ID, Result: result, Meta: &commandMeta{AppliedThroughSeq: res.AppliedThroughSeq}, status: http.StatusOK}
}

// threadCommand handles POST /threads/{thread_id}/commands: one protocol-v2
// command {id, method, params}, answered with its reply. A body that is no
// command (not an object, no id) is refused with {"detail"}; a command
// that fails is answered with an error reply and the status of its error.
func (h *handler) threadCommand(w http.ResponseWriter, r *http.Request) error {
	var cmd graphserver.ThreadCommand
	if err := h.decode(w, r, &cmd); err != nil {
		return err
	}
	if cmd.ID == nil {
		return graphserver.Errorf(graphserver.EINVALID, "A command needs an integer id.")
	}
	if *cmd.ID < 0 {
		return graphserver.Errorf(graphserver.EINVALID, "A command id is 0 or more.")
	}
	if cmd.Method == "" {
		return graphserver.Errorf(graphserver.EINVALID, "A command needs a method.")
	}
	rep := h.runCommand(r.Context(), requestID(w), r.PathValue("thread_id"), cmd)
	return h.writeJSON(w, r, rep.status, rep)
}

// threadEvents handles POST /threads/{thread_id}/stream/events: the
// thread's protocol-v2 events as SSE (each frame's data is the event JSON,
// its id the event id and its name the method), filtered by the body
// {channels, namespaces?, depth?, since?}. The thread need not exist yet;
// the stream stays open across runs until the client leaves.
func (h *handler) threadEvents(w http.ResponseWriter, r *http.Request) error {
	var req graphserver.ThreadEventsRequest
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	st, err := h.srv.SubscribeThreadEvents(r.Context(), r.PathValue("thread_id"), req)
	if err != nil {
		return err
	}
	h.writeSSE(w, r, func(ctx context.Context) iter.Seq2[graphserver.StreamEvent, error] {
		return func(yield func(graphserver.StreamEvent, error) bool) {
			for ev, err := range st.Events(ctx) {
				if err != nil {
					yield(graphserver.StreamEvent{}, err)
					return
				}
				b, _ := json.Marshal(ev)
				if !yield(graphserver.StreamEvent{ID: ev.EventID, Event: ev.Method, Data: b}, nil) {
					return
				}
			}
		}
	}, "", r.URL.RequestURI(), false)
	return nil
}
