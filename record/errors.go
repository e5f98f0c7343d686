package record

import "fmt"

// Error codes. httpapi maps each to one HTTP status; client maps statuses back.
const (
	EINVALID      = "invalid"      // 422: the request is malformed or fails validation
	EBADREQUEST   = "bad_request"  // 400: the request is well-formed but cannot be served as asked
	ENOTFOUND     = "not_found"    // 404: the resource does not exist or the caller may not see it
	ECONFLICT     = "conflict"     // 409: the resource already exists or is in the wrong state
	EBUSY         = "busy"         // 409: the thread has a run in flight
	EUNAUTHORIZED = "unauthorized" // 401: missing or invalid credentials
	EFORBIDDEN    = "forbidden"    // 403: the caller may not do this
	EUNAVAILABLE  = "unavailable"  // 503: the server is closing or overloaded
	EINTERNAL     = "internal"     // 500: a bug or an infrastructure failure
	ETOOLARGE     = "too_large"    // 413: the request body exceeds the configured limit
)

// Error is the one error type the domain returns. Code says what kind of
// failure it is; Message is written for the API user and is safe to show.
//
// Status and Headers are set only by access-control rejections that carry their
// own HTTP status and response headers (see Auth); they are zero otherwise.
type Error struct {
	Code    string
	Message string
	Status  int
	Headers map[string]string
	// Err is the underlying cause, if any (an authenticator's error, for
	// example); it is never shown to API users.
	Err error
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Error implements the error interface.
func (e *Error) Error() string {
	return fmt.Sprintf("graphserver error: code=%s message=%s", e.Code, e.Message)
}

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
