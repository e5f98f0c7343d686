package graph

// The functional API: LangGraph's @entrypoint and @task (langgraph/func),
// run as LangGraph runs them: an entrypoint is a graph of one node triggered
// by the input, and a task called from a running node is a PUSH task of the
// caller's superstep (pregel/_algo.py prepare_single_task with a Call,
// pregel/_runner.py _call, pregel/_loop.py accept_push), whose result is
// saved as a pending write (__return__) of the step's checkpoint so that the
// caller, run again after an interrupt or a failure, gets it back instead of
// running the task again.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// Channels of a functional graph.
const (
	// chReturn holds a task call's result in its pending writes
	// (LangGraph's RETURN).
	chReturn = "__return__"
	// chPrevious holds the value an entrypoint saved for its next run on
	// the thread (LangGraph's PREVIOUS).
	chPrevious = "__previous__"
)

// Entrypoint turns fn into a graph, as LangGraph's @entrypoint does: one
// node, name, runs fn on the run's input; what fn returns is the run's
// output and the thread's values (one JSON value, not an object of
// channels), and is saved for the next run on the thread, which reads it
// with Previous. Return a Final to save a value other than the one returned.
//
// fn runs in superstep 0 of its run, as LangGraph's entrypoint does. Inside
// it, call Tasks (durable units of work run in parallel, see Task),
// Interrupt (the run pauses; resumed with Command{resume}, fn runs again
// from the start, the tasks that finished giving their saved results
// without running again) and the other runtime helpers (StreamWriter,
// Config, GetStore, ...). As in LangGraph, fn must be deterministic between
// its calls to tasks and interrupts: what it does on a resume must call
// the same tasks, in the same order, as the run that paused.
//
// opts are the node's options (WithRetry). Entrypoint panics if name is
// empty, reserved or contains | or : (a programming error).
func Entrypoint(name string, fn func(ctx context.Context, input any) (any, error), opts ...NodeOption) *Compiled {
	g := New(Channels{chRoot: LastValue(), chPrevious: LastValue()})
	g.root = true
	g.AddNode(name, func(ctx context.Context, _ State) (any, error) {
		var input any
		if tr := taskFrom(ctx); tr != nil {
			input = tr.t.arg
		}
		out, err := fn(ctx, input)
		if err != nil {
			return nil, err
		}
		switch f := out.(type) {
		case Final:
			return entryResult{value: f.Value, save: f.Save}, nil
		case *Final:
			if f != nil {
				return entryResult{value: f.Value, save: f.Save}, nil
			}
		}
		return entryResult{value: out, save: out}, nil
	}, opts...)
	g.AddEdge(Start, name)
	g.AddEdge(name, End)
	c, err := g.Compile(CompileOptions{Name: name})
	if err != nil {
		panic(fmt.Sprintf("graph.Entrypoint: %v", err))
	}
	c.entry = name
	return c
}

// Final is what an entrypoint returns to give its caller Value (the run's
// output and the thread's values) while saving Save for its next run on
// the thread, which reads it with Previous (LangGraph's entrypoint.final).
// Both are written even when nil.
type Final struct {
	Value any
	Save  any
}

// entryResult is an entrypoint's result, written to the thread's value and
// to the value saved for the next run.
type entryResult struct{ value, save any }

// entryWrites returns the writes of an entrypoint's result and the update
// the updates stream shows (the value returned).
func entryWrites(e entryResult) ([]write, any, error) {
	v, err := normalize(e.value)
	if err != nil {
		return nil, nil, err
	}
	s, err := normalize(e.save)
	if err != nil {
		return nil, nil, err
	}
	return []write{{chRoot, v}, {chPrevious, s}}, v, nil
}

// Previous returns the value the entrypoint saved when its last run on the
// thread ended (what it returned, or Final.Save), nil on the thread's first
// run (LangGraph's previous parameter). It must not be modified. It is nil
// outside a node.
func Previous(ctx context.Context) any {
	if tr := taskFrom(ctx); tr != nil {
		return tr.cs.values[chPrevious]
	}
	return nil
}

// Task is a durable unit of work of the functional API (LangGraph's @task):
// called from an entrypoint or any node of a running graph, it runs in
// parallel with its caller and returns a Future. Its result is saved with
// the caller's checkpoint, so when the caller runs again in the same step
// (the run resumed after an interrupt, or retried after a failure) a call
// that finished returns the saved result without running the task again.
// A failed or interrupted call runs again.
//
// Calls are identified by their order in the caller (the n-th call of the
// caller's execution), as LangGraph's are: the caller must make the same
// calls in the same order each time it runs. The result crosses JSON (it is
// stored): Out must round-trip through encoding/json.
type Task[In, Out any] struct {
	name string
	fn   func(context.Context, In) (Out, error)
	opts *node // the options given (retry policies)
}

// NewTask returns a Task named name running fn. opts are node options, of
// which a task uses WithRetry (LangGraph's retry_policy) and WithCache
// (cache_policy: a call whose argument's key was seen gets the cached
// result without running; the key's input is the argument, JSON-native). NewTask panics if
// name is empty or contains | or : (a programming error).
func NewTask[In, Out any](name string, fn func(ctx context.Context, in In) (Out, error), opts ...NodeOption) *Task[In, Out] {
	if name == "" || strings.ContainsAny(name, "|:") {
		panic(fmt.Sprintf("graph.NewTask: name %q is empty or contains | or :", name))
	}
	nd := &node{name: name}
	for _, o := range opts {
		o(nd)
	}
	return &Task[In, Out]{name: name, fn: fn, opts: nd}
}

// Name returns the task's name.
func (t *Task[In, Out]) Name() string { return t.name }

// Call schedules the task on in and returns its Future at once. Inside a
// running node it is a task of the node's superstep, in the run's stream
// ("updates" shows {name: result} when it finishes, "tasks" and "debug" its
// start and result), checkpoints and store; it runs under the run's
// context, not ctx's deadline (it may outlive the call, never the step:
// the step waits for it). Outside a run it runs fn at once, with no
// durability.
func (t *Task[In, Out]) Call(ctx context.Context, in In) *Future[Out] {
	run := func(ctx context.Context) (any, error) { return t.fn(ctx, in) }
	tr := taskFrom(ctx)
	if tr == nil {
		f := newCallFuture()
		out, err := runCallFn(ctx, t.name, run)
		if err == nil {
			out, err = normalize(out)
		}
		f.resolve(out, err)
		return &Future[Out]{f: f}
	}
	return &Future[Out]{f: tr.startCall(t.name, t.opts, in, run)}
}

// Future is the pending result of a task call.
type Future[T any] struct{ f *callFuture }

// Done returns a channel closed when the result is ready.
func (f *Future[T]) Done() <-chan struct{} { return f.f.done }

// Result waits for the task and returns its result, decoded from its JSON
// form (a fresh value for each call of Result). When the task paused at
// an Interrupt, the error matches ErrInterrupt: the caller must return it,
// which pauses the run (resumed, the caller runs again and the call, made
// again, continues the task). A failed task returns its error.
func (f *Future[T]) Result() (T, error) {
	<-f.f.done
	var out T
	if f.f.err != nil {
		return out, f.f.err
	}
	if f.f.v == nil {
		return out, nil
	}
	// decoded anew for each caller: the saved value stays as saved (with
	// durability exit it is written when the run ends), and a result reads
	// the same on the first run and on a resume
	b, err := json.Marshal(f.f.v)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		return out, fmt.Errorf("task result does not decode into %T: %w", out, err)
	}
	return out, nil
}

// callFuture is a task call's result, set once.
type callFuture struct {
	done chan struct{}
	v    any // JSON-native
	err  error
}

func newCallFuture() *callFuture { return &callFuture{done: make(chan struct{})} }

func (f *callFuture) resolve(v any, err error) {
	f.v, f.err = v, err
	close(f.done)
}

// callSpec is what a task of a call runs.
type callSpec struct {
	run  func(context.Context) (any, error)
	opts *node
	arg  any // the argument, JSON-native (the cache key's input)
	fut  *callFuture
	// root is the node task whose execution made the call (directly or
	// through other calls)
	root *task
}

// stepCalls are the task calls of one superstep of a runner: the step waits
// for all of them before it ends (their goroutines are owned by the step).
type stepCalls struct {
	ctx     context.Context // the run's
	mu      sync.Mutex
	idle    *sync.Cond
	running int
	closed  bool
	pending map[string][]driver.PendingWrite // by task id: what earlier executions saved
	byID    map[string]*task
	ran     []*task // the calls run in this step
	err     error   // saving a call's writes failed
}

func newStepCalls(ctx context.Context, pending []driver.PendingWrite) *stepCalls {
	sc := &stepCalls{ctx: ctx, pending: map[string][]driver.PendingWrite{}, byID: map[string]*task{}}
	sc.idle = sync.NewCond(&sc.mu)
	for _, w := range pending {
		sc.pending[w.TaskID] = append(sc.pending[w.TaskID], w)
	}
	return sc
}

// wait waits for the calls of the step to finish, then refuses new ones. It
// returns the calls that ran and the first error saving their writes.
func (sc *stepCalls) wait() ([]*task, error) {
	if sc == nil {
		return nil, nil
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for sc.running > 0 {
		sc.idle.Wait()
	}
	sc.closed = true
	return sc.ran, sc.err
}

func (sc *stepCalls) finish(err error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.err == nil {
		sc.err = err
	}
	sc.running--
	if sc.running == 0 {
		sc.idle.Broadcast()
	}
}

// errCallAfterStep is returned by a call made after its caller's step
// ended (from a goroutine the caller left running).
var errCallAfterStep = errors.New("graph: task called after the calling node's step ended")

// startCall schedules a call of task name from the running task tr, as
// LangGraph's loop accepts a PUSH with a Call: the call's id derives from
// the step's checkpoint, the caller's path and the call's index in the
// caller, so that the same call made again (the caller resumed or retried)
// finds the result saved for it, or the call already running.
func (tr *taskRuntime) startCall(name string, opts *node, in any, run func(context.Context) (any, error)) *callFuture {
	sc := tr.calls
	fut := newCallFuture()
	if sc == nil {
		fut.resolve(nil, errCallAfterStep)
		return fut
	}
	arg, err := normalize(in)
	if err != nil {
		fut.resolve(nil, fmt.Errorf("task %s input: %w", name, err))
		return fut
	}
	tr.mu.Lock()
	idx := tr.callIdx
	tr.callIdx++
	tr.mu.Unlock()
	r, parent := tr.r, tr.t
	pathKey := fmt.Sprintf("__pregel_push/%s/%010d", parent.pathKey, idx)
	id := taskID(tr.cs.id, r.ns+"\x00"+name, pathKey)
	t := &task{
		id: id, name: name, path: []any{"__pregel_push", parent.path, idx, true}, pathKey: pathKey,
		triggers: []string{"__pregel_push"}, push: true, arg: []any{[]any{arg}, map[string]any{}},
		ns:   parent.ns + "|" + name + ":" + id,
		call: &callSpec{run: run, opts: opts, arg: arg, fut: fut, root: parent},
	}
	if parent.call != nil {
		t.call.root = parent.call.root
	}
	sc.mu.Lock()
	if sc.closed {
		sc.mu.Unlock()
		fut.resolve(nil, errCallAfterStep)
		return fut
	}
	if prev := sc.byID[id]; prev != nil {
		// the caller was retried: the call is running or done already
		sc.mu.Unlock()
		return prev.call.fut
	}
	sc.byID[id] = t
	attachWrites([]*task{t}, sc.pending[id])
	if t.done {
		// it finished in an earlier execution of the caller (LangGraph's
		// _call returns the RETURN write of next_task.writes)
		sc.mu.Unlock()
		v, _ := returned(t.writes)
		fut.resolve(v, nil)
		return fut
	}
	// it runs again: what an earlier execution saved for it (an error, an
	// interrupt) is not its outcome, only its resume values are kept
	t.interrupts, t.errRec = nil, nil
	sc.ran = append(sc.ran, t)
	if r.fromCache(sc.ctx, t, nil) {
		// cached by a run before (WithCache): its result is saved for the
		// step as if it had run (LangGraph's cached writes are put too)
		sc.mu.Unlock()
		err := r.putWrites(sc.ctx, tr.cs, t)
		v, _ := returned(t.writes)
		fut.resolve(v, err)
		return fut
	}
	sc.running++
	sc.mu.Unlock()
	r.rc.taskStart(r, t, tr.step, nil)
	go func() {
		sc.finish(r.execCall(sc.ctx, sc, tr.cs, t, tr.step))
	}()
	return fut
}

// returned is the result of a task call among its writes (LangGraph's
// RETURN write), and whether there is one.
func returned(writes []write) (any, bool) {
	for _, w := range writes {
		if w.ch == chReturn {
			return w.v, true
		}
	}
	return nil, false
}

// execCall runs the task of a call (retried by its policies), streams its
// result, saves its writes, then resolves its future (LangGraph's runner
// commits a call's writes before its future resolves). It returns an error
// only when saving failed.
func (r *runner) execCall(ctx context.Context, sc *stepCalls, cs *ckpt, t *task, step int) error {
	c := t.call
	var out any
	var err error
	var ie *interruptError
	for attempt := 1; ; attempt++ {
		tr := &taskRuntime{r: r, t: t, step: step, cs: cs, calls: sc}
		out, err = runCallFn(context.WithValue(ctx, taskKey{}, tr), t.name, c.run)
		if err == nil {
			out, err = normalize(out)
		}
		if err == nil || errors.As(err, &ie) || context.Cause(ctx) != nil {
			break
		}
		policy, wait := c.opts.retryFor(err, attempt)
		if policy == nil {
			break
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
		}
	}
	switch {
	case errors.As(err, &ie):
		t.interrupts = ie.interrupts
		if t.interrupts == nil {
			t.interrupts = []graphserver.Interrupt{}
		}
	case err != nil && stoppedBy(ctx, err):
		// stopped by the run's end: nothing is saved, it runs again
		t.runErr, t.bubble, t.ran = err, true, true
		c.fut.resolve(nil, err)
		return nil
	case err != nil:
		t.runErr = err
		t.errRec = map[string]any{"error": graphserver.ErrorName(err), "message": err.Error()}
	default:
		t.writes = []write{{chReturn, out}}
	}
	t.ran = true
	r.rc.taskEnd(r, t, step, out)
	r.toCache(ctx, t, nil)
	perr := r.putWrites(ctx, cs, t)
	c.fut.resolve(out, err)
	return perr
}

// liftCallInterrupts adds the interrupts of the step's calls to the node
// task that made them, when it paused too: it paused at the first one it
// waited for, but the calls running beside it may have paused at their own,
// and all must be shown (in the __interrupt__ update and the thread's
// state) to be answered, by id, when the run resumes (LangGraph's runner
// raises the interrupts of every call of the step with its caller's).
func (r *runner) liftCallInterrupts(ctx context.Context, cs *ckpt, calls []*task) error {
	var changed []*task
	for _, c := range calls {
		root := c.call.root
		if len(c.interrupts) == 0 || root.interrupts == nil {
			continue
		}
		lifted := false
		for _, in := range c.interrupts {
			if !slices.ContainsFunc(root.interrupts, func(x graphserver.Interrupt) bool { return x.ID == in.ID }) {
				root.interrupts = append(root.interrupts, in)
				lifted = true
			}
		}
		if lifted && !slices.Contains(changed, root) {
			changed = append(changed, root)
		}
	}
	for _, t := range changed {
		if err := r.putWrites(ctx, cs, t); err != nil {
			return err
		}
	}
	return nil
}

// runCallFn runs a task's function, a panic becoming a PanicError.
func runCallFn(ctx context.Context, name string, run func(context.Context) (any, error)) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &NodeError{Name: "PanicError", Message: fmt.Sprintf("task %s panicked: %v\n%s", name, p, debug.Stack())}
		}
	}()
	return run(ctx)
}
