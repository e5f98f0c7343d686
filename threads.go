package graphserver

import (
	"encoding/json"
	"time"
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
type Thread struct {
	ThreadID       string                 `json:"thread_id"`
	CreatedAt      time.Time              `json:"created_at"`
	UpdatedAt      time.Time              `json:"updated_at"`
	StateUpdatedAt time.Time              `json:"state_updated_at"`
	Metadata       Metadata               `json:"metadata"`
	Config         Object                 `json:"config"`
	Context        Object                 `json:"context"`
	Status         string                 `json:"status"`
	Values         json.RawMessage        `json:"values"` // null before the first checkpoint
	Interrupts     map[string][]Interrupt `json:"interrupts"`
	Error          json.RawMessage        `json:"error"` // {"error","message"} when Status is error
	TTL            *ThreadTTLInfo         `json:"ttl,omitempty"`
}

// MarshalJSON writes a nil Interrupts map as {} as the wire contract requires.
func (t Thread) MarshalJSON() ([]byte, error) {
	type plain Thread
	if t.Interrupts == nil {
		t.Interrupts = map[string][]Interrupt{}
	}
	return json.Marshal(plain(t))
}

// ThreadTTL asks for a thread to expire after Minutes of inactivity.
type ThreadTTL struct {
	Minutes  float64 `json:"ttl"`
	Strategy string  `json:"strategy,omitempty"` // delete (default) | keep_latest
}

// UnmarshalJSON accepts a bare number of minutes as well as {ttl, strategy}.
func (t *ThreadTTL) UnmarshalJSON(b []byte) error {
	var n float64
	if err := json.Unmarshal(b, &n); err == nil {
		*t = ThreadTTL{Minutes: n, Strategy: "delete"}
		return nil
	}
	type plain ThreadTTL
	return json.Unmarshal(b, (*plain)(t))
}

// ThreadTTLInfo is the ttl field of a Thread read with include=ttl.
type ThreadTTLInfo struct {
	Strategy   string     `json:"strategy"`
	TTLMinutes float64    `json:"ttl_minutes"`
	ExpiresAt  *time.Time `json:"expires_at"`
}

// Interrupt is a pending interrupt raised by a graph task.
type Interrupt struct {
	Value any    `json:"value"`
	ID    string `json:"id"`
}

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

// MarshalJSON writes nil interrupts as [].
func (t Task) MarshalJSON() ([]byte, error) {
	type plain Task
	if t.Interrupts == nil {
		t.Interrupts = []Interrupt{}
	}
	return json.Marshal(plain(t))
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
	Command *Command        `json:"command,omitempty"`
	AsNode  string          `json:"as_node"`
}

// ThreadPatch is the body of PATCH /threads/{id}. Metadata is merged shallowly.
type ThreadPatch struct {
	Metadata Metadata   `json:"metadata,omitempty"`
	TTL      *ThreadTTL `json:"ttl,omitempty"`
}

// ThreadSearch selects threads for search and count.
type ThreadSearch struct {
	IDs       []string        `json:"ids,omitempty"`
	Metadata  Metadata        `json:"metadata,omitempty"` // containment
	Values    json.RawMessage `json:"values,omitempty"`   // containment on current values
	Status    string          `json:"status,omitempty"`
	Limit     int             `json:"limit,omitempty"`
	Offset    int             `json:"offset,omitempty"`
	SortBy    string          `json:"sort_by,omitempty"`
	SortOrder string          `json:"sort_order,omitempty"`
	Select    []string        `json:"select,omitempty"`

	Filter Filter `json:"-"` // access-control filter on metadata
}

// ThreadSortColumns are the values sort_by accepts on thread search.
var ThreadSortColumns = []string{"thread_id", "status", "created_at", "updated_at", "state_updated_at"}

// ThreadSelectColumns are the values select accepts on thread search.
var ThreadSelectColumns = []string{"thread_id", "created_at", "updated_at", "state_updated_at", "metadata", "config", "context", "status", "values", "interrupts"}

// ThreadStatuses are the values a thread status takes.
var ThreadStatuses = []string{ThreadIdle, ThreadBusy, ThreadInterrupted, ThreadError}

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

// ThreadSummary is what a finished run or a state update writes onto its
// thread: the latest checkpoint's values, interrupts and the derived status.
type ThreadSummary struct {
	Status     string
	Values     json.RawMessage
	Interrupts map[string][]Interrupt
	Error      json.RawMessage
}
