package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/errmap"
)

// ErrorStatusCode returns the HTTP status for an error code; unknown codes
// are 500. The table lives in internal/errmap, which the client package reads
// backwards.
func ErrorStatusCode(code string) int {
	return errmap.Status(code)
}

// errorBody is the JSON body of every error response.
type errorBody struct {
	Detail string `json:"detail"`
}

// writeError writes err as {"detail": message} with the status of its code.
// An *Error carrying its own Status and Headers (an auth rejection) uses
// them. Internal errors are logged with the request id and answered with a
// generic message, never their details.
func (h *handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code, msg := graphserver.ErrorCode(err), graphserver.ErrorMessage(err)
	status := ErrorStatusCode(code)
	var e *graphserver.Error
	if errors.As(err, &e) {
		if e.Status != 0 {
			status = e.Status
		}
		for k, v := range e.Headers {
			w.Header().Set(k, v)
		}
	}
	if code == graphserver.EINTERNAL {
		h.logger.ErrorContext(r.Context(), "internal error",
			slog.String("request_id", requestID(w)),
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Any("err", err))
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	writeDetail(w, status, msg)
}

// writeDetail writes {"detail": msg} with status.
func writeDetail(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(errorBody{Detail: msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
