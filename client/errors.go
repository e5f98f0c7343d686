package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/errmap"
)

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 1 << 20

// Error is a non-2xx answer. It unwraps to a *graphserver.Error whose Code
// is read from Status through httpapi's status table backwards (409 is
// ECONFLICT, 429/502/504 EUNAVAILABLE, any other 4xx EBADREQUEST), so
// graphserver.ErrorCode and errors.As work on it as on an in-process error.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Detail is the server's message: the "detail" of graphserver's and the
	// Python Platform's JSON bodies ("message" or "error" of other JSON
	// bodies), the text of a plain-text body (the JS dev server's), or the
	// status text when the body is empty.
	Detail string
	// Body is the raw body (up to 1 MiB).
	Body []byte
	// Header holds the answer's headers.
	Header http.Header

	domain *graphserver.Error
}

// Error returns "HTTP <status>: <detail>", as the JS SDK words it.
func (e *Error) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Status, e.Detail) }

// ErrorName names the error as the Python SDK's exception classes do
// (NotFoundError, ConflictError, ...), so that graphserver.ErrorName and a
// run failing on it report a familiar name.
func (e *Error) ErrorName() string {
	switch s := e.Status; {
	case s == http.StatusBadRequest:
		return "BadRequestError"
	case s == http.StatusUnauthorized:
		return "AuthenticationError"
	case s == http.StatusForbidden:
		return "PermissionDeniedError"
	case s == http.StatusNotFound:
		return "NotFoundError"
	case s == http.StatusConflict:
		return "ConflictError"
	case s == http.StatusUnprocessableEntity:
		return "UnprocessableEntityError"
	case s == http.StatusTooManyRequests:
		return "RateLimitError"
	case s >= 500:
		return "InternalServerError"
	}
	return "APIStatusError"
}

// Unwrap returns the *graphserver.Error the status maps to.
func (e *Error) Unwrap() error { return e.domain }

// readError turns a non-2xx answer into an *Error.
func readError(resp *http.Response) *Error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	detail := errorDetail(body)
	if detail == "" {
		detail = http.StatusText(resp.StatusCode)
	}
	return &Error{
		Status: resp.StatusCode,
		Detail: detail,
		Body:   body,
		Header: resp.Header,
		domain: &graphserver.Error{Code: errmap.Code(resp.StatusCode), Message: detail, Status: resp.StatusCode},
	}
}

// errorDetail finds the message of an error body the way the Python SDK
// does: "message", then "detail", then "error" (a string, or an object with
// "message" or "name") of a JSON object; else the body text.
func errorDetail(body []byte) string {
	body = bytes.TrimSpace(body)
	var obj map[string]json.RawMessage
	if len(body) == 0 || body[0] != '{' || json.Unmarshal(body, &obj) != nil {
		return strings.TrimSpace(string(body))
	}
	for _, k := range []string{"message", "detail", "error"} {
		raw, ok := obj[k]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
		var inner struct {
			Message string `json:"message"`
			Name    string `json:"name"`
		}
		if json.Unmarshal(raw, &inner) == nil && (inner.Message != "" || inner.Name != "") {
			if inner.Message != "" {
				return inner.Message
			}
			return inner.Name
		}
		if string(raw) != "null" {
			return string(raw) // a structured detail (validation issues)
		}
	}
	return string(body)
}

// RunError is the failure of a run: the {"error", "message"} of a stream's
// error event, or the "__error__" of a wait or join output. Name is the
// remote exception's class; graphserver.ErrorName reports it. It is
// graphserver.RunFailedError, the error Server.WaitRun returns in-process,
// so one errors.As target serves a program whether it embeds the server or
// calls it; the client leaves RunID and ThreadID empty, and Error returns
// "<Name>: <Message>", as the SDKs word it.
type RunError = graphserver.RunFailedError

// runError decodes the data of an error event: {"error", "message"}, that
// object JSON-encoded in a string or in the message (the JS dev server's
// wait output), or a bare string (the JS dev server's "Run not found").
func runError(data json.RawMessage) *RunError {
	var e RunError
	if json.Unmarshal(data, &e) == nil && (e.Name != "" || e.Message != "") {
		if e.Name == "" {
			e.Name = "Error"
		}
		// the JS dev server's wait output puts the whole error object,
		// JSON-encoded, in the message
		var inner RunError
		if m := []byte(e.Message); bytes.HasPrefix(m, []byte("{")) && json.Unmarshal(m, &inner) == nil && inner.Message != "" {
			e.Message = inner.Message
			if inner.Name != "" {
				e.Name = inner.Name
			}
		}
		return &e
	}
	var s string
	if json.Unmarshal(data, &s) == nil {
		// the JS dev server's wait output holds the error event's data
		// JSON-encoded once more
		if inner := []byte(s); json.Valid(inner) && bytes.HasPrefix(bytes.TrimSpace(inner), []byte("{")) {
			return runError(inner)
		}
		return &RunError{Name: "Error", Message: s}
	}
	return &RunError{Name: "Error", Message: string(data)}
}

// OutputError returns the *RunError of a wait or join output
// ({"__error__": {"error", "message"}}), or nil when the run did not fail.
func OutputError(out json.RawMessage) error {
	var v struct {
		Err json.RawMessage `json:"__error__"`
	}
	if bytes.HasPrefix(bytes.TrimSpace(out), []byte("{")) && json.Unmarshal(out, &v) == nil && len(v.Err) > 0 && string(v.Err) != "null" {
		return runError(v.Err)
	}
	return nil
}
