// Package graphtest holds hand-written graphserver.Graph fakes for testing the
// run machinery without the graph engine: Echo, Fail, Interrupt, Blocking,
// Parts, Failing and FlakyState, plus Nop, which cannot run. Each runnable
// fake keeps its whole state in one channel ("__values__") of one checkpoint
// per run, written through the run's Checkpointer, so State, rollback and
// thread summaries behave as with a real engine.
package graphtest

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

const valuesChannel = "__values__"

// body is the engine-owned part of a fake checkpoint.
type body struct {
	Next       []string                `json:"next"`
	Interrupts []graphserver.Interrupt `json:"interrupts,omitempty"`
}

// base implements every Graph method but Run.
type base struct{}

// save writes a checkpoint holding values, the next nodes and interrupts.
func save(ctx context.Context, req *graphserver.GraphRun, values json.RawMessage, next []string, interrupts []graphserver.Interrupt) error {
	if req.Checkpointer == nil {
		return nil
	}
	var parent string
	if prev, err := req.Checkpointer.GetCheckpoint(ctx, req.ThreadID, "", ""); err == nil {
		parent = prev.CheckpointID
	} else if graphserver.ErrorCode(err) != graphserver.ENOTFOUND {
		return err
	}
	id := uuid.Must(uuid.NewV7()).String()
	b, _ := json.Marshal(body{Next: next, Interrupts: interrupts})
	return req.Checkpointer.PutCheckpoint(ctx, &driver.CheckpointRecord{
		ThreadID:           req.ThreadID,
		CheckpointID:       id,
		ParentCheckpointID: parent,
		RunID:              req.RunID,
		Metadata:           graphserver.Object{"source": "loop", "run_id": req.RunID},
		ChannelVersions:    map[string]string{valuesChannel: id},
		Body:               b,
		NewBlobs:           []driver.ChannelBlob{{Channel: valuesChannel, Version: id, Data: values}},
	})
}

// previous returns the values of the latest checkpoint, or nil.
func previous(ctx context.Context, req *graphserver.GraphRun) json.RawMessage {
	if req.Checkpointer == nil {
		return nil
	}
	cp, err := req.Checkpointer.GetCheckpoint(ctx, req.ThreadID, "", "")
	if err != nil {
		return nil
	}
	return cp.Values[valuesChannel]
}

// State reads the checkpoint asked for (the latest by default).
func (base) State(ctx context.Context, req *graphserver.StateRequest) (*graphserver.ThreadState, error) {
	if req.Checkpointer == nil {
		return &graphserver.ThreadState{}, nil
	}
	id := ""
	if req.Checkpoint.CheckpointID != nil {
		id = *req.Checkpoint.CheckpointID
	}
	cp, err := req.Checkpointer.GetCheckpoint(ctx, req.Checkpoint.ThreadID, "", id)
	if graphserver.ErrorCode(err) == graphserver.ENOTFOUND {
		return &graphserver.ThreadState{}, nil
	} else if err != nil {
		return nil, err
	}
	var b body
	_ = json.Unmarshal(cp.Body, &b)
	var values any
	_ = json.Unmarshal(cp.Values[valuesChannel], &values)
	cpid := cp.CheckpointID
	st := &graphserver.ThreadState{
		Values:     values,
		Next:       b.Next,
		Checkpoint: &graphserver.Checkpoint{ThreadID: cp.ThreadID, CheckpointID: &cpid},
		Metadata:   cp.Metadata,
		Interrupts: b.Interrupts,
	}
	if len(b.Next) > 0 {
		st.Tasks = []graphserver.Task{{ID: "task-" + cpid, Name: b.Next[0], Interrupts: b.Interrupts}}
	}
	return st, nil
}

// History is not supported.
func (base) History(context.Context, *graphserver.HistoryRequest) ([]*graphserver.ThreadState, error) {
	return nil, nil
}

// UpdateState is not supported.
func (base) UpdateState(context.Context, *graphserver.UpdateStateRequest) (*graphserver.Checkpoint, error) {
	return nil, graphserver.Errorf(graphserver.EBADREQUEST, "graphtest fakes do not update state")
}

// Drawing returns an empty drawing.
func (base) Drawing(context.Context, graphserver.Object, int) (*graphserver.Drawing, error) {
	return &graphserver.Drawing{}, nil
}

// Schemas returns no schemas.
func (base) Schemas(context.Context, graphserver.Object) (*graphserver.GraphSchemas, error) {
	return &graphserver.GraphSchemas{}, nil
}

// Subgraphs returns none.
func (base) Subgraphs(context.Context, graphserver.Object, string, bool) (map[string]*graphserver.GraphSchemas, error) {
	return map[string]*graphserver.GraphSchemas{}, nil
}

// Nop is a Graph that cannot run: Run, State, History and UpdateState
// return EBADREQUEST. It lets tests register graph ids (and so system
// assistants) without an engine.
type Nop struct{ base }

var _ graphserver.Graph = Nop{}

var errNop = graphserver.Errorf(graphserver.EBADREQUEST, "graphtest.Nop cannot run")

// Run returns EBADREQUEST.
func (Nop) Run(context.Context, *graphserver.GraphRun, func(graphserver.StreamPart)) error {
	return errNop
}

// State returns EBADREQUEST.
func (Nop) State(context.Context, *graphserver.StateRequest) (*graphserver.ThreadState, error) {
	return nil, errNop
}

// History returns EBADREQUEST.
func (Nop) History(context.Context, *graphserver.HistoryRequest) ([]*graphserver.ThreadState, error) {
	return nil, errNop
}

// UpdateState returns EBADREQUEST.
func (Nop) UpdateState(context.Context, *graphserver.UpdateStateRequest) (*graphserver.Checkpoint, error) {
	return nil, errNop
}

// input is the run's input, or the previous values when it is null.
func input(ctx context.Context, req *graphserver.GraphRun) json.RawMessage {
	if len(req.Input) > 0 && string(req.Input) != "null" {
		return req.Input
	}
	if prev := previous(ctx, req); prev != nil {
		return prev
	}
	return json.RawMessage(`{}`)
}

// Echo's state becomes its input: it emits one values part and returns.
type Echo struct{ base }

var _ graphserver.Graph = Echo{}

// Run saves the input as the new state and emits it.
func (Echo) Run(ctx context.Context, req *graphserver.GraphRun, emit func(graphserver.StreamPart)) error {
	in := input(ctx, req)
	if req.Command != nil && len(req.Command.Resume) > 0 {
		in, _ = json.Marshal(map[string]json.RawMessage{"resumed": req.Command.Resume})
	}
	if err := save(ctx, req, in, nil, nil); err != nil {
		return err
	}
	emit(graphserver.StreamPart{Event: "updates", Data: mustJSON(map[string]json.RawMessage{"echo": in})})
	emit(graphserver.StreamPart{Event: "values", Data: in})
	return nil
}

// NodeError is the error Fail returns.
type NodeError struct{ Msg string }

func (e *NodeError) Error() string { return e.Msg }

// ErrorName names the error as Python would.
func (e *NodeError) ErrorName() string { return "ValueError" }

// Fail emits its input then fails with a ValueError "boom".
type Fail struct{ base }

var _ graphserver.Graph = Fail{}

// Run emits the input and returns a *NodeError.
func (Fail) Run(ctx context.Context, req *graphserver.GraphRun, emit func(graphserver.StreamPart)) error {
	emit(graphserver.StreamPart{Event: "values", Data: input(ctx, req)})
	return &NodeError{Msg: "boom"}
}

// Failing emits its input then fails with Err, an error that does not name
// itself (as a storage failure would).
type Failing struct {
	base
	Err error
}

var _ graphserver.Graph = Failing{}

// Run emits the input and returns Err.
func (f Failing) Run(ctx context.Context, req *graphserver.GraphRun, emit func(graphserver.StreamPart)) error {
	emit(graphserver.StreamPart{Event: "values", Data: input(ctx, req)})
	return f.Err
}

// FlakyState runs as Echo; its State fails while FailState is set.
type FlakyState struct {
	Echo
	FailState atomic.Bool
}

var _ graphserver.Graph = (*FlakyState)(nil)

// State fails while FailState is set, else reads as Echo does.
func (f *FlakyState) State(ctx context.Context, req *graphserver.StateRequest) (*graphserver.ThreadState, error) {
	if f.FailState.Load() {
		return nil, graphserver.Errorf(graphserver.EINTERNAL, "graphtest: state read failed")
	}
	return f.Echo.State(ctx, req)
}

// Interrupt pauses on its first run with an interrupt asking "approve?"
// (state Next ["review"]), and finishes on a run resuming it with
// {"answer": <resume value>}.
type Interrupt struct{ base }

var _ graphserver.Graph = Interrupt{}

// InterruptID is the id of the interrupt Interrupt raises.
const InterruptID = "interrupt-1"

// Run pauses or finishes.
func (Interrupt) Run(ctx context.Context, req *graphserver.GraphRun, emit func(graphserver.StreamPart)) error {
	if req.Command != nil && len(req.Command.Resume) > 0 {
		out := mustJSON(map[string]json.RawMessage{"answer": req.Command.Resume})
		if err := save(ctx, req, out, nil, nil); err != nil {
			return err
		}
		emit(graphserver.StreamPart{Event: "values", Data: out})
		return nil
	}
	in := input(ctx, req)
	intr := []graphserver.Interrupt{{Value: map[string]any{"question": "approve?"}, ID: InterruptID}}
	if err := save(ctx, req, in, []string{"review"}, intr); err != nil {
		return err
	}
	emit(graphserver.StreamPart{Event: "values", Data: in})
	chunk := mustJSON(map[string]any{"__interrupt__": intr})
	emit(graphserver.StreamPart{Event: "updates", Data: chunk})
	emit(graphserver.StreamPart{Event: "values", Data: chunk})
	return nil
}

// Parts emits several parts of several modes, one of them from a subgraph
// (namespace ["child:1"]), then the final values.
type Parts struct{ base }

var _ graphserver.Graph = Parts{}

// Run emits custom 0..2, an updates part, a subgraph values part and values.
func (Parts) Run(ctx context.Context, req *graphserver.GraphRun, emit func(graphserver.StreamPart)) error {
	in := input(ctx, req)
	for i := range 3 {
		emit(graphserver.StreamPart{Event: "custom", Data: mustJSON(map[string]int{"i": i})})
	}
	emit(graphserver.StreamPart{Event: "updates", Data: mustJSON(map[string]json.RawMessage{"node": in})})
	emit(graphserver.StreamPart{Event: "values", Namespace: []string{"child:1"}, Data: mustJSON(map[string]string{"sub": "x"})})
	emit(graphserver.StreamPart{Event: "messages", Data: json.RawMessage(`[{"type":"ai","content":"hi","id":"m1"},{"langgraph_node":"node"}]`)})
	if err := save(ctx, req, in, nil, nil); err != nil {
		return err
	}
	emit(graphserver.StreamPart{Event: "values", Data: in})
	return nil
}

// Blocking emits its input as values, saves it, then blocks until released
// (then emits {"done": true} merged as the final values) or until its context
// ends (then returns the context's cause). Started receives the run id of
// each run that reached the blocking point, Stopped the run id of each run
// whose context ended while it blocked. Create it with NewBlocking.
type Blocking struct {
	base
	Started chan string
	Stopped chan string
	// Checkpoints is how many checkpoints a run saves before it blocks
	// (default 1). Set it before runs start.
	Checkpoints int

	mu       sync.Mutex
	released chan struct{}
}

var _ graphserver.Graph = (*Blocking)(nil)

// NewBlocking returns a Blocking graph whose Started channel buffers 64 ids.
func NewBlocking() *Blocking {
	return &Blocking{Started: make(chan string, 64), Stopped: make(chan string, 64), released: make(chan struct{})}
}

// Release lets every blocked and future run finish.
func (b *Blocking) Release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.released:
	default:
		close(b.released)
	}
}

// Run blocks as documented on Blocking.
func (b *Blocking) Run(ctx context.Context, req *graphserver.GraphRun, emit func(graphserver.StreamPart)) error {
	in := input(ctx, req)
	for range max(b.Checkpoints, 1) {
		if err := save(ctx, req, in, []string{"wait"}, nil); err != nil {
			return err
		}
	}
	emit(graphserver.StreamPart{Event: "values", Data: in})
	b.Started <- req.RunID
	select {
	case <-b.released:
	case <-ctx.Done():
		select {
		case b.Stopped <- req.RunID:
		default:
		}
		return context.Cause(ctx)
	}
	out := mustJSON(map[string]any{"done": true})
	if err := save(ctx, req, out, nil, nil); err != nil {
		return err
	}
	emit(graphserver.StreamPart{Event: "values", Data: out})
	return nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Stubborn ignores its context: it saves its input (state Next ["work"]),
// reports the run id on Started, then blocks until Release whatever its
// context does, and saves {"late": true} as the final state. Returned
// receives the error of that late save (nil if it was committed). Create it
// with NewStubborn.
type Stubborn struct {
	base
	Started  chan string
	Returned chan error

	release chan struct{}
	once    sync.Once
}

var _ graphserver.Graph = (*Stubborn)(nil)

// NewStubborn returns a Stubborn graph whose channels buffer 64 values.
func NewStubborn() *Stubborn {
	return &Stubborn{Started: make(chan string, 64), Returned: make(chan error, 64), release: make(chan struct{})}
}

// Release lets every blocked and future run go on.
func (b *Stubborn) Release() { b.once.Do(func() { close(b.release) }) }

// Run blocks as documented on Stubborn.
func (b *Stubborn) Run(ctx context.Context, req *graphserver.GraphRun, emit func(graphserver.StreamPart)) error {
	in := input(ctx, req)
	if err := save(ctx, req, in, []string{"work"}, nil); err != nil {
		return err
	}
	emit(graphserver.StreamPart{Event: "values", Data: in})
	b.Started <- req.RunID
	<-b.release
	wctx := context.WithoutCancel(ctx)
	late := mustJSON(map[string]any{"late": true})
	err := save(wctx, req, late, nil, nil)
	b.Returned <- err
	emit(graphserver.StreamPart{Event: "values", Data: late})
	return err
}

// Emitter emits Events custom parts {"i": 0..Events-1, "pad": Pad}, Delay
// apart (stopping when its context ends), then its input as values. It
// keeps no state: run it stateless or on a thread, it saves nothing.
type Emitter struct {
	base
	Events int
	Delay  time.Duration
	Pad    string
}

var _ graphserver.Graph = Emitter{}

// Run emits as documented on Emitter.
func (e Emitter) Run(ctx context.Context, req *graphserver.GraphRun, emit func(graphserver.StreamPart)) error {
	for i := range e.Events {
		if e.Delay > 0 {
			t := time.NewTimer(e.Delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return context.Cause(ctx)
			}
		} else if err := context.Cause(ctx); err != nil {
			return err
		}
		emit(graphserver.StreamPart{Event: "custom", Data: mustJSON(map[string]any{"i": i, "pad": e.Pad})})
	}
	emit(graphserver.StreamPart{Event: "values", Data: input(ctx, req)})
	return nil
}
