package graphserver

import (
	"encoding/json"
	"time"
)

// Run statuses.
const (
	RunPending     = "pending"
	RunRunning     = "running"
	RunSuccess     = "success"
	RunError       = "error"
	RunTimeout     = "timeout"
	RunInterrupted = "interrupted"
)

// Multitask strategies: what a new run does when its thread already has a
// pending or running run.
const (
	MultitaskReject    = "reject"
	MultitaskInterrupt = "interrupt"
	MultitaskRollback  = "rollback"
	MultitaskEnqueue   = "enqueue"
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
}

// RunKwargs is the execution record of a run, returned verbatim on the wire.
type RunKwargs struct {
	Input           json.RawMessage `json:"input"`
	Command         *Command        `json:"command"`
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

// Command resumes, updates or redirects a graph; it replaces a run's input.
type Command struct {
	Update json.RawMessage `json:"update,omitempty"` // object or list of [key, value]
	Resume json.RawMessage `json:"resume,omitempty"` // value, or map interrupt id -> value
	Goto   json.RawMessage `json:"goto,omitempty"`   // node, {node, input}, or a list of either
}

// Breakpoints lists node names for interrupt_before/after; ["*"] means all.
// On the wire it is "*" or a list of names.
type Breakpoints []string

// UnmarshalJSON accepts "*" as well as a list.
func (b *Breakpoints) UnmarshalJSON(data []byte) error {
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
