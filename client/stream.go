package client

import (
	"context"
	"errors"
	"io"
	"iter"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/sse"
)

// streamState is what one stream call starts from.
type streamState struct {
	// lastID is sent as Last-Event-ID on the first request, if set.
	lastID string
	// onCreated is told the run named by the first answer's
	// Content-Location.
	onCreated func(runID, threadID string)
	// once makes the iterator single-use (it creates a run).
	once *atomic.Bool
}

// errConsumed is yielded by a run-creating stream ranged over twice.
var errConsumed = errors.New("client: this run stream was already consumed; call Runs.Stream again to create another run")

// stream sends cl and iterates over the events of its SSE answer,
// reconnecting after a broken connection (see the package comment).
func (c *Client) stream(ctx context.Context, cl call, st streamState) iter.Seq2[graphserver.StreamEvent, error] {
	return func(yield func(graphserver.StreamEvent, error) bool) {
		if st.once != nil && !st.once.CompareAndSwap(false, true) {
			yield(graphserver.StreamEvent{}, errConsumed)
			return
		}
		cl.long, cl.stream = true, true
		var (
			lastID    = st.lastID // id of the last event delivered (or to resume after)
			delivered int         // events delivered
			failures  int         // reconnections since the last event
			reconnect string      // where to reconnect
			first     = true
		)
		if cl.method == http.MethodGet {
			reconnect = "self"
		}
		cur := cl
		for {
			if lastID != "" {
				cur.header = withHeader(cur.header, "Last-Event-ID", lastID)
			}
			resp, err := c.open(ctx, cur)
			if err != nil {
				if !first && isNetError(err) && failures < c.reconnects {
					failures++
					if err := sleep(ctx, c.delay(failures-1, 0)); err != nil {
						yield(graphserver.StreamEvent{}, err)
						return
					}
					continue
				}
				yield(graphserver.StreamEvent{}, err)
				return
			}
			if first && st.onCreated != nil {
				if runID, threadID := parseRunLocation(resp.Header.Get("Content-Location")); runID != "" {
					st.onCreated(runID, threadID)
				}
			}
			if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
				resp.Body.Close()
				yield(graphserver.StreamEvent{}, &netError{op: cl.method + " " + cl.path, err: errors.New("expected a text/event-stream answer, got " + resp.Header.Get("Content-Type"))})
				return
			}
			if loc := reconnectURL(resp.Header, "/stream"); loc != "" {
				reconnect = loc
			}
			resumed := !first && lastID != ""
			first = false

			dec := sse.NewDecoder(resp.Body, 0)
			for {
				ev, rerr := dec.Next()
				if rerr != nil {
					err = rerr
					break
				}
				if resumed && ev.ID == lastID {
					continue // servers that resume inclusively re-send the last event
				}
				resumed = false
				if ev.ID != "" {
					lastID = ev.ID
				}
				delivered++
				failures = 0
				if !yield(graphserver.StreamEvent{ID: ev.ID, Event: ev.Event, Data: ev.Data}, nil) {
					resp.Body.Close()
					return
				}
			}
			resp.Body.Close()
			if err == io.EOF {
				return
			}
			if ctx.Err() != nil {
				yield(graphserver.StreamEvent{}, context.Cause(ctx))
				return
			}
			// A broken connection. Events without ids cannot be resumed
			// after without repeating them.
			if reconnect == "" || failures >= c.reconnects || errors.Is(err, sse.ErrFrameTooLarge) || (lastID == "" && delivered > 0) {
				yield(graphserver.StreamEvent{}, &netError{op: cl.method + " " + cl.path, err: err})
				return
			}
			failures++
			if reconnect != "self" {
				u, rerr := c.resolve(reconnect)
				if rerr != nil {
					yield(graphserver.StreamEvent{}, rerr)
					return
				}
				cur = call{method: http.MethodGet, url: u, idempotent: true, long: true, stream: true, header: cl.header}
			}
			if failures > 1 {
				if err := sleep(ctx, c.delay(failures-2, 0)); err != nil {
					yield(graphserver.StreamEvent{}, err)
					return
				}
			}
		}
	}
}

// open sends cl, retrying as the retry rules allow, and returns a 2xx
// answer with its body open (the caller closes it). It applies no timeout.
func (c *Client) open(ctx context.Context, cl call) (*http.Response, error) {
	body, err := encode(cl.body)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		resp, err := c.send(ctx, cl, body)
		var wait time.Duration
		if err == nil {
			if resp.StatusCode < 300 {
				return resp, nil
			}
			wait = retryAfter(resp.Header)
			err = readError(resp)
			resp.Body.Close()
		}
		if !cl.idempotent || attempt >= c.retries || !retryable(ctx, err) {
			return nil, err
		}
		if err := sleep(ctx, c.delay(attempt, wait)); err != nil {
			return nil, err
		}
	}
}

// withHeader returns a copy of h with k set to v.
func withHeader(h map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(h)+1)
	for hk, hv := range h {
		out[hk] = hv
	}
	out[k] = v
	return out
}

// reconnectURL is where to reconnect a broken run stream (suffix "/stream")
// or wait (suffix "/join"): the Location header, else Content-Location plus
// the suffix when it names a thread run, or a stateless run for a stream
// (the JS dev server sets no Location). "" when neither header helps.
func reconnectURL(h http.Header, suffix string) string {
	if loc := h.Get("Location"); loc != "" {
		return loc
	}
	cl := h.Get("Content-Location")
	runID, threadID := parseRunLocation(cl)
	if runID == "" || (threadID == "" && suffix != "/stream") {
		return ""
	}
	if u, err := url.Parse(cl); err == nil {
		u.Path = strings.TrimRight(u.Path, "/") + suffix
		return u.String()
	}
	return ""
}

// parseRunLocation reads the run and thread ids of a Content-Location:
// [.../threads/<thread_id>]/runs/<run_id>.
func parseRunLocation(loc string) (runID, threadID string) {
	u, err := url.Parse(loc)
	if err != nil || loc == "" {
		return "", ""
	}
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	for i := len(segs) - 2; i >= 0; i-- {
		if segs[i] != "runs" {
			continue
		}
		runID = segs[i+1]
		if i >= 2 && segs[i-2] == "threads" {
			threadID = segs[i-1]
		}
		return unescape(runID), unescape(threadID)
	}
	return "", ""
}

func unescape(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// RunErrorOf returns the *RunError an "error" event carries, or nil for any
// other event.
func RunErrorOf(ev graphserver.StreamEvent) error {
	if ev.Event != "error" {
		return nil
	}
	return runError(ev.Data)
}
