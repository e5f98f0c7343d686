package graphserver

import (
	"context"
	"encoding/json"

	"github.com/graphserver/graphserver/driver"
)

// ThreadStateQuery selects a state snapshot for GetThreadState.
type ThreadStateQuery struct {
	// Checkpoint selects the checkpoint (CheckpointID) and namespace
	// (CheckpointNS, for a subgraph); zero values mean the latest root state.
	Checkpoint Checkpoint
	// Subgraphs expands each task's subgraph state.
	Subgraphs bool
}

// ThreadHistoryQuery selects checkpoints for GetThreadHistory.
type ThreadHistoryQuery struct {
	Limit      int        // default 10
	Before     string     // checkpoint id; only older checkpoints
	Metadata   Metadata   // containment on checkpoint metadata
	Checkpoint Checkpoint // namespace (and newest checkpoint) to list
}

// ThreadStateUpdate is the body of POST /threads/{id}/state.
type ThreadStateUpdate struct {
	Values     json.RawMessage `json:"values"`
	AsNode     string          `json:"as_node,omitempty"`
	Checkpoint *Checkpoint     `json:"checkpoint,omitempty"`
	// CheckpointID is the legacy way to name the checkpoint to fork from.
	CheckpointID string `json:"checkpoint_id,omitempty"`
}

// ThreadStateUpdateResult is the answer of POST /threads/{id}/state.
type ThreadStateUpdateResult struct {
	Checkpoint   *Checkpoint `json:"checkpoint"`
	Configurable *Checkpoint `json:"configurable"` // deprecated duplicate kept for old clients
	CheckpointID *string     `json:"checkpoint_id"`
}

// emptyThreadState is the state of a thread no graph has written yet.
func emptyThreadState() *ThreadState {
	return &ThreadState{Values: Object{}}
}

// threadGraph returns the graph a thread runs (from metadata.graph_id), or nil
// when the thread has none yet.
func (s *Server) threadGraph(t *Thread) (Graph, string) {
	id, _ := t.Metadata["graph_id"].(string)
	return s.graphs[id], id
}

// threadConfig is the config graph calls on a thread get: the thread's stored
// config with configurable.thread_id set.
func threadConfig(t *Thread) Object {
	cfg := t.Config.Clone()
	configurable, _ := cfg["configurable"].(map[string]any)
	c := Object(configurable).Clone()
	c["thread_id"] = t.ThreadID
	cfg["configurable"] = map[string]any(c)
	return cfg
}

// GetThreadState returns the thread's state at the latest checkpoint, or at
// q.Checkpoint. It returns ENOTFOUND for a missing thread or checkpoint, and
// the empty state for a thread no graph has run on yet.
func (s *Server) GetThreadState(ctx context.Context, threadID string, q ThreadStateQuery) (*ThreadState, error) {
	t, err := s.stateThread(ctx, threadID, "read")
	if err != nil {
		return nil, err
	}
	g, _ := s.threadGraph(t)
	if g == nil {
		return emptyThreadState(), nil
	}
	cp := q.Checkpoint
	cp.ThreadID = t.ThreadID
	return g.State(ctx, &StateRequest{Checkpoint: cp, Subgraphs: q.Subgraphs, Config: threadConfig(t), Checkpointer: s.storage})
}

// GetThreadHistory lists a thread's checkpoints newest first. It returns
// ENOTFOUND for a missing thread and EINVALID for a limit below 1.
func (s *Server) GetThreadHistory(ctx context.Context, threadID string, q ThreadHistoryQuery) ([]*ThreadState, error) {
	if q.Limit == 0 {
		q.Limit = 10
	} else if q.Limit < 1 {
		return nil, Errorf(EINVALID, "limit must be at least 1")
	}
	if err := checkFilter("metadata", q.Metadata); err != nil {
		return nil, err
	}
	t, err := s.stateThread(ctx, threadID, "read")
	if err != nil {
		return nil, err
	}
	g, _ := s.threadGraph(t)
	if g == nil {
		return []*ThreadState{}, nil
	}
	cp := q.Checkpoint
	cp.ThreadID = t.ThreadID
	return g.History(ctx, &HistoryRequest{
		Checkpoint: cp, Limit: q.Limit, Before: q.Before, Metadata: q.Metadata,
		Config: threadConfig(t), Checkpointer: s.storage,
	})
}

// UpdateThreadState writes values into the thread's state as if node AsNode
// had returned them (forking when a checkpoint is named), then recomputes the
// thread's values, interrupts and status. It returns ENOTFOUND for a missing
// thread, EBUSY while a run is pending or running on it, and EBADREQUEST when
// no graph has been bound to the thread (metadata.graph_id).
func (s *Server) UpdateThreadState(ctx context.Context, threadID string, u ThreadStateUpdate) (*ThreadStateUpdateResult, error) {
	t, err := s.stateThread(ctx, threadID, "update")
	if err != nil {
		return nil, err
	}
	if t.Status == ThreadBusy {
		return nil, Errorf(EBUSY, "Thread is busy")
	}
	g, graphID := s.threadGraph(t)
	if g == nil {
		if graphID == "" {
			return nil, Errorf(EBADREQUEST, "Thread %s has no graph_id in its metadata; run it once or create it with a graph_id before updating its state.", threadID)
		}
		return nil, Errorf(EBADREQUEST, "Graph %q of thread %s is not registered.", graphID, threadID)
	}
	cp := Checkpoint{ThreadID: t.ThreadID}
	if u.Checkpoint != nil {
		cp = *u.Checkpoint
		cp.ThreadID = t.ThreadID
	}
	if u.CheckpointID != "" && cp.CheckpointID == nil {
		id := u.CheckpointID
		cp.CheckpointID = &id
	}
	out, err := g.UpdateState(ctx, &UpdateStateRequest{
		Checkpoint: cp, Values: u.Values, AsNode: u.AsNode, Config: threadConfig(t),
		Metadata: Object{"graph_id": graphID}, Checkpointer: s.idleThreadWrites(),
	})
	if err != nil {
		return nil, err
	}
	st, err := s.refreshThreadSummary(ctx, t, g)
	if err != nil {
		return nil, err
	}
	s.publishStateUpdate(ctx, t.ThreadID, st)
	return &ThreadStateUpdateResult{Checkpoint: out, Configurable: out, CheckpointID: out.CheckpointID}, nil
}

// refreshThreadSummary recomputes the thread's values, interrupts and status
// from its latest root checkpoint, read through g, and clears its error. It
// returns the state read.
func (s *Server) refreshThreadSummary(ctx context.Context, t *Thread, g Graph) (*ThreadState, error) {
	st, err := g.State(ctx, &StateRequest{Checkpoint: Checkpoint{ThreadID: t.ThreadID}, Config: threadConfig(t), Checkpointer: s.storage})
	if err != nil {
		return nil, err
	}
	return st, setThreadSummary(ctx, s.storage, t.ThreadID, summarize(st, nil), s.clock())
}

// stateThread validates the thread id and reads the thread through the
// access-control filter of threads:<action>.
func (s *Server) stateThread(ctx context.Context, threadID, action string) (*Thread, error) {
	id, err := parseUUID("thread", threadID)
	if err != nil {
		return nil, err
	}
	var value any = &ThreadRef{ThreadID: id}
	if action == "update" {
		value = &ThreadUpdate{ThreadID: id, Action: "update_state"}
	}
	filter, err := s.authFilter(ctx, "threads", action, value)
	if err != nil {
		return nil, err
	}
	return s.storage.GetThread(ctx, id, filter)
}

// superstepsGraph checks that a thread create with supersteps names a
// registered graph (metadata.graph_id or graph_id) and returns it; it returns
// nil when there are no supersteps.
func (s *Server) superstepsGraph(c ThreadCreate) (Graph, error) {
	if len(c.Supersteps) == 0 {
		return nil, nil
	}
	graphID := c.GraphID
	if graphID == "" {
		graphID, _ = c.Metadata["graph_id"].(string)
	}
	if graphID == "" {
		return nil, Errorf(EBADREQUEST, "Creating a thread with supersteps requires a graph_id (in metadata or as graph_id).")
	}
	g := s.graphs[graphID]
	if g == nil {
		return nil, Errorf(ENOTFOUND, "Graph %q not found.", graphID)
	}
	for i, step := range c.Supersteps {
		if len(step.Updates) == 0 {
			return nil, Errorf(EINVALID, "supersteps[%d].updates must not be empty", i)
		}
	}
	return g, nil
}

// applySupersteps applies the state updates of a new thread in order and
// refreshes its summary. If one fails, the thread is deleted again so that a
// bad request leaves nothing behind.
func (s *Server) applySupersteps(ctx context.Context, t *Thread, g Graph, steps []Superstep) (*Thread, error) {
	graphID, _ := t.Metadata["graph_id"].(string)
	var st *ThreadState
	apply := func() (err error) {
		for _, step := range steps {
			for _, u := range step.Updates {
				_, err := g.UpdateState(ctx, &UpdateStateRequest{
					Checkpoint: Checkpoint{ThreadID: t.ThreadID}, Values: u.Values, Command: u.Command,
					AsNode: u.AsNode, Config: threadConfig(t), Metadata: Object{"graph_id": graphID},
					Checkpointer: s.idleThreadWrites(),
				})
				if err != nil {
					return err
				}
			}
		}
		st, err = s.refreshThreadSummary(ctx, t, g)
		return err
	}
	if err := apply(); err != nil {
		if derr := s.storage.DeleteThread(context.WithoutCancel(ctx), t.ThreadID, nil); derr != nil {
			s.logger.ErrorContext(ctx, "delete thread after failed supersteps", "thread_id", t.ThreadID, "err", derr)
		}
		if ErrorCode(err) == EINTERNAL {
			return nil, err
		}
		return nil, Errorf(EBADREQUEST, "Thread %s could not be created: its supersteps failed: %s", t.ThreadID, ErrorMessage(err))
	}
	s.publishStateUpdate(ctx, t.ThreadID, st)
	return s.storage.GetThread(ctx, t.ThreadID, nil)
}

// ThreadStatePatch is the body of PATCH /threads/{id}/state.
type ThreadStatePatch struct {
	// Metadata is merged shallowly into the metadata of the thread's latest
	// checkpoint. Required; {} changes nothing.
	Metadata Metadata `json:"metadata"`
}

// PatchThreadState merges p.Metadata into the metadata of the thread's
// latest root checkpoint; the checkpoint's values, channels and pending
// writes are kept. It returns EINVALID for a malformed id or a missing
// metadata object, ENOTFOUND when the thread is missing or hidden or has no
// checkpoint yet, and EBUSY while a run is pending or running on it. It
// blocks on storage.
func (s *Server) PatchThreadState(ctx context.Context, threadID string, p ThreadStatePatch) error {
	if p.Metadata == nil {
		return Errorf(EINVALID, "metadata is required: an object merged into the latest checkpoint's metadata")
	}
	t, err := s.stateThread(ctx, threadID, "update")
	if err != nil {
		return err
	}
	if t.Status == ThreadBusy {
		return Errorf(EBUSY, "Thread is busy")
	}
	cp, err := s.storage.GetCheckpoint(ctx, t.ThreadID, "", "")
	if ErrorCode(err) == ENOTFOUND {
		return Errorf(ENOTFOUND, "Thread %s has no checkpoint yet: run it or update its state before patching it.", t.ThreadID)
	} else if err != nil {
		return err
	}
	cp.Metadata = cp.Metadata.Merge(p.Metadata)
	cp.NewBlobs, cp.Values, cp.PendingWrites = nil, nil, nil
	return s.idleThreadWrites().PutCheckpoint(ctx, cp)
}

// idleThreadWrites returns the Checkpointer a state update writes through
// (update_state, a new thread's supersteps, PATCH state): busyGuard.
func (s *Server) idleThreadWrites() driver.Checkpointer {
	return busyGuard{Checkpointer: s.storage, st: s.storage}
}

// busyGuard saves each checkpoint in a transaction that first checks that
// the thread has no pending or running run (EBUSY otherwise; ENOTFOUND
// when the thread is gone). A state update reads the thread's status
// before it starts, but a run may be created on the thread between that
// read and its write: the check in the write's transaction orders the
// two, as Tx.CheckThread orders the changes of one thread. Either the
// update commits first, and a run created after it starts from it
// (preloadCheckpoint), or the run's creation does, and the update is
// refused. Pending writes (PutWrites, which the built-in engine's
// UpdateState does not make) are not checked.
type busyGuard struct {
	driver.Checkpointer
	st driver.Storage
}

func (g busyGuard) PutCheckpoint(ctx context.Context, cp *driver.CheckpointRecord) error {
	if cp == nil {
		return g.Checkpointer.PutCheckpoint(ctx, cp) // EINVALID
	}
	cps := []*driver.CheckpointRecord{cp}
	// Checked outside the transaction (Tx.PutCheckpoints); the error is
	// returned where the save would be.
	invalid := driver.CheckCheckpoints(cps)
	return g.st.WithTx(ctx, func(ctx context.Context, tx driver.Tx) error {
		head, err := tx.CheckThread(ctx, cp.ThreadID, nil)
		if err != nil {
			return err
		}
		if len(head.Active) > 0 {
			return Errorf(EBUSY, "Thread is busy")
		}
		if invalid != nil {
			return invalid
		}
		return tx.PutCheckpoints(ctx, cps)
	})
}
