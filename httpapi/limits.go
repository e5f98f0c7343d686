package httpapi

import (
	"net/http"
	"strconv"

	"github.com/graphserver/graphserver"
)

// MaxStreamsDefault is the default Options.MaxStreams.
const MaxStreamsDefault = 10000

// streamingRoutes hold their connection open while a run goes on: SSE
// streams, waits and joins. Options.MaxStreams bounds how many are open at
// once. (A cancel with wait=1 also waits, but a cancel is never refused:
// it frees capacity.)
var streamingRoutes = map[string]bool{
	"POST /threads/{thread_id}/runs/stream":         true,
	"POST /threads/{thread_id}/runs/wait":           true,
	"GET /threads/{thread_id}/runs/{run_id}/join":   true,
	"GET /threads/{thread_id}/runs/{run_id}/stream": true,
	"POST /runs/stream":                             true,
	"POST /runs/wait":                               true,
	"GET /runs/{run_id}/stream":                     true,
	"GET /threads/{thread_id}/stream":               true,
	"POST /threads/{thread_id}/stream/events":       true,
	"GET /threads/{thread_id}/stream/events":        true,
}

// limitStreams wraps the handler of a streaming route: it takes one of
// Options.MaxStreams slots for as long as the handler runs, and answers
// 503 with Retry-After, before reading the request or creating anything,
// when none is free.
func (h *handler) limitStreams(fn handlerFunc) handlerFunc {
	limit := int64(h.opts.MaxStreams)
	if limit <= 0 {
		return fn
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		if h.streams.Add(1) > limit {
			h.streams.Add(-1)
			return &graphserver.Error{Code: graphserver.EUNAVAILABLE, Headers: map[string]string{"Retry-After": "1"},
				Message: "Too many open streams: the server serves at most " + strconv.FormatInt(limit, 10) + " streams, waits and joins at once. Retry later."}
		}
		defer h.streams.Add(-1)
		return fn(w, r)
	}
}
