package graphserver

import (
	"errors"
	"fmt"

	"github.com/graphserver/graphserver/record"
)

// Error codes. httpapi maps each to one HTTP status; client maps statuses back.
const (
	EINVALID      = record.EINVALID      // 422: the request is malformed or fails validation
	EBADREQUEST   = record.EBADREQUEST   // 400: the request is well-formed but cannot be served as asked
	ENOTFOUND     = record.ENOTFOUND     // 404: the resource does not exist or the caller may not see it
	ECONFLICT     = record.ECONFLICT     // 409: the resource already exists or is in the wrong state
	EBUSY         = record.EBUSY         // 409: the thread has a run in flight
	EUNAUTHORIZED = record.EUNAUTHORIZED // 401: missing or invalid credentials
	EFORBIDDEN    = record.EFORBIDDEN    // 403: the caller may not do this
	EUNAVAILABLE  = record.EUNAVAILABLE  // 503: the server is closing or overloaded
	EINTERNAL     = record.EINTERNAL     // 500: a bug or an infrastructure failure
	ETOOLARGE     = record.ETOOLARGE     // 413: the request body exceeds the configured limit
)

// Error is the one error type the domain returns. Code says what kind of
// failure it is; Message is written for the API user and is safe to show.
//
// Status and Headers are set only by access-control rejections that carry their
// own HTTP status and response headers (see Auth); they are zero otherwise.
type Error = record.Error

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the *Error found in err's chain, EINTERNAL for
// any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return "" // before e, which errors.As moves to the heap
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the user-facing message of the *Error found in err's
// chain, "Internal error." for any other non-nil error, and "" for nil.
func ErrorMessage(err error) string {
	if err == nil {
		return "" // before e, which errors.As moves to the heap
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "Internal error."
}
