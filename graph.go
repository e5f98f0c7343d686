package graphserver

import (
	"context"
	"encoding/json"

	"github.com/graphserver/graphserver/driver"
)

// Graph is an executable graph the server hosts, registered under a graph id.
// The built-in engine in package graph implements it; any type may.
//
// The server calls a Graph from many goroutines at once: implementations must
// be safe for concurrent use. Every method that reads or writes state does so
// through the Checkpointer in its request, bound to the thread.
type Graph interface {
	// Run executes the graph once, from req.Input or req.Command (both empty:
	// continue from the latest checkpoint), emitting stream parts to emit in
	// order as it goes. It blocks until the graph finishes, pauses at an
	// interrupt or breakpoint (a pause is not an error: the state's Next is
	// non-empty), fails, or ctx is cancelled (then it returns context.Cause).
	// A failure inside a node is returned as an error; ErrorName names it.
	// Once ctx ends, the Server waits Options.CancelGrace for Run to
	// return; after that the run ends without it, and every write Run then
	// makes through req.Checkpointer is refused (nothing it does late is
	// committed).
	Run(ctx context.Context, req *GraphRun, emit func(StreamPart)) error

	// State returns the state at req.Checkpoint (the latest when its
	// CheckpointID is empty). A thread with no checkpoint yet gives an empty
	// ThreadState (Checkpoint nil), not an error.
	State(ctx context.Context, req *StateRequest) (*ThreadState, error)

	// History lists the checkpoints of one namespace of a thread, newest first.
	History(ctx context.Context, req *HistoryRequest) ([]*ThreadState, error)

	// UpdateState writes req.Values as if node req.AsNode had returned them,
	// creating a new checkpoint (a fork when req.Checkpoint names an old one),
	// and returns it.
	UpdateState(ctx context.Context, req *UpdateStateRequest) (*Checkpoint, error)

	// Drawing returns the graph's nodes and edges; xray > 0 expands subgraphs
	// that many levels deep.
	Drawing(ctx context.Context, config Object, xray int) (*Drawing, error)

	// Schemas returns the JSON Schemas of the graph's input, output, state,
	// config and context (nil where unknown).
	Schemas(ctx context.Context, config Object) (*GraphSchemas, error)

	// Subgraphs returns the schemas of subgraphs by namespace ("node" or
	// "node|child"), limited to namespace when non-empty, nested levels
	// included when recurse is true.
	Subgraphs(ctx context.Context, config Object, namespace string, recurse bool) (map[string]*GraphSchemas, error)
}

// StateRunner is an optional interface of a Graph, detected with a type
// assertion. RunState is Run that also returns the thread's state at the end
// of the run: what State would return for the thread's latest root
// checkpoint (without subgraph states), or nil when the graph cannot tell it
// without reading storage (then the Server reads it with State). The Server
// uses it to record the thread's values after a run without reading them
// back.
type StateRunner interface {
	RunState(ctx context.Context, req *GraphRun, emit func(StreamPart)) (*ThreadState, error)
}

// GraphRun is what a Graph needs to execute one run.
type GraphRun struct {
	RunID    string
	ThreadID string

	// Input is the run's input; nil or JSON null continues from the latest
	// checkpoint (after a breakpoint). Command, when set, replaces Input.
	Input   json.RawMessage
	Command *RunCommand

	// Config is the merged config; Config["configurable"] holds thread_id,
	// run_id, assistant_id, graph_id, checkpoint_id (fork point) and user keys.
	Config  Object
	Context Object
	// Metadata is written into every checkpoint's metadata.
	Metadata Object

	// StreamModes are the modes whose parts the graph must emit: values,
	// updates, custom, messages-tuple, messages, debug, tasks, checkpoints,
	// events. Subgraphs asks for parts of nested graphs too.
	StreamModes []string
	Subgraphs   bool

	InterruptBefore Breakpoints
	InterruptAfter  Breakpoints

	// Durability is sync, async (default) or exit.
	Durability string

	// Checkpointer persists the thread's checkpoints; nil runs without
	// persistence (state lives only for this call).
	Checkpointer driver.Checkpointer
	// Store is the cross-thread item store handed to nodes; nil if none.
	Store Store
}

// StreamPart is one event a running graph emits. Event is the SSE event name
// without namespace ("values", "updates", "messages", "messages/partial",
// "custom", ...); Namespace lists "<node>:<task_id>" levels for parts of
// subgraphs (empty for the root graph); Data is the JSON payload.
type StreamPart struct {
	Event     string
	Namespace []string
	Data      json.RawMessage
}

// StateRequest asks a Graph for one state snapshot.
type StateRequest struct {
	Checkpoint   Checkpoint
	Subgraphs    bool
	Config       Object
	Checkpointer driver.Checkpointer
}

// HistoryRequest asks a Graph for a thread's history.
type HistoryRequest struct {
	Checkpoint   Checkpoint // thread and namespace (checkpoint id, if set, is the newest to return)
	Limit        int
	Before       string   // checkpoint id; only older checkpoints are returned
	Metadata     Metadata // containment filter on checkpoint metadata
	Config       Object
	Checkpointer driver.Checkpointer
}

// UpdateStateRequest asks a Graph to write a state update.
type UpdateStateRequest struct {
	Checkpoint   Checkpoint      // thread, namespace and optional fork point
	Values       json.RawMessage // object, list or null
	Command      *RunCommand     // thread supersteps may carry a command
	AsNode       string          // node the update is attributed to; "" = inferred
	Config       Object
	Metadata     Object // extra checkpoint metadata
	Checkpointer driver.Checkpointer
	Store        Store
}

// Drawing is the JSON form of a graph for GET /assistants/{id}/graph.
type Drawing struct {
	Nodes []DrawingNode `json:"nodes"`
	Edges []DrawingEdge `json:"edges"`
}

// DrawingNode is a node of a Drawing.
type DrawingNode struct {
	ID       string `json:"id"`
	Type     string `json:"type,omitempty"`
	Data     any    `json:"data"`
	Metadata any    `json:"metadata,omitempty"`
}

// DrawingEdge is an edge of a Drawing.
type DrawingEdge struct {
	Source      string `json:"source"`
	Target      string `json:"target"`
	Data        any    `json:"data,omitempty"`
	Conditional bool   `json:"conditional,omitempty"`
}

// GraphSchemas holds a graph's JSON Schemas.
type GraphSchemas struct {
	GraphID       string          `json:"graph_id,omitempty"`
	InputSchema   json.RawMessage `json:"input_schema"`
	OutputSchema  json.RawMessage `json:"output_schema"`
	StateSchema   json.RawMessage `json:"state_schema"`
	ConfigSchema  json.RawMessage `json:"config_schema"`
	ContextSchema json.RawMessage `json:"context_schema"`
}

// ErrorName returns the name a failed run reports for err: the result of an
// ErrorName() string method found in err's chain, else "Error".
func ErrorName(err error) string {
	for e := err; e != nil; {
		if n, ok := e.(interface{ ErrorName() string }); ok {
			return n.ErrorName()
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	return "Error"
}
