// Package httpapi serves a graphserver.Server over the LangGraph Platform
// HTTP API, wire-compatible with the official LangGraph SDKs (JS and Python).
//
// New returns an http.Handler to mount anywhere: at the root of an
// http.ServeMux, or under a prefix with http.StripPrefix. Every route is
// listed in routes.go. Handlers only decode the request, call the Server
// method of the same name, and encode its result; errors are written as
// {"detail": "..."} with the status that errors.go maps from the error code.
//
// Decoding is lenient, as the SDKs need: unknown JSON fields are ignored,
// text/plain bodies are parsed as JSON, an empty body is {}, query booleans
// accept true/false/1/0/yes/no, and query arrays accept repeated keys, comma
// lists and JSON arrays. Request bodies are limited in size (413 beyond).
//
// Limits: routes.go lists what is served; contract routes not listed there
// (MCP and A2A) answer 404.
//
// Access control: when the Server has an Auth (graphserver.Options.Auth),
// every request but those of publicRoutes (/ok, /info, /docs,
// /openapi.json, /metrics, /internal/truncate) is authenticated once, by
// the Auth's Authenticator, before its handler runs; a rejection is
// answered {"detail": message} with the Authenticator's status and headers
// (401 with WWW-Authenticate, typically). The Server methods the handler
// calls then authorize the user found in the request context.
//
// Operations: every request gets an X-Request-Id and one log line (see
// Options.Logger); Options.Metrics adds Prometheus metrics at GET /metrics
// (metrics.go lists the families). GET /openapi.json describes every route
// served (OpenAPI 3.1, from routes_doc.go and the Go types of the bodies),
// and GET /docs renders it in a self-contained page.
package httpapi

import (
	"cmp"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// MaxBodyBytesDefault is the request body limit when Options.MaxBodyBytes is 0.
const MaxBodyBytesDefault = 10 << 20

// Options configures the handler. The zero value is ready to use.
type Options struct {
	// MaxBodyBytes limits the size of a request body; larger bodies are
	// answered with 413. 0 means MaxBodyBytesDefault (10 MiB); -1 means no
	// limit.
	MaxBodyBytes int64

	// MaxStreams bounds the streaming responses open at once: SSE streams
	// (run and thread streams, joins) and /wait and /join responses.
	// Beyond it a streaming request is answered 503 with Retry-After,
	// before anything is created. 0 means MaxStreamsDefault (10,000); -1
	// means no limit.
	MaxStreams int

	// Logger receives one line per request (info level; debug for GET /ok
	// and GET /metrics), panics and internal errors (error level). Default:
	// the Server's logger (graphserver.Options.Logger), so one Logger option
	// covers both packages.
	Logger *slog.Logger

	// CORSOrigins lists the origins allowed to call the API from a browser.
	// nil allows any origin (as the LangGraph JS dev server does); an empty,
	// non-nil slice disables CORS headers. "*" in the list allows any origin.
	CORSOrigins []string

	// Truncate, when set, serves POST /internal/truncate, the test helper
	// of the JS dev server: it cancels the runs in flight when runs or
	// threads are flagged, then empties what the body flags (runs, threads,
	// assistants but the system ones, store, checkpoint or checkpointer)
	// through Truncate, the Server's storage (sqlite.DB implements it).
	// Default nil: the route is not served. Never set it in production.
	Truncate driver.TruncateStorage

	// Metrics serves GET /metrics in the Prometheus text format: HTTP
	// requests by route pattern and status with latencies, runs by status
	// with their durations, the queue depth and wait, streams and
	// subscribers, webhook deliveries and retries, and the storage's
	// grouped writes (metrics.go lists the families, all prefixed
	// graphserver_). New registers an Observer on the Server for it
	// (Server.AddObserver). Default false: no /metrics route.
	Metrics bool

	// MetricsRegistry is the registry Metrics registers its collectors with
	// and /metrics serves, so an embedder can add its own collectors or serve
	// them elsewhere. Default: a new registry, with the Go runtime and
	// process collectors. New panics if the registry already holds these
	// families (two handlers sharing one registry).
	MetricsRegistry *prometheus.Registry

	// HeartbeatInterval is how often SSE streams send ": heartbeat" and
	// /wait and /join responses a keep-alive newline. 0 means
	// HeartbeatIntervalDefault (5 s).
	HeartbeatInterval time.Duration
}

// withDefaults returns a copy of o with defaults applied; srv gives the
// default Logger.
func (o Options) withDefaults(srv *graphserver.Server) Options {
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = MaxBodyBytesDefault
	}
	if o.MaxStreams == 0 {
		o.MaxStreams = MaxStreamsDefault
	}
	o.Logger = cmp.Or(o.Logger, srv.Logger())
	if o.CORSOrigins == nil {
		o.CORSOrigins = []string{"*"}
	} else {
		o.CORSOrigins = append([]string{}, o.CORSOrigins...)
	}
	return o
}

// handler holds what every route handler needs.
type handler struct {
	srv     *graphserver.Server
	opts    Options
	logger  *slog.Logger
	metrics *metrics // nil unless Options.Metrics
	spec    specCache
	streams atomic.Int64  // streaming responses open (limitStreams)
	wsSubs  wsSubRegistry // protocol-v2 WebSocket subscriptions, for subscription.reconnect
}

// New returns an http.Handler serving srv's API. It is safe for concurrent
// use; srv must outlive it. Middleware, outermost first: request id,
// logging and panic recovery, CORS.
func New(srv *graphserver.Server, opts Options) http.Handler {
	opts = opts.withDefaults(srv)
	h := &handler{srv: srv, opts: opts, logger: opts.Logger}
	if opts.Metrics {
		m, err := newMetrics(srv, opts.MetricsRegistry, opts.Logger)
		if err != nil {
			panic("httpapi: Options.MetricsRegistry: " + err.Error())
		}
		h.metrics = m
	}
	mux := http.NewServeMux()
	for _, rt := range h.routes() {
		fn := rt.handle
		if streamingRoutes[rt.pattern] {
			fn = h.limitStreams(fn)
		}
		mux.Handle(rt.pattern, h.adapt(rt.pattern, fn))
	}
	var next http.Handler = h.unmatched(mux)
	next = h.cors(next)
	next = h.instrument(next)
	return next
}

// handlerFunc is the shape of every route handler: it writes the success
// response itself and returns any error for writeError.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// adapt turns a handlerFunc into an http.Handler that records the route
// pattern (for logs and metrics) and writes the handler's error.
//
// With access control on (graphserver.Options.Auth), it first
// authenticates the request (see authenticate), unless the route is one of
// publicRoutes.
func (h *handler) adapt(pattern string, fn handlerFunc) http.Handler {
	params := pathParams(pattern)
	public := publicRoutes[pattern] || !h.srv.AuthEnabled()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setRoute(w, pattern)
		if !public {
			var err error
			if r, err = h.authenticate(r, params); err != nil {
				h.writeError(w, r, err)
				return
			}
		}
		if err := fn(w, r); err != nil {
			h.writeError(w, r, err)
		}
	})
}
