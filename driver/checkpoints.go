package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/graphserver/graphserver/record"
)

// CheckpointTimes checks cps as a Checkpointer does before writing any of
// them (CheckCheckpoints) and returns their creation times
// (CreationTimes).
func CheckpointTimes(cps []*CheckpointRecord, now func() time.Time) ([]time.Time, error) {
	if err := CheckCheckpoints(cps); err != nil {
		return nil, err
	}
	return CreationTimes(cps, now), nil
}

// CheckCheckpoints checks cps as a Checkpointer does before writing any of
// them: EINVALID for a missing thread or checkpoint id, a body or blob that
// is not JSON, a blob without channel or version, a delta blob that is not
// an array. It reads every blob: callers run it before their write
// transaction (see Tx.PutCheckpoints).
func CheckCheckpoints(cps []*CheckpointRecord) error {
	for _, cp := range cps {
		if cp == nil || cp.ThreadID == "" || cp.CheckpointID == "" {
			return record.Errorf(record.EINVALID, "A checkpoint needs a thread id and a checkpoint id.")
		}
		if len(cp.Body) > 0 && !json.Valid(cp.Body) {
			return record.Errorf(record.EINVALID, "The checkpoint body is not valid JSON.")
		}
		for _, b := range cp.NewBlobs {
			if b.Channel == "" || b.Version == "" || !json.Valid(b.Data) {
				return record.Errorf(record.EINVALID, "The blob of channel %q version %q needs a channel, a version and valid JSON data.", b.Channel, b.Version)
			}
			if d := bytes.TrimSpace(b.Data); b.Base != "" && (len(d) < 2 || d[0] != '[') {
				return record.Errorf(record.EINVALID, "The blob of channel %q version %q has a base, so its data must be an array.", b.Channel, b.Version)
			}
		}
	}
	return nil
}

// CreationTimes returns the creation times of cps: CreatedAt, or now() for
// a zero one.
func CreationTimes(cps []*CheckpointRecord, now func() time.Time) []time.Time {
	created := make([]time.Time, len(cps))
	for i, cp := range cps {
		created[i] = cp.CreatedAt
		if created[i].IsZero() {
			created[i] = now()
		}
	}
	return created
}

// CheckpointBatcher is an optional Checkpointer capability: saving
// several checkpoints in one transaction, where PutCheckpoint takes one
// each. The graph engine uses it for a run's input checkpoint and the one
// after it, which follow each other with no node running between them.
type CheckpointBatcher interface {
	// PutCheckpoints saves cps in order, each as PutCheckpoint would (a
	// checkpoint may be the parent of the next), all or none.
	PutCheckpoints(ctx context.Context, cps []*CheckpointRecord) error
}

// CheckpointDeferrer is an optional Checkpointer capability: the last
// checkpoints of a run whose graph completed are saved with the run's end,
// in the transaction that records it (RunFinish.Checkpoints), instead of
// in one of their own. The Server's run checkpointer implements it; the
// graph engine hands over its root graph's last checkpoints when a run
// completes.
type CheckpointDeferrer interface {
	// DeferCheckpoints takes cps (in order) to save with the run's end. It
	// reports false, keeping nothing, when it cannot: the caller then saves
	// them itself.
	//
	// A CheckpointDeferrer's PutCheckpoint and PutCheckpoints stop, when
	// their ctx ends, only before they start writing, and then return
	// ctx.Err() having written nothing (as RunCheckpointer's do). The
	// engine relies on it to take back a save that still waits, when the
	// run ends, and to defer its checkpoints too.
	DeferCheckpoints(cps []*CheckpointRecord) bool
}

// Checkpointer persists a thread's checkpoints for a Graph. Storage drivers
// implement it; the graph engine owns what a checkpoint means.
//
// Channel values are stored as versioned blobs, written only when a channel
// changes. A blob whose Base is set holds only the elements appended to the
// array value at version Base, so append-only channels (chat messages) store
// each element once; drivers reconstruct the full value on read.
type Checkpointer interface {
	// PutCheckpoint saves cp (its NewBlobs included) in one transaction.
	PutCheckpoint(ctx context.Context, cp *CheckpointRecord) error
	// PutWrites saves the pending writes of one task at a checkpoint,
	// replacing earlier writes of that task there.
	PutWrites(ctx context.Context, threadID, ns, checkpointID, taskID string, writes []PendingWrite) error
	// GetCheckpoint returns the checkpoint with the given id in namespace ns
	// (the latest one when checkpointID is empty), with Values and
	// PendingWrites filled. It returns ENOTFOUND when there is none.
	GetCheckpoint(ctx context.Context, threadID, ns, checkpointID string) (*CheckpointRecord, error)
	// ListCheckpoints returns checkpoints of one namespace, newest first, with
	// Values and PendingWrites filled.
	ListCheckpoints(ctx context.Context, threadID string, opts CheckpointListOptions) ([]*CheckpointRecord, error)
}

// CheckpointRecord is a stored checkpoint.
type CheckpointRecord struct {
	ThreadID           string
	NS                 string // "" for the root graph; "node:task_id|child:task_id" below
	CheckpointID       string // time-ordered: a later checkpoint has a greater id
	ParentCheckpointID string // "" for the first
	RunID              string // the run that wrote it, if any
	CreatedAt          time.Time
	Metadata           record.Object     // source, step, parents, run metadata (searchable)
	ChannelVersions    map[string]string // channel -> version of its value here
	Body               json.RawMessage   // engine-owned (versions seen, pending sends, ...)

	NewBlobs      []ChannelBlob              // put: values written at this checkpoint
	Values        map[string]json.RawMessage // get: full value of every channel in ChannelVersions
	PendingWrites []PendingWrite             // get: writes saved with PutWrites
}

// ChannelBlob is one version of one channel's value.
type ChannelBlob struct {
	Channel string
	Version string
	Base    string          // "" = Data is the whole value; else Data is an array appended to version Base
	Data    json.RawMessage // JSON value
}

// PendingWrite is a write a task made, saved before its step is committed.
type PendingWrite struct {
	TaskID   string
	TaskPath string // engine-defined order key for tasks (e.g. push/pull path)
	Idx      int
	Channel  string
	Value    json.RawMessage
}

// CheckpointListOptions selects checkpoints for ListCheckpoints.
type CheckpointListOptions struct {
	NS       string
	Before   string          // only checkpoints with a smaller id
	Limit    int             // 0 = no limit
	Metadata record.Metadata // containment filter on checkpoint metadata
}
