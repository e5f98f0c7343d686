package httpapi

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// statusWriter is the ResponseWriter instrument hands down the chain: it
// records the status the handler writes and carries what instrument knows
// of the request, its id and the route pattern that served it (set by the
// route adapter). It is found from any writer wrapping it (Unwrap), so the
// request needs no context of its own for it. Unwrap also lets
// http.ResponseController reach the underlying writer (to flush streams).
type statusWriter struct {
	http.ResponseWriter
	status int
	id     string // request id (X-Request-Id)
	route  string // path pattern, e.g. /threads/{thread_id}; "" if no route matched
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// requestWriter returns the statusWriter of instrument that w is or wraps,
// or nil.
func requestWriter(w http.ResponseWriter) *statusWriter {
	for {
		switch x := w.(type) {
		case *statusWriter:
			return x
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return nil
		}
	}
}

// requestID returns the id instrument gave the request answered through w,
// or "".
func requestID(w http.ResponseWriter) string {
	if sw := requestWriter(w); sw != nil {
		return sw.id
	}
	return ""
}

// setRoute records the route pattern (method and path) serving the request
// answered through w.
func setRoute(w http.ResponseWriter, pattern string) {
	if sw := requestWriter(w); sw != nil {
		_, sw.route, _ = strings.Cut(pattern, " ")
	}
}

// preflightRoute is the route logs and metrics give CORS preflights, which
// the cors middleware answers before any route.
const preflightRoute = "OPTIONS (preflight)"

// maxRequestIDLen bounds a client's X-Request-Id; a longer one is replaced.
const maxRequestIDLen = 200

// validRequestID reports whether a client's X-Request-Id is kept: 1 to
// maxRequestIDLen printable ASCII characters without spaces.
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

// quietRoutes are logged at debug level rather than info: health checks and
// scrapes that would drown the other lines.
var quietRoutes = map[string]bool{"GET /ok": true, "GET /metrics": true}

// instrument gives every request an id (the client's X-Request-Id when it
// is valid, else a new UUID) and echoes it in the X-Request-Id response
// header. It turns a panicking handler into a 500 {"detail": ...} (if the
// response has not started yet) and logs the panic with its stack and the
// request id; http.ErrAbortHandler is re-raised, as net/http expects. When
// the request is done it logs one line ("request": method, route, path,
// status, duration, request_id) at info level (debug for quietRoutes).
func (h *handler) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = uuid.NewString()
		}
		w.Header().Set("X-Request-Id", id)
		sw := &statusWriter{ResponseWriter: w, id: id}
		start := time.Now()
		defer func() {
			v := recover()
			if v != nil && v != http.ErrAbortHandler {
				h.logPanic(sw, r, v)
				if sw.status == 0 {
					writeDetail(sw, http.StatusInternalServerError, "Internal error.")
				}
			}
			h.logRequest(sw, r, time.Since(start))
			if v == http.ErrAbortHandler {
				panic(v)
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

// logRequest records a request that took took: its metrics, and its log
// line when the logger keeps it.
func (h *handler) logRequest(sw *statusWriter, r *http.Request, took time.Duration) {
	status := cmp.Or(sw.status, http.StatusOK) // net/http answers 200 when nothing was written
	h.metrics.observeRequest(r.Method, sw.route, status, took)
	level := slog.LevelInfo
	if quietRoutes[r.Method+" "+sw.route] {
		level = slog.LevelDebug
	}
	if !h.logger.Enabled(r.Context(), level) {
		return
	}
	h.logger.LogAttrs(r.Context(), level, "request",
		slog.String("method", r.Method), slog.String("route", sw.route),
		slog.String("path", r.URL.Path), slog.Int("status", status),
		slog.Duration("duration", took), slog.String("request_id", sw.id))
}

// logPanic logs a panic recovered while serving r (answered through w),
// with its stack and the request id.
func (h *handler) logPanic(w http.ResponseWriter, r *http.Request, v any) {
	h.logger.ErrorContext(r.Context(), "panic serving request",
		slog.String("request_id", requestID(w)),
		slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.String("panic", fmt.Sprint(v)), slog.String("stack", string(debug.Stack())))
}

// exposedHeaders are the response headers browsers may read: run locations and
// pagination.
const exposedHeaders = "Content-Location, Location, X-Pagination-Next, X-Pagination-Total, X-Request-Id"

// cors answers CORS preflight requests and adds CORS headers for the
// origins in Options.CORSOrigins.
func (h *handler) cors(next http.Handler) http.Handler {
	anyOrigin := slices.Contains(h.opts.CORSOrigins, "*")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || !(anyOrigin || slices.Contains(h.opts.CORSOrigins, origin)) {
			next.ServeHTTP(w, r)
			return
		}
		hd := w.Header()
		if anyOrigin {
			hd.Set("Access-Control-Allow-Origin", "*")
		} else {
			hd.Set("Access-Control-Allow-Origin", origin)
			hd.Add("Vary", "Origin")
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			setRoute(w, preflightRoute)
			hd.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
			if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
				hd.Set("Access-Control-Allow-Headers", req)
			}
			hd.Set("Access-Control-Max-Age", "86400")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		hd.Set("Access-Control-Expose-Headers", exposedHeaders)
		next.ServeHTTP(w, r)
	})
}

// unmatched answers requests no route matches with JSON errors: 404 for an
// unknown path, 405 (with the Allow header ServeMux sets) for a known path
// with another method.
func (h *handler) unmatched(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fallback, pattern := mux.Handler(r)
		if pattern != "" { // a route, or a redirect to a cleaned path
			mux.ServeHTTP(w, r)
			return
		}
		// ServeMux's own 404/405 handler: keep its status and Allow header,
		// replace its text body with {"detail": ...}.
		cw := &captureWriter{header: http.Header{}, status: http.StatusNotFound}
		fallback.ServeHTTP(cw, r)
		if allow := cw.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		writeDetail(w, cw.status, http.StatusText(cw.status))
	})
}

// captureWriter records the status and headers of a response and discards
// its body.
type captureWriter struct {
	header http.Header
	status int
}

func (c *captureWriter) Header() http.Header         { return c.header }
func (c *captureWriter) WriteHeader(code int)        { c.status = code }
func (c *captureWriter) Write(b []byte) (int, error) { return len(b), nil }
