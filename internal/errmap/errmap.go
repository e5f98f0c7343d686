// Package errmap is the one table between graphserver error codes and HTTP
// statuses. httpapi reads it forwards (a code becomes the response status);
// client reads it backwards (a response status becomes a code), so that
// graphserver.ErrorCode(err) tells the same over HTTP as in-process.
package errmap

import (
	"net/http"

	"github.com/graphserver/graphserver"
)

// codes maps each graphserver error code to its HTTP status.
var codes = map[string]int{
	graphserver.EINVALID:      http.StatusUnprocessableEntity,
	graphserver.EBADREQUEST:   http.StatusBadRequest,
	graphserver.ENOTFOUND:     http.StatusNotFound,
	graphserver.ECONFLICT:     http.StatusConflict,
	graphserver.EBUSY:         http.StatusConflict,
	graphserver.EUNAUTHORIZED: http.StatusUnauthorized,
	graphserver.EFORBIDDEN:    http.StatusForbidden,
	graphserver.EUNAVAILABLE:  http.StatusServiceUnavailable,
	graphserver.EINTERNAL:     http.StatusInternalServerError,
	graphserver.ETOOLARGE:     http.StatusRequestEntityTooLarge,
}

// statuses is codes backwards. Where two codes share a status (ECONFLICT
// and EBUSY are both 409) the general one wins.
var statuses = func() map[int]string {
	m := make(map[int]string, len(codes))
	for code, status := range codes {
		if code != graphserver.EBUSY {
			m[status] = code
		}
	}
	return m
}()

// Status returns the HTTP status for an error code; unknown codes are 500.
func Status(code string) int {
	if s, ok := codes[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Code returns the error code for an HTTP error status: the table's code
// when there is one (409 is ECONFLICT), EUNAVAILABLE for 429, 502 and 504
// (the server or a proxy in front of it cannot serve now), EBADREQUEST for
// any other 4xx (the JS dev server answers validation errors with 400) and
// EINTERNAL for anything else.
func Code(status int) string {
	if c, ok := statuses[status]; ok {
		return c
	}
	switch {
	case status == http.StatusTooManyRequests, status == http.StatusBadGateway, status == http.StatusGatewayTimeout:
		return graphserver.EUNAVAILABLE
	case status >= 400 && status < 500:
		return graphserver.EBADREQUEST
	}
	return graphserver.EINTERNAL
}
