package record

import (
	"bytes"
	"encoding/json"
	"time"
)

// Run is one execution of an assistant's graph, on a thread or stateless (on
// a temporary thread).
type Run struct {
	RunID             string    `json:"run_id"`
	ThreadID          string    `json:"thread_id"`
	AssistantID       string    `json:"assistant_id"`
	CreatedAt         time.Time `json:"created_at"`
	UpdatedAt         time.Time `json:"updated_at"`
	Status            string    `json:"status"`
	Metadata          Metadata  `json:"metadata"`
	MultitaskStrategy string    `json:"multitask_strategy"`
	Kwargs            RunKwargs `json:"kwargs"`

	// Attempt counts the times the run was claimed (0 while it never ran).
	// Not on the wire; GetRun fills it.
	Attempt int `json:"-"`
}

// RunKwargs is the execution record of a run, returned verbatim on the wire.
type RunKwargs struct {
	Input           json.RawMessage `json:"input"`
	Command         *RunCommand     `json:"command"`
	Config          Object          `json:"config"`
	Context         Object          `json:"context"`
	StreamMode      []string        `json:"stream_mode"`
	InterruptBefore Breakpoints     `json:"interrupt_before"`
	InterruptAfter  Breakpoints     `json:"interrupt_after"`
	Webhook         *string         `json:"webhook"`
	FeedbackKeys    []string        `json:"feedback_keys"`
	Temporary       bool            `json:"temporary"`
	Subgraphs       bool            `json:"subgraphs"`
	Resumable       bool            `json:"resumable"`
	Durability      string          `json:"durability"`
}

// RunCommand resumes, updates or redirects a graph; it replaces a run's input.
type RunCommand struct {
	Update json.RawMessage `json:"update,omitempty"` // object or list of [key, value]
	Resume json.RawMessage `json:"resume,omitempty"` // value, or map interrupt id -> value
	Goto   json.RawMessage `json:"goto,omitempty"`   // node, {node, input}, or a list of either
}

// UnmarshalJSON decodes a command, treating JSON null update, resume or goto
// as absent (RemoteGraph serialises a whole Command with null fields).
func (c *RunCommand) UnmarshalJSON(data []byte) error {
	type plain RunCommand
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*c = RunCommand(p)
	c.Update, c.Resume, c.Goto = nonNull(c.Update), nonNull(c.Resume), nonNull(c.Goto)
	return nil
}

// Breakpoints lists node names for interrupt_before/after; ["*"] means all.
// On the wire it is "*" or a list of names.
type Breakpoints []string

// UnmarshalJSON accepts "*" as well as a list.
func (b *Breakpoints) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		*b = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		*b = Breakpoints{s}
		return nil
	}
	var l []string
	if err := json.Unmarshal(data, &l); err != nil {
		return Errorf(EINVALID, "interrupt_before/interrupt_after must be \"*\" or a list of node names")
	}
	*b = l
	return nil
}

// MarshalJSON writes ["*"] as "*".
func (b Breakpoints) MarshalJSON() ([]byte, error) {
	if b == nil {
		return []byte("null"), nil
	}
	if len(b) == 1 && b[0] == "*" {
		return []byte(`"*"`), nil
	}
	return json.Marshal([]string(b))
}

// All reports whether the breakpoints name every node.
func (b Breakpoints) All() bool { return len(b) == 1 && b[0] == "*" }

// StreamModes lists stream modes. On the wire it is one mode or a list.
type StreamModes []string

// UnmarshalJSON accepts a single string as well as a list.
func (m *StreamModes) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		*m = StreamModes{s}
		return nil
	}
	var l []string
	if err := json.Unmarshal(data, &l); err != nil {
		return Errorf(EINVALID, "stream_mode must be a stream mode or a list of them")
	}
	*m = l
	return nil
}

// RunCreate is the body of every run-creating request. Zero fields take their
// documented defaults.
type RunCreate struct {
	AssistantID       string          `json:"assistant_id"` // assistant id or registered graph id (required)
	Input             json.RawMessage `json:"input,omitempty"`
	Command           *RunCommand     `json:"command,omitempty"`
	Metadata          Metadata        `json:"metadata,omitempty"`
	Config            Object          `json:"config,omitempty"`
	Context           Object          `json:"context,omitempty"`
	CheckpointID      string          `json:"checkpoint_id,omitempty"`
	Checkpoint        Object          `json:"checkpoint,omitempty"` // {checkpoint_id, checkpoint_ns, checkpoint_map}
	InterruptBefore   Breakpoints     `json:"interrupt_before,omitempty"`
	InterruptAfter    Breakpoints     `json:"interrupt_after,omitempty"`
	StreamMode        StreamModes     `json:"stream_mode,omitempty"` // default ["values"]
	StreamSubgraphs   bool            `json:"stream_subgraphs,omitempty"`
	StreamResumable   bool            `json:"stream_resumable,omitempty"`
	FeedbackKeys      []string        `json:"feedback_keys,omitempty"`
	Webhook           string          `json:"webhook,omitempty"`
	MultitaskStrategy string          `json:"multitask_strategy,omitempty"` // default Options.DefaultMultitaskStrategy (enqueue)
	IfNotExists       string          `json:"if_not_exists,omitempty"`      // create | reject (default)
	AfterSeconds      float64         `json:"after_seconds,omitempty"`
	OnDisconnect      string          `json:"on_disconnect,omitempty"` // cancel | continue (default)
	OnCompletion      string          `json:"on_completion,omitempty"` // delete (default) | keep; stateless only
	Durability        string          `json:"durability,omitempty"`    // sync | async (default) | exit
	CheckpointDuring  *bool           `json:"checkpoint_during,omitempty"`

	// Headers are the request headers (lower-case names). Those starting with
	// "x-" (but x-api-key, x-tenant-id, x-service-key) and user-agent are
	// copied into config.configurable. Set by httpapi; never decoded.
	Headers map[string]string `json:"-"`
}

// RunSearch selects the runs of a thread for ListRuns.
type RunSearch struct {
	Limit  int      // default 10
	Offset int      // default 0
	Status string   // "" = any
	Select []string // projection, applied by the HTTP layer; validated by ListRuns

	Filter Filter // access-control filter on the thread's metadata
}

// RunCancelSelect selects runs for CancelRuns: ThreadID with RunIDs, or
// Status (pending, running or all).
type RunCancelSelect struct {
	ThreadID string   `json:"thread_id,omitempty"`
	RunIDs   []string `json:"run_ids,omitempty"`
	Status   string   `json:"status,omitempty"`
}

// StreamEvent is one event of a run's stream. ID is its position in the
// run's event log ("0", "1", ...): ids grow monotonically within a run,
// across its attempts. Events synthesized from storage for a run this
// process does not execute (see RunStream.Events) have an empty ID.
type StreamEvent struct {
	ID    string
	Event string // metadata, values, updates, messages, custom, error, ... or "mode|ns|..." for subgraphs
	Data  json.RawMessage
}

// nonNull returns nil for an absent or JSON null value, else raw.
func nonNull(raw json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return nil
	}
	return raw
}
