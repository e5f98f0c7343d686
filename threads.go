package graphserver

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/graphserver/graphserver/record"
)

// Thread statuses.
const (
	ThreadIdle        = "idle"
	ThreadBusy        = "busy"
	ThreadInterrupted = "interrupted"
	ThreadError       = "error"
)

// Thread holds persistent graph state: a chain of checkpoints, and a summary
// of the latest one (Values, Interrupts, Status) kept for cheap reads and search.
type Thread = record.Thread

// ThreadTTL asks for a thread to expire after Minutes of inactivity.
type ThreadTTL = record.ThreadTTL

// ThreadTTLInfo is the ttl field of a Thread read with include=ttl.
type ThreadTTLInfo = record.ThreadTTLInfo

// Interrupt is a pending interrupt raised by a graph task.
type Interrupt = record.Interrupt

// Checkpoint identifies one checkpoint of a thread (the wire's
// CheckpointConfig). An empty CheckpointID means the latest one.
type Checkpoint struct {
	ThreadID      string         `json:"thread_id"`
	CheckpointNS  string         `json:"checkpoint_ns"`
	CheckpointID  *string        `json:"checkpoint_id"`
	CheckpointMap map[string]any `json:"checkpoint_map"`
}

// ThreadState is a snapshot of a thread's graph state at one checkpoint.
type ThreadState struct {
	Values             any         `json:"values"`
	Next               []string    `json:"next"`
	Tasks              []Task      `json:"tasks"`
	Checkpoint         *Checkpoint `json:"checkpoint"`
	ParentCheckpoint   *Checkpoint `json:"parent_checkpoint"`
	Metadata           Object      `json:"metadata"`
	CreatedAt          *time.Time  `json:"created_at"`
	Interrupts         []Interrupt `json:"interrupts"`
	CheckpointID       *string     `json:"checkpoint_id"`
	ParentCheckpointID *string     `json:"parent_checkpoint_id"`
}

// MarshalJSON writes nil slices as [] and nil metadata as null.
func (s ThreadState) MarshalJSON() ([]byte, error) {
	type plain ThreadState
	if s.Next == nil {
		s.Next = []string{}
	}
	if s.Tasks == nil {
		s.Tasks = []Task{}
	}
	if s.Interrupts == nil {
		s.Interrupts = []Interrupt{}
	}
	p := plain(s)
	if s.Metadata == nil {
		// Object encodes nil as {}; the contract wants null for "no checkpoint".
		type noMeta struct {
			plain
			Metadata map[string]any `json:"metadata"`
		}
		return json.Marshal(noMeta{plain: p})
	}
	return json.Marshal(p)
}

// Task is a task scheduled at a checkpoint.
type Task struct {
	ID         string       `json:"id"`
	Name       string       `json:"name"`
	Path       []any        `json:"path,omitempty"`
	Error      *string      `json:"error"`
	Interrupts []Interrupt  `json:"interrupts"`
	Checkpoint *Checkpoint  `json:"checkpoint"`
	State      *ThreadState `json:"state"`
	Result     any          `json:"result"`
}

// MarshalJSON writes nil interrupts as [], and a subgraph pointer
// (Checkpoint) with only its set members, {thread_id, checkpoint_ns}, as
// LangGraph's get_state gives a subgraph task's state config.
func (t Task) MarshalJSON() ([]byte, error) {
	type plain Task
	if t.Interrupts == nil {
		t.Interrupts = []Interrupt{}
	}
	if t.Checkpoint == nil {
		return json.Marshal(plain(t))
	}
	ref := map[string]any{"thread_id": t.Checkpoint.ThreadID, "checkpoint_ns": t.Checkpoint.CheckpointNS}
	if t.Checkpoint.CheckpointID != nil {
		ref["checkpoint_id"] = *t.Checkpoint.CheckpointID
	}
	if t.Checkpoint.CheckpointMap != nil {
		ref["checkpoint_map"] = t.Checkpoint.CheckpointMap
	}
	return json.Marshal(struct {
		plain
		Checkpoint map[string]any `json:"checkpoint"`
	}{plain(t), ref})
}

// ThreadCreate is the body of POST /threads.
type ThreadCreate struct {
	ThreadID   string      `json:"thread_id,omitempty"` // generated when empty
	Metadata   Metadata    `json:"metadata,omitempty"`
	IfExists   string      `json:"if_exists,omitempty"` // raise (default) | do_nothing
	TTL        *ThreadTTL  `json:"ttl,omitempty"`
	Supersteps []Superstep `json:"supersteps,omitempty"`
	GraphID    string      `json:"graph_id,omitempty"` // stored as metadata.graph_id
}

// Superstep is one step of state updates applied at thread creation.
type Superstep struct {
	Updates []StateUpdate `json:"updates"`
}

// StateUpdate is one update of a superstep.
type StateUpdate struct {
	Values  json.RawMessage `json:"values"`
	Command *RunCommand     `json:"command,omitempty"`
	AsNode  string          `json:"as_node"`
}

// ThreadPatch is the body of PATCH /threads/{id}. Metadata is merged shallowly.
type ThreadPatch = record.ThreadPatch

// ThreadSearch selects threads for search and count.
type ThreadSearch = record.ThreadSearch

// threadSortColumns are the values sort_by accepts on thread search.
var threadSortColumns = []string{"thread_id", "status", "created_at", "updated_at", "state_updated_at"}

// threadSelectColumns are the values select accepts on thread search.
var threadSelectColumns = []string{"thread_id", "created_at", "updated_at", "state_updated_at", "metadata", "config", "context", "status", "values", "interrupts"}

// threadStatuses are the values a thread status takes.
var threadStatuses = []string{ThreadIdle, ThreadBusy, ThreadInterrupted, ThreadError}

// Prune strategies.
const (
	PruneDelete     = "delete"      // delete the threads
	PruneKeepLatest = "keep_latest" // keep the threads and their latest checkpoint only
)

// ThreadPrune is the body of POST /threads/prune.
type ThreadPrune struct {
	ThreadIDs []string `json:"thread_ids"`
	Strategy  string   `json:"strategy,omitempty"` // delete (default) | keep_latest
}

// ThreadIncludeTTL is the include value of GetThread that adds the ttl field.
const ThreadIncludeTTL = "ttl"

// checkTTL validates and defaults a thread TTL; nil is allowed.
func checkTTL(ttl *ThreadTTL) error {
	if ttl == nil {
		return nil
	}
	if err := checkTTLMinutes("ttl", ttl.Minutes); err != nil {
		return err
	}
	return checkEnum("ttl strategy", &ttl.Strategy, PruneDelete, []string{PruneDelete, PruneKeepLatest})
}

// ttlInfo turns a requested TTL into the stored form, expiring from now.
func ttlInfo(ttl *ThreadTTL, now time.Time) *ThreadTTLInfo {
	if ttl == nil {
		return nil
	}
	exp := now.Add(time.Duration(ttl.Minutes * float64(time.Minute)))
	return &ThreadTTLInfo{Strategy: ttl.Strategy, TTLMinutes: ttl.Minutes, ExpiresAt: &exp}
}

// newThread is a new idle thread as the Server stores it: drivers store
// threads as given, so every field is decided here, once (CreateThread,
// and a run's insertion creating its thread).
func newThread(id string, now time.Time, metadata Metadata, config Object) *Thread {
	return &Thread{
		ThreadID: id, CreatedAt: now, UpdatedAt: now, StateUpdatedAt: now,
		Metadata: metadata, Config: config, Context: Object{}, Status: ThreadIdle,
	}
}

// newThreadID mints the id of a thread the server names: a UUIDv7, as the
// LangGraph JS server mints them. Time-ordered ids are appended to the
// threads' primary-key index instead of landing on a random page of it, so
// a commit of new threads writes fewer pages.
func newThreadID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// withoutTTL returns t with TTL cleared unless include names it: the wire
// shows ttl only to GET /threads/{id}?include=ttl.
func withoutTTL(t *Thread, include []string) *Thread {
	if t != nil && t.TTL != nil && !slices.Contains(include, ThreadIncludeTTL) {
		c := *t
		c.TTL = nil
		return &c
	}
	return t
}

// CreateThread creates an idle thread with no values. An empty ThreadID gets
// a new UUID; GraphID, when set, is stored as metadata.graph_id; TTL is
// stored with its expiry time.
//
// It returns EINVALID when thread_id is not a UUID, if_exists is not
// raise|do_nothing or the ttl is not positive with strategy delete or
// keep_latest; EBADREQUEST when supersteps are given (they need the graph
// engine); ECONFLICT when the id is taken and if_exists is raise (with
// do_nothing, the existing thread is returned unchanged). It blocks on
// storage.
func (s *Server) CreateThread(ctx context.Context, c ThreadCreate) (*Thread, error) {
	id := newThreadID()
	if c.ThreadID != "" {
		var err error
		if id, err = parseUUID("thread", c.ThreadID); err != nil {
			return nil, err
		}
	}
	if err := checkIfExists(&c.IfExists); err != nil {
		return nil, err
	}
	if err := checkTTL(c.TTL); err != nil {
		return nil, err
	}
	g, err := s.superstepsGraph(c)
	if err != nil {
		return nil, err
	}
	filter, err := s.authFilter(ctx, "threads", "create", &c)
	if err != nil {
		return nil, err
	}
	if len(c.Supersteps) > 0 {
		// Applying supersteps updates the new thread's state: LangGraph asks
		// threads:update too (its filter is moot on a thread being created).
		if _, err := s.authFilter(ctx, "threads", "update", &ThreadUpdate{ThreadID: id, Action: "supersteps"}); err != nil {
			return nil, err
		}
	}
	now := s.clock()
	t := newThread(id, now, c.Metadata.Clone(), Object{})
	t.TTL = ttlInfo(c.TTL, now)
	if c.GraphID != "" {
		t.Metadata["graph_id"] = c.GraphID
	}
	created, err := s.storage.CreateThread(ctx, t, c.IfExists, filter)
	// An existing thread returned by if_exists do_nothing is left as it is.
	if err != nil || len(c.Supersteps) == 0 || created.CreatedAt != now {
		return withoutTTL(created, nil), err
	}
	if created, err = s.applySupersteps(ctx, created, g, c.Supersteps); err != nil {
		return nil, err
	}
	return withoutTTL(created, nil), nil
}

// GetThread returns the thread with the given id. include may name
// ThreadIncludeTTL to fill the TTL field; other values are ignored. It
// returns EINVALID when id is not a UUID and ENOTFOUND when the thread is
// missing or hidden. It blocks on storage.
func (s *Server) GetThread(ctx context.Context, id string, include ...string) (*Thread, error) {
	id, err := parseUUID("thread", id)
	if err != nil {
		return nil, err
	}
	filter, err := s.authFilter(ctx, "threads", "read", &ThreadRef{ThreadID: id})
	if err != nil {
		return nil, err
	}
	t, err := s.storage.GetThread(ctx, id, filter)
	return withoutTTL(t, include), err
}

// UpdateThread merges p.Metadata shallowly into the thread's metadata, sets
// its TTL when p.TTL is given, and bumps updated_at. It returns EINVALID for
// a malformed id or ttl and ENOTFOUND when the thread is missing or hidden.
// It blocks on storage.
func (s *Server) UpdateThread(ctx context.Context, id string, p ThreadPatch) (*Thread, error) {
	id, err := parseUUID("thread", id)
	if err != nil {
		return nil, err
	}
	if err := checkTTL(p.TTL); err != nil {
		return nil, err
	}
	u := &ThreadUpdate{ThreadID: id, ThreadPatch: p}
	filter, err := s.authFilter(ctx, "threads", "update", u)
	if err != nil {
		return nil, err
	}
	p = u.ThreadPatch
	t, err := s.storage.UpdateThread(ctx, id, &p, s.clock(), filter)
	return withoutTTL(t, nil), err
}

// DeleteThread deletes the thread with its checkpoints and runs, cancelling
// its runs in flight first (their streams and waits end). It returns
// EINVALID when id is not a UUID and ENOTFOUND when the thread is missing or
// hidden. It blocks on storage.
func (s *Server) DeleteThread(ctx context.Context, id string) error {
	id, err := parseUUID("thread", id)
	if err != nil {
		return err
	}
	filter, err := s.authFilter(ctx, "threads", "delete", &ThreadRef{ThreadID: id})
	if err != nil {
		return err
	}
	return s.deleteThreads(ctx, []string{id}, func() error { return s.storage.DeleteThread(ctx, id, filter) })
}

// checkThreadSearch validates the filters shared by search and count:
// ids must be UUIDs (rewritten in canonical form), status one of
// threadStatuses, values a JSON object when given.
func checkThreadSearch(q *ThreadSearch) error {
	var ids []string // an empty list filters nothing, like an absent one
	for _, id := range q.IDs {
		id, err := parseUUID("thread", id)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	q.IDs = ids
	if q.Status != "" && !slices.Contains(threadStatuses, q.Status) {
		return Errorf(EINVALID, "Invalid status %q: must be one of %s", q.Status, strings.Join(threadStatuses, ", "))
	}
	if v := bytes.TrimSpace(q.Values); len(v) == 0 || bytes.Equal(v, []byte("null")) {
		q.Values = nil
	} else if v[0] != '{' {
		return Errorf(EINVALID, "Invalid values filter: must be a JSON object")
	}
	if err := checkFilter("metadata", q.Metadata); err != nil {
		return err
	}
	return checkFilter("values", q.Values)
}

// SearchThreads returns one page of the threads matching q, sorted by
// q.SortBy (default created_at) and q.SortOrder (default desc). Limit 0
// means SearchLimitDefault.
//
// With q.Extract, each thread carries the values its paths find in
// Extracted (kept by a select, too).
//
// It returns EINVALID when an id is not a UUID, status is unknown, values is
// not an object, limit is outside 1..SearchLimitMax, offset is negative, sort_by,
// sort_order or a select field is not one the API offers
// (threadSortColumns, threadSelectColumns), or extract has more than
// ThreadExtractMax paths or a malformed one. It blocks on storage.
func (s *Server) SearchThreads(ctx context.Context, q ThreadSearch) (*Page[*Thread], error) {
	if err := checkThreadSearch(&q); err != nil {
		return nil, err
	}
	extract, err := checkExtract(q.Extract)
	if err != nil {
		return nil, err
	}
	if err := checkPaging(&q.Limit, &q.Offset); err != nil {
		return nil, err
	}
	if err := checkSort(&q.SortBy, &q.SortOrder, "created_at", threadSortColumns); err != nil {
		return nil, err
	}
	if err := checkSelect(q.Select, threadSelectColumns); err != nil {
		return nil, err
	}
	filter, err := s.authFilter(ctx, "threads", "search", &q)
	if err != nil {
		return nil, err
	}
	q.Filter = q.Filter.And(filter)
	rows, err := s.storage.SearchThreads(ctx, &q)
	if err != nil {
		return nil, err
	}
	for i, t := range rows {
		rows[i] = withoutTTL(t, nil)
		if extract != nil {
			c := *rows[i]
			c.Extracted = extractThread(&c, extract)
			rows[i] = &c
		}
	}
	sel := q.Select
	if extract != nil && len(sel) > 0 {
		sel = append(slices.Clone(sel), "extracted")
	}
	return newPage(rows, q.Limit, q.Offset, sel), nil
}

// CountThreads counts the threads matching q's ids, metadata, values and
// status; paging, sort and select are ignored. It returns EINVALID as
// SearchThreads does for bad filters. It blocks on storage.
func (s *Server) CountThreads(ctx context.Context, q ThreadSearch) (int, error) {
	if err := checkThreadSearch(&q); err != nil {
		return 0, err
	}
	filter, err := s.authFilter(ctx, "threads", "search", &q)
	if err != nil {
		return 0, err
	}
	q.Filter = q.Filter.And(filter)
	return s.storage.CountThreads(ctx, &q)
}

// CopyThread copies the thread into a new one with a new id, the same
// metadata, config and values, and every checkpoint rewritten to the new id.
// It returns EINVALID when id is not a UUID and ECONFLICT (not ENOTFOUND, as
// the LangGraph API says) when the source is missing; under an access-control
// filter (threads:read), a missing or hidden source is ENOTFOUND, so that
// the answer does not tell hidden threads from missing ones. The copy is
// authorized as a threads:create. It blocks on storage.
func (s *Server) CopyThread(ctx context.Context, id string) (*Thread, error) {
	id, err := parseUUID("thread", id)
	if err != nil {
		return nil, err
	}
	filter, err := s.authFilter(ctx, "threads", "read", &ThreadRef{ThreadID: id})
	if err != nil {
		return nil, err
	}
	// The copy is a thread the caller creates: threads:create decides on
	// it, seeing the metadata the copy gets (the source's), and what the
	// handler stamps on that metadata (an owner, say) is set on the copy,
	// as on any created thread. Its filter is not applied: the id is new.
	newID := newThreadID()
	var stamped Metadata
	if s.auth != nil {
		src, err := s.storage.GetThread(ctx, id, filter)
		if err != nil {
			return nil, copySourceError(err, id, filter)
		}
		create := &ThreadCreate{ThreadID: newID, Metadata: maps.Clone(src.Metadata)}
		if _, err := s.authFilter(ctx, "threads", "create", create); err != nil {
			return nil, err
		}
		stamped = changedKeys(src.Metadata, create.Metadata)
	}
	now := s.clock()
	t, err := s.storage.CopyThread(ctx, id, newID, now, filter)
	if err != nil {
		return nil, copySourceError(err, id, filter)
	}
	if len(stamped) > 0 {
		// A second write: a crash between the two leaves a copy without
		// the stamps, which an owner filter hides (fails closed).
		if t, err = s.storage.UpdateThread(ctx, newID, &ThreadPatch{Metadata: stamped}, now, nil); err != nil {
			return nil, err
		}
	}
	return withoutTTL(t, nil), nil
}

// copySourceError is the error of a copy whose source is missing: 404 when
// an access filter may hide it, else 409 as the LangGraph server answers.
func copySourceError(err error, id string, filter Filter) error {
	if ErrorCode(err) == ENOTFOUND && filter == nil {
		return Errorf(ECONFLICT, "Thread with ID %s not found", id)
	}
	return err
}

// changedKeys returns the keys of after whose values differ from before's
// (added or replaced, compared as JSON: sameJSON), or nil when there are
// none.
func changedKeys(before, after Metadata) Metadata {
	var out Metadata
	for k, v := range after {
		if old, ok := before[k]; ok && sameJSON(old, v) {
			continue
		}
		if out == nil {
			out = Metadata{}
		}
		out[k] = v
	}
	return out
}

// PruneThreads deletes the given threads (strategy delete, the default) or
// keeps them with only their latest checkpoint (keep_latest), and returns
// how many it pruned; missing or hidden ids are not counted. It returns
// EINVALID when thread_ids is absent, an id is not a UUID, or the strategy
// is unknown; nothing is pruned then. It blocks on storage.
func (s *Server) PruneThreads(ctx context.Context, p ThreadPrune) (int, error) {
	if p.ThreadIDs == nil {
		return 0, Errorf(EINVALID, "thread_ids is required")
	}
	ids := make([]string, len(p.ThreadIDs))
	for i, id := range p.ThreadIDs {
		var err error
		if ids[i], err = parseUUID("thread", id); err != nil {
			return 0, err
		}
	}
	if err := checkEnum("strategy", &p.Strategy, PruneDelete, []string{PruneDelete, PruneKeepLatest}); err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	filter, err := s.authFilter(ctx, "threads", "delete", &p)
	if err != nil {
		return 0, err
	}
	if p.Strategy != PruneDelete {
		return s.storage.PruneThreads(ctx, ids, p.Strategy, filter)
	}
	var n int
	err = s.deleteThreads(ctx, ids, func() (err error) {
		n, err = s.storage.PruneThreads(ctx, ids, p.Strategy, filter)
		return err
	})
	return n, err
}

// threadSweepBatch bounds how many expired threads one sweep handles, so a
// sweep never holds the writer for long; the rest wait for the next tick.
const threadSweepBatch = 100

// SweepThreads applies the TTL of threads whose TTL has expired (delete, or
// keep_latest: only the latest checkpoint is kept) and returns how many it
// swept. Threads with a run in flight are left for a later sweep. Start runs
// it every Options.StoreSweepInterval, with the store's sweep.
func (s *Server) SweepThreads(ctx context.Context) (int, error) {
	return s.storage.SweepExpiredThreads(ctx, s.clock(), threadSweepBatch)
}
