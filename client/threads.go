package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/graphserver/graphserver"
)

// Threads groups the /threads operations.
type Threads struct{ c *Client }

// Create creates a thread (POST /threads).
func (t *Threads) Create(ctx context.Context, body graphserver.ThreadCreate) (*graphserver.Thread, error) {
	var out graphserver.Thread
	return &out, t.c.json(ctx, call{method: http.MethodPost, path: "/threads", body: body}, &out)
}

// Get returns a thread; include "ttl" adds its ttl field (GET
// /threads/{id}).
func (t *Threads) Get(ctx context.Context, id string, include ...string) (*graphserver.Thread, error) {
	q := url.Values{}
	if len(include) > 0 {
		q.Set("include", strings.Join(include, ","))
	}
	var out graphserver.Thread
	return &out, t.c.json(ctx, call{method: http.MethodGet, path: "/threads/" + esc(id), query: q, idempotent: true}, &out)
}

// Update merges metadata into a thread and sets its ttl (PATCH
// /threads/{id}).
func (t *Threads) Update(ctx context.Context, id string, patch graphserver.ThreadPatch) (*graphserver.Thread, error) {
	var out graphserver.Thread
	return &out, t.c.json(ctx, call{method: http.MethodPatch, path: "/threads/" + esc(id), body: patch}, &out)
}

// Delete deletes a thread with its runs and checkpoints (DELETE
// /threads/{id}).
func (t *Threads) Delete(ctx context.Context, id string) error {
	return t.c.json(ctx, call{method: http.MethodDelete, path: "/threads/" + esc(id), idempotent: true}, nil)
}

// Search returns one page of threads (POST /threads/search); see
// Assistants.Search for the page's Next and Total.
func (t *Threads) Search(ctx context.Context, q graphserver.ThreadSearch) (*graphserver.Page[*graphserver.Thread], error) {
	return search[*graphserver.Thread](ctx, t.c, "/threads/search", q, q.Select)
}

// Count counts threads (POST /threads/count).
func (t *Threads) Count(ctx context.Context, q graphserver.ThreadSearch) (int, error) {
	var n int
	return n, t.c.json(ctx, call{method: http.MethodPost, path: "/threads/count", body: q, idempotent: true}, &n)
}

// Copy copies a thread with its checkpoints into a new thread (POST
// /threads/{id}/copy).
func (t *Threads) Copy(ctx context.Context, id string) (*graphserver.Thread, error) {
	var out graphserver.Thread
	return &out, t.c.json(ctx, call{method: http.MethodPost, path: "/threads/" + esc(id) + "/copy"}, &out)
}

// Prune deletes threads, or drops all but their latest checkpoint, and
// returns how many it pruned (POST /threads/prune).
func (t *Threads) Prune(ctx context.Context, p graphserver.ThreadPrune) (int, error) {
	var out struct {
		N int `json:"pruned_count"`
	}
	return out.N, t.c.json(ctx, call{method: http.MethodPost, path: "/threads/prune", body: p}, &out)
}

// GetState returns a thread's state: the latest root state with GET
// /threads/{id}/state, or, when q.Checkpoint names a checkpoint or a
// namespace, POST /threads/{id}/state/checkpoint.
func (t *Threads) GetState(ctx context.Context, id string, q graphserver.ThreadStateQuery) (*graphserver.ThreadState, error) {
	var out graphserver.ThreadState
	cp := q.Checkpoint
	if cp.CheckpointID == nil && cp.CheckpointNS == "" && cp.CheckpointMap == nil {
		query := url.Values{}
		if q.Subgraphs {
			query.Set("subgraphs", "true")
		}
		return &out, t.c.json(ctx, call{method: http.MethodGet, path: "/threads/" + esc(id) + "/state", query: query, idempotent: true}, &out)
	}
	body := map[string]any{"checkpoint": checkpointBody(id, cp), "subgraphs": q.Subgraphs}
	return &out, t.c.json(ctx, call{method: http.MethodPost, path: "/threads/" + esc(id) + "/state/checkpoint", body: body, idempotent: true}, &out)
}

// checkpointBody is the flat checkpoint object both SDKs send, with only
// the fields that are set.
func checkpointBody(threadID string, cp graphserver.Checkpoint) map[string]any {
	m := map[string]any{"thread_id": threadID, "checkpoint_ns": cp.CheckpointNS}
	if cp.ThreadID != "" {
		m["thread_id"] = cp.ThreadID
	}
	if cp.CheckpointID != nil {
		m["checkpoint_id"] = *cp.CheckpointID
	}
	if cp.CheckpointMap != nil {
		m["checkpoint_map"] = cp.CheckpointMap
	}
	return m
}

// UpdateState writes values to a thread as node u.AsNode, forking from
// u.Checkpoint when set (POST /threads/{id}/state).
func (t *Threads) UpdateState(ctx context.Context, id string, u graphserver.ThreadStateUpdate) (*graphserver.ThreadStateUpdateResult, error) {
	body := map[string]any{"values": u.Values}
	if len(u.Values) == 0 {
		body["values"] = nil
	}
	if u.AsNode != "" {
		body["as_node"] = u.AsNode
	}
	if u.Checkpoint != nil {
		body["checkpoint"] = checkpointBody(id, *u.Checkpoint)
	}
	if u.CheckpointID != "" {
		body["checkpoint_id"] = u.CheckpointID
	}
	var out graphserver.ThreadStateUpdateResult
	return &out, t.c.json(ctx, call{method: http.MethodPost, path: "/threads/" + esc(id) + "/state", body: body}, &out)
}

// HistoryLimitDefault is the history page size GetHistory asks for when
// q.Limit is 0 (the SDKs' default; servers differ on theirs).
const HistoryLimitDefault = 10

// GetHistory lists a thread's checkpoints, newest first (POST
// /threads/{id}/history). q.Before is sent as a checkpoint id string, the
// one form every server accepts.
func (t *Threads) GetHistory(ctx context.Context, id string, q graphserver.ThreadHistoryQuery) ([]*graphserver.ThreadState, error) {
	body := map[string]any{"limit": HistoryLimitDefault}
	if q.Limit > 0 {
		body["limit"] = q.Limit
	}
	if q.Before != "" {
		body["before"] = q.Before
	}
	if len(q.Metadata) > 0 {
		body["metadata"] = q.Metadata
	}
	if cp := q.Checkpoint; cp.CheckpointID != nil || cp.CheckpointNS != "" || cp.CheckpointMap != nil {
		body["checkpoint"] = checkpointBody(id, cp)
	}
	var out []*graphserver.ThreadState
	return out, t.c.json(ctx, call{method: http.MethodPost, path: "/threads/" + esc(id) + "/history", body: body, idempotent: true}, &out)
}

// ThreadStreamOptions tunes Threads.JoinStream.
type ThreadStreamOptions struct {
	// StreamMode lists run_modes (the default: every event of every run),
	// lifecycle and state_update.
	StreamMode []string
	// LastEventID replays the thread's events after that id ("-" from the
	// beginning); "" follows live events only.
	LastEventID string
}

// JoinStream follows every run of a thread, and its state updates, for as
// long as ctx lasts (GET /threads/{id}/stream). The iterator can be ranged
// over more than once; each range opens a new stream.
func (t *Threads) JoinStream(ctx context.Context, id string, opts ThreadStreamOptions) iter.Seq2[graphserver.StreamEvent, error] {
	q := url.Values{}
	for _, m := range opts.StreamMode {
		q.Add("stream_mode", m)
	}
	return t.c.stream(ctx, call{method: http.MethodGet, path: "/threads/" + esc(id) + "/stream", query: q, idempotent: true}, streamState{lastID: opts.LastEventID})
}

// PatchState merges metadata into the metadata of the thread's latest
// checkpoint (PATCH /threads/{id}/state, sent by the JS SDK's patchState;
// not every server has the route).
func (t *Threads) PatchState(ctx context.Context, id string, metadata graphserver.Metadata) error {
	return t.c.json(ctx, call{method: http.MethodPatch, path: "/threads/" + esc(id) + "/state", body: map[string]any{"metadata": metadata}}, nil)
}

// itoa formats an int query value.
func itoa(n int) string { return strconv.Itoa(n) }
