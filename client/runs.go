package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"

	"github.com/graphserver/graphserver"
)

// Runs groups the run operations. A threadID of "" selects the stateless
// endpoints (POST /runs, /runs/stream, /runs/wait), which run on a
// temporary thread.
//
// The run-creating requests (Create, CreateBatch, Stream, Wait) are never
// retried: repeating one could start the run twice. rc.Headers, when set,
// go out as request headers (the server copies x-* ones into the run's
// config.configurable).
type Runs struct{ c *Client }

// runsPath is /threads/{id}/runs, or /runs for a stateless run.
func runsPath(threadID string) string {
	if threadID == "" {
		return "/runs"
	}
	return "/threads/" + esc(threadID) + "/runs"
}

// Create creates a background run (POST /threads/{id}/runs or /runs).
func (r *Runs) Create(ctx context.Context, threadID string, rc graphserver.RunCreate) (*graphserver.Run, error) {
	var out graphserver.Run
	return &out, r.c.json(ctx, call{method: http.MethodPost, path: runsPath(threadID), body: rc, header: rc.Headers}, &out)
}

// CreateBatch creates stateless background runs (POST /runs/batch).
func (r *Runs) CreateBatch(ctx context.Context, rcs []graphserver.RunCreate) ([]*graphserver.Run, error) {
	var out []*graphserver.Run
	return out, r.c.json(ctx, call{method: http.MethodPost, path: "/runs/batch", body: rcs}, &out)
}

// StreamOptions tunes Runs.Stream.
type StreamOptions struct {
	// OnRunCreated, when set, is called once the server created the run,
	// with the run and thread ids its Content-Location names (threadID is
	// "" for a stateless run on the JS dev server), before the first event.
	OnRunCreated func(runID, threadID string)
}

// Stream creates a run and streams its events (POST
// /threads/{id}/runs/stream or /runs/stream): metadata first, then one
// event per stream part ("values", "updates", "messages", "mode|ns" for
// subgraphs, ...), then possibly an "error" event, until the run ends. The
// request is sent when the iterator is ranged over; a creation error (404,
// 409, 422, ...) is its first and only element. Breaking out of the range
// closes the connection (with rc.OnDisconnect "cancel", that cancels the
// run). The iterator creates one run: ranging over it again yields an
// error.
//
// An "error" event is delivered as an event; RunErrorOf turns it into a
// *RunError.
func (r *Runs) Stream(ctx context.Context, threadID string, rc graphserver.RunCreate, opts StreamOptions) iter.Seq2[graphserver.StreamEvent, error] {
	cl := call{method: http.MethodPost, path: runsPath(threadID) + "/stream", body: rc, header: rc.Headers}
	return r.c.stream(ctx, cl, streamState{onCreated: opts.OnRunCreated, once: new(atomic.Bool)})
}

// Wait creates a run, waits for it to end and returns its final output
// (POST /threads/{id}/runs/wait or /runs/wait): the last values, the
// interrupt chunk, or {"__error__": ...}. When the run failed, the output
// is returned with a *RunError. If the connection breaks while waiting,
// Wait joins the run through the answer's Location instead of creating
// another.
func (r *Runs) Wait(ctx context.Context, threadID string, rc graphserver.RunCreate) (json.RawMessage, error) {
	var out json.RawMessage
	hdr, err := r.c.do(ctx, call{method: http.MethodPost, path: runsPath(threadID) + "/wait", body: rc, header: rc.Headers, long: true}, func(resp *http.Response) error {
		return decodeBody(resp, &out)
	})
	if err != nil && isNetError(err) && hdr != nil {
		if loc := reconnectURL(hdr, "/join"); loc != "" && r.c.reconnects > 0 {
			out, err = r.c.waitAt(ctx, loc)
		}
	}
	if err != nil {
		return nil, err
	}
	return out, OutputError(out)
}

// Get returns a run (GET /threads/{id}/runs/{run_id}).
func (r *Runs) Get(ctx context.Context, threadID, runID string) (*graphserver.Run, error) {
	var out graphserver.Run
	return &out, r.c.json(ctx, call{method: http.MethodGet, path: runsPath(threadID) + "/" + esc(runID), idempotent: true}, &out)
}

// List lists a thread's runs, newest first (GET /threads/{id}/runs).
func (r *Runs) List(ctx context.Context, threadID string, q graphserver.RunSearch) ([]*graphserver.Run, error) {
	query := url.Values{}
	if q.Limit > 0 {
		query.Set("limit", itoa(q.Limit))
	}
	if q.Offset > 0 {
		query.Set("offset", itoa(q.Offset))
	}
	if q.Status != "" {
		query.Set("status", q.Status)
	}
	for _, s := range q.Select {
		query.Add("select", s)
	}
	var out []*graphserver.Run
	return out, r.c.json(ctx, call{method: http.MethodGet, path: runsPath(threadID), query: query, idempotent: true}, &out)
}

// Delete deletes a run and the checkpoints it wrote (DELETE
// /threads/{id}/runs/{run_id}).
func (r *Runs) Delete(ctx context.Context, threadID, runID string) error {
	return r.c.json(ctx, call{method: http.MethodDelete, path: runsPath(threadID) + "/" + esc(runID), idempotent: true}, nil)
}

// CancelOptions tunes Runs.Cancel.
type CancelOptions struct {
	// Action is interrupt (the default: stop, keep checkpoints) or rollback
	// (stop and delete the run with its checkpoints).
	Action string
	// Wait blocks until the run ended and returns its final output (nil
	// when it was rolled back or the server sends none).
	Wait bool
}

// Cancel cancels a run (POST /threads/{id}/runs/{run_id}/cancel).
func (r *Runs) Cancel(ctx context.Context, threadID, runID string, opts CancelOptions) (json.RawMessage, error) {
	q := url.Values{}
	if opts.Wait {
		q.Set("wait", "true")
	}
	if opts.Action != "" {
		q.Set("action", opts.Action)
	}
	var out json.RawMessage
	err := r.c.json(ctx, call{method: http.MethodPost, path: runsPath(threadID) + "/" + esc(runID) + "/cancel", query: q, long: opts.Wait}, &out)
	return out, err
}

// CancelMany cancels the runs sel selects — a thread's runs by id, or every
// pending, running or active run — with action interrupt (the default, "")
// or rollback (POST /runs/cancel).
func (r *Runs) CancelMany(ctx context.Context, sel graphserver.RunCancelSelect, action string) error {
	q := url.Values{}
	if action != "" {
		q.Set("action", action)
	}
	return r.c.json(ctx, call{method: http.MethodPost, path: "/runs/cancel", query: q, body: sel}, nil)
}

// Join waits for a run to end and returns its final output (GET
// /threads/{id}/runs/{run_id}/join); a failed run's output comes with a
// *RunError.
func (r *Runs) Join(ctx context.Context, threadID, runID string) (json.RawMessage, error) {
	out, err := r.c.wait(ctx, call{method: http.MethodGet, path: runsPath(threadID) + "/" + esc(runID) + "/join", idempotent: true, long: true})
	if err != nil {
		return nil, err
	}
	return out, OutputError(out)
}

// JoinStream streams a run's events after opts.LastEventID ("-1" or "" from
// the start on graphserver; the Python Platform sends only live events
// without one), then live ones until the run ends (GET
// /threads/{id}/runs/{run_id}/stream, or /runs/{run_id}/stream when
// threadID is ""). opts.StreamMode filters by mode; with
// opts.CancelOnDisconnect, leaving the range early cancels the run.
func (r *Runs) JoinStream(ctx context.Context, threadID, runID string, opts graphserver.JoinStreamOptions) iter.Seq2[graphserver.StreamEvent, error] {
	q := url.Values{}
	for _, m := range opts.StreamMode {
		q.Add("stream_mode", m)
	}
	if opts.CancelOnDisconnect {
		q.Set("cancel_on_disconnect", strconv.FormatBool(true))
	}
	cl := call{method: http.MethodGet, path: runsPath(threadID) + "/" + esc(runID) + "/stream", query: q, idempotent: true}
	return r.c.stream(ctx, cl, streamState{lastID: opts.LastEventID})
}

// wait sends a join-like request and returns its JSON output.
func (c *Client) wait(ctx context.Context, cl call) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.json(ctx, cl, &out)
	return out, err
}

// waitAt joins a run at a join Location.
func (c *Client) waitAt(ctx context.Context, loc string) (json.RawMessage, error) {
	u, err := c.resolve(loc)
	if err != nil {
		return nil, err
	}
	return c.wait(ctx, call{method: http.MethodGet, url: u, idempotent: true, long: true})
}
