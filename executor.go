package graphserver

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/graphserver/graphserver/driver"
)

// runOutcome is how a run's execution ended.
type runOutcome struct {
	status   string // final status; "" = released (server closing, lease lost)
	rollback bool
	err      error // error or timeout
	state    *ThreadState
	final    *ThreadState // reported by a StateRunner graph, nil if not
	// deferred are the last checkpoints the graph left to the run's end
	// (driver.CheckpointDeferrer), not saved yet.
	deferred []*driver.CheckpointRecord
	tracker  *outputTracker
	graph    Graph
	cfg      Object
	attempt  int // of the execution
}

// outputTracker remembers what the final output of a run needs from its
// root-graph parts: the last values and the last chunk carrying __interrupt__.
type outputTracker struct {
	mu         sync.Mutex
	lastValues json.RawMessage
	interrupt  json.RawMessage
}

var interruptKey = []byte(`"__interrupt__"`)

func (t *outputTracker) observe(p StreamPart) {
	if len(p.Namespace) > 0 || (p.Event != "values" && p.Event != "updates") {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if bytes.Contains(p.Data, interruptKey) {
		var m map[string]json.RawMessage
		if json.Unmarshal(p.Data, &m) == nil {
			if _, ok := m["__interrupt__"]; ok {
				t.interrupt = p.Data
				return
			}
		}
	}
	if p.Event == "values" {
		t.lastValues = p.Data
	}
}

// modeOf maps an emitted event name to the stream mode that produces it.
func modeOf(event string) string {
	switch {
	case event == "messages":
		return "messages-tuple"
	case strings.HasPrefix(event, "messages/"):
		return "messages"
	}
	return event
}

// execute runs one claimed run to its end: it emits the metadata event,
// runs the graph under a renewed lease, then records the outcome.
// token is the lease owner token of the claim; pre, when not nil, is the
// thread's latest root checkpoint read with the run's creation, which
// claimed it (see preloadCheckpoint).
func (q *runQueue) execute(qr *driver.QueuedRun, token string, pre *preloaded) {
	s := q.s
	run := qr.Run
	stored := 0
	if q.events != nil && qr.Attempt > 1 { // a first attempt has stored nothing
		n, err := q.events.st.CountRunEvents(s.lifetime, run.RunID)
		if err != nil {
			// The run keeps its lease, which the sweep recovers.
			s.logger.Error("count stored run events", "run_id", run.RunID, "err", err)
			return
		}
		stored = n
	}
	log := q.logs.attach(run.RunID, run.ThreadID, run.Kwargs.Resumable, stored)
	if q.events != nil {
		// Stores the events as they come, and the last ones (a failure's
		// error event) after finish.
		defer q.events.follow(s.lifetime, log)()
	}
	defer func() {
		// A panic outside the graph (runSafely recovers the graph's) must
		// not take the process down: the run keeps its lease, which the
		// sweep recovers, and its followers are told to join again.
		if v := recover(); v != nil {
			s.logger.Error("run execution panicked", "run_id", run.RunID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			log.release(s.clock().Add(q.logTTL(log)))
		}
	}()
	if evs, _, _, err := log.read(0); qr.Attempt > 1 || (err == nil && len(evs) == 0) {
		log.append("metadata", marshalOutput(map[string]any{"run_id": run.RunID, "attempt": qr.Attempt}))
	}

	ctx, cancel := context.WithCancelCause(s.lifetime)
	defer cancel(nil)
	q.mu.Lock()
	q.running[run.RunID] = cancel
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		delete(q.running, run.RunID)
		q.mu.Unlock()
	}()

	stopRenew := make(chan struct{})
	var renew sync.WaitGroup
	renew.Go(func() { q.renewLease(ctx, run.RunID, token, cancel, stopRenew) })
	endRenew := sync.OnceFunc(func() { close(stopRenew); renew.Wait() })
	defer endRenew()
	startedAt := s.clock()
	s.runChanged(startedEvent(qr, startedAt))
	out := q.runGraph(ctx, run, log, func(cp driver.Checkpointer) *runCheckpointer { return q.runCheckpointer(cp, run, token, cancel, pre) })
	endRenew()
	out.attempt = qr.Attempt
	q.finish(ctx, run, out, startedAt, log, token)
}

// renewLease extends the run's lease until stop closes, and cancels the run
// when a cancellation was recorded in storage or the lease was lost.
func (q *runQueue) renewLease(ctx context.Context, runID, token string, cancel context.CancelCauseFunc, stop <-chan struct{}) {
	tick := time.NewTicker(max(q.lease/3, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-q.recheckWait():
		}
		action, err := q.storage.RenewRunLease(ctx, runID, token, q.s.clock().Add(q.lease))
		switch {
		case ErrorCode(err) == ENOTFOUND:
			cancel(errLeaseLost)
			return
		case err != nil:
			if ctx.Err() == nil {
				q.s.logger.Warn("renew run lease", "run_id", runID, "err", err)
			}
		case action == CancelRollback:
			cancel(errCancelRollback)
		case action != "":
			cancel(errCancelInterrupt)
		}
	}
}

// runGraph executes the run's graph and classifies the result.
// scope wraps the Storage's Checkpointer for the run (runCheckpointer).
func (q *runQueue) runGraph(ctx context.Context, run *Run, log *eventLog, scope func(driver.Checkpointer) *runCheckpointer) *runOutcome {
	s := q.s
	out := &runOutcome{tracker: &outputTracker{}, cfg: run.Kwargs.Config}
	configurable, _ := asObject(run.Kwargs.Config["configurable"])
	graphID, _ := configurable["graph_id"].(string)
	g := s.graphs[graphID]
	if g == nil {
		out.status, out.err = RunError, Errorf(EINVALID, "Graph %q is not registered.", graphID)
		return out
	}
	out.graph = g

	requested := map[string]bool{}
	modes := []string{"values", "updates"}
	for _, m := range run.Kwargs.StreamMode {
		requested[m] = true
		if m != "values" && m != "updates" {
			modes = append(modes, m)
		}
	}
	meta := Object{}
	for k, v := range run.Metadata {
		meta[k] = v
	}
	meta["run_id"] = run.RunID
	meta["thread_id"] = run.ThreadID
	meta["graph_id"] = graphID
	meta["assistant_id"] = run.AssistantID
	if uid, ok := configurable["user_id"]; ok && uid != nil {
		meta["user_id"] = uid
	}
	gr := &GraphRun{
		RunID:           run.RunID,
		ThreadID:        run.ThreadID,
		Input:           run.Kwargs.Input,
		Command:         run.Kwargs.Command,
		Config:          run.Kwargs.Config,
		Context:         run.Kwargs.Context,
		Metadata:        meta,
		StreamModes:     modes,
		Subgraphs:       run.Kwargs.Subgraphs,
		InterruptBefore: run.Kwargs.InterruptBefore,
		InterruptAfter:  run.Kwargs.InterruptAfter,
		Durability:      cmp.Or(run.Kwargs.Durability, DurabilityAsync),
		Store:           s.Store(),
	}
	var gate *runCheckpointer
	if !run.Kwargs.Temporary {
		gate = scope(s.storage)
		gr.Checkpointer = gate
	} else {
		// A temporary run's checkpoints stay in the engine's memory and go
		// with the run (the official servers run it without a
		// checkpointer): only those its graph may read back are made,
		// each graph's last one, as durability exit makes them.
		gr.Durability = DurabilityExit
	}
	subgraphs := run.Kwargs.Subgraphs
	emit := func(p StreamPart) {
		out.tracker.observe(p)
		if !requested[modeOf(p.Event)] {
			return
		}
		name := p.Event
		if len(p.Namespace) > 0 {
			if !subgraphs {
				return
			}
			name += "|" + strings.Join(p.Namespace, "|")
		}
		log.append(name, p.Data)
	}

	runCtx, stop := context.WithTimeoutCause(ctx, q.maxRunTime, errRunTimeout)
	defer stop()
	final, err := q.runBounded(runCtx, run.RunID, g, gr, emit, gate)
	out.deferred = gate.takeDeferred()
	var cause error
	if runCtx.Err() != nil {
		cause = context.Cause(runCtx)
	}
	switch {
	case errors.Is(cause, errCancelRollback):
		out.rollback = true
	case errors.Is(cause, errLeaseLost):
		out.status = ""
	case err == nil:
		out.status, out.final = RunSuccess, final
	case errors.Is(cause, ErrServerClosed):
		out.status = ""
	case errors.Is(cause, errCancelInterrupt):
		out.status = RunInterrupted
	case errors.Is(cause, errRunTimeout):
		out.status, out.err = RunTimeout, timeoutError{}
	default:
		out.status, out.err = RunError, err
	}
	return out
}

// runBounded runs the graph (runSafely) in a goroutine and returns its
// result, or, when ctx ends (a cancel, a lost lease, the server closing,
// the maximum run time) and the graph does not return within the cancel
// grace, gives up on it: its checkpoint writes are shut off (gate, which
// waits for a write in flight), so nothing it does after that is
// committed, and ctx's cause is returned. The abandoned graph goes on in
// its goroutine until it returns (q.graphs owns it; Close waits for it
// until its context ends). A graph that honours its context returns well
// within the grace, with the writes it saved for work done before the end.
func (q *runQueue) runBounded(ctx context.Context, runID string, g Graph, gr *GraphRun, emit func(StreamPart), gate *runCheckpointer) (*ThreadState, error) {
	type result struct {
		st  *ThreadState
		err error
	}
	done := make(chan result, 1)
	q.graphs.Go(func() {
		st, err := runSafely(ctx, g, gr, emit)
		done <- result{st, err}
	})
	select {
	case r := <-done:
		return r.st, r.err
	case <-ctx.Done():
	}
	grace := time.NewTimer(q.cancelGrace)
	defer grace.Stop()
	select {
	case r := <-done:
		return r.st, r.err
	case <-grace.C:
	}
	gate.shutWrites()
	q.s.logger.Warn("run's graph ignored its cancellation; its late writes are discarded",
		"run_id", runID, "cause", context.Cause(ctx), "grace", q.cancelGrace)
	return nil, context.Cause(ctx)
}

// errRunAbandoned refuses the checkpoint writes of a run's graph after the
// run gave up on it (runBounded).
var errRunAbandoned = Errorf(EUNAVAILABLE, "The run was stopped; writes made after it stopped are discarded.")

// runCheckpointer returns the Checkpointer a claimed run's graph writes
// through: the run's writes go through the Storage's RunCheckpointer, which
// records them as the run's own (a rollback deletes them) and needs its
// lease (token);
// a write refused because the lease was lost cancels the run with
// errLeaseLost, which releases it. Once shut (runBounded gave up on the
// graph), every write is refused. pre, when not nil, answers the graph's
// first read of the thread's latest root checkpoint.
func (q *runQueue) runCheckpointer(cp driver.Checkpointer, run *Run, token string, cancel context.CancelCauseFunc, pre *preloaded) *runCheckpointer {
	c := &runCheckpointer{Checkpointer: cp, rc: q.storage, runID: run.RunID, threadID: run.ThreadID, token: token, cancel: cancel}
	c.pre.Store(pre)
	return c
}

// preloaded is the latest root checkpoint of a run's thread, read in the
// transaction that created and claimed the run (driver.RunCreated): cp,
// nil when the thread had none.
type preloaded struct{ cp *driver.CheckpointRecord }

// runCheckpointer is a run's Checkpointer (see runQueue.runCheckpointer).
type runCheckpointer struct {
	driver.Checkpointer
	rc                     driver.RunCheckpointer
	runID, threadID, token string
	cancel                 context.CancelCauseFunc
	// pre is handed over (and dropped) by the first GetCheckpoint of the
	// thread's latest root checkpoint, and dropped by the run's first
	// write: from then on storage holds what the run wrote.
	pre atomic.Pointer[preloaded]

	mu       sync.RWMutex // held for reading by each write, for writing by shut and DeferCheckpoints
	shut     bool
	deferred []*driver.CheckpointRecord // to save with the run's end (DeferCheckpoints)
}

// DeferCheckpoints implements driver.CheckpointDeferrer: cps wait for the
// run's end (takeDeferred), which saves them in the transaction recording
// it. Once shut, it refuses them, as it refuses writes.
func (c *runCheckpointer) DeferCheckpoints(cps []*driver.CheckpointRecord) bool {
	c.pre.Store(nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shut {
		return false
	}
	c.deferred = append(c.deferred, cps...)
	return true
}

// takeDeferred returns the checkpoints DeferCheckpoints took, and refuses
// more: the run's graph is done. It is safe on a nil *runCheckpointer.
func (c *runCheckpointer) takeDeferred() []*driver.CheckpointRecord {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.deferred
	c.deferred, c.shut = nil, true
	return d
}

// shut refuses the writes to come, once the writes in flight are done. It
// is safe on a nil *runCheckpointer (a run without persistence).
func (c *runCheckpointer) shutWrites() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.shut = true
	c.mu.Unlock()
}

// GetCheckpoint hands the graph the checkpoint preloaded with the run's
// creation (pre) for its first read of the thread's latest root
// checkpoint, if the run wrote nothing before: preloadCheckpoint says why
// storage holds the same then. The record goes to the graph and is
// dropped here, so nothing else holds it. Other reads go to storage.
func (c *runCheckpointer) GetCheckpoint(ctx context.Context, threadID, ns, checkpointID string) (*driver.CheckpointRecord, error) {
	if p := c.pre.Load(); p != nil && threadID == c.threadID && ns == "" && checkpointID == "" && c.pre.CompareAndSwap(p, nil) {
		if p.cp == nil {
			return nil, Errorf(ENOTFOUND, "Thread %s has no checkpoint in namespace %q", threadID, ns)
		}
		return p.cp, nil
	}
	return c.Checkpointer.GetCheckpoint(ctx, threadID, ns, checkpointID)
}

func (c *runCheckpointer) PutCheckpoint(ctx context.Context, cp *driver.CheckpointRecord) error {
	c.pre.Store(nil)
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.shut {
		return errRunAbandoned
	}
	return c.check(c.rc.PutRunCheckpoint(ctx, c.runID, c.token, cp))
}

// PutCheckpoints implements driver.CheckpointBatcher, in one transaction.
func (c *runCheckpointer) PutCheckpoints(ctx context.Context, cps []*driver.CheckpointRecord) error {
	c.pre.Store(nil)
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.shut {
		return errRunAbandoned
	}
	return c.check(c.rc.PutRunCheckpoints(ctx, c.runID, c.token, cps))
}

func (c *runCheckpointer) PutWrites(ctx context.Context, threadID, ns, checkpointID, taskID string, writes []driver.PendingWrite) error {
	c.pre.Store(nil)
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.shut {
		return errRunAbandoned
	}
	return c.check(c.rc.PutRunWrites(ctx, c.runID, c.token, threadID, ns, checkpointID, taskID, writes))
}

func (c *runCheckpointer) check(err error) error {
	if ErrorCode(err) == ENOTFOUND {
		c.cancel(errLeaseLost)
	}
	return err
}

// runSafely calls g.Run (RunState for a StateRunner), turning a panic into
// an error.
func runSafely(ctx context.Context, g Graph, gr *GraphRun, emit func(StreamPart)) (st *ThreadState, err error) {
	defer func() {
		if r := recover(); r != nil {
			st, err = nil, panicError{value: r}
		}
	}()
	if sr, ok := g.(StateRunner); ok {
		return sr.RunState(ctx, gr, emit)
	}
	return nil, g.Run(ctx, gr, emit)
}

type panicError struct{ value any }

func (e panicError) Error() string     { return "graph panicked: " + stringify(e.value) }
func (e panicError) ErrorName() string { return "Panic" }

type timeoutError struct{}

func (timeoutError) Error() string     { return "The run exceeded the maximum run time." }
func (timeoutError) ErrorName() string { return "TimeoutError" }

func stringify(v any) string {
	if e, ok := v.(error); ok {
		return e.Error()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// errorMessage is the message a failed run reports: the message of a
// *Error, or the text of an error that names itself (ErrorName, as graph
// node errors and the recursion error do). Any other error (a storage
// failure, say) may carry internal details: it reads "Internal error.".
func errorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	if namesItself(err) {
		return err.Error()
	}
	return ErrorMessage(err)
}

// errorName is the error name a failed run reports: ErrorName for a *Error
// or an error that names itself, else "InternalError".
func errorName(err error) string {
	var e *Error
	if errors.As(err, &e) || namesItself(err) {
		return ErrorName(err)
	}
	return "InternalError"
}

// namesItself reports whether err or one it wraps has an ErrorName method.
func namesItself(err error) bool {
	var n interface{ ErrorName() string }
	return errors.As(err, &n)
}

// runErrorJSON is the {"error", "message"} object of a failed run. An error
// whose text is not shown is logged.
func (q *runQueue) runErrorJSON(runID string, err error) json.RawMessage {
	var e *Error
	if !errors.As(err, &e) && !namesItself(err) {
		q.s.logger.Error("run failed", "run_id", runID, "err", err)
	}
	return marshalOutput(map[string]string{"error": errorName(err), "message": errorMessage(err)})
}

// finish records the outcome of a run: storage (run status, thread summary,
// webhook outbox) in one transaction, then the end of its event log.
func (q *runQueue) finish(ctx context.Context, run *Run, out *runOutcome, startedAt time.Time, log *eventLog, token string) {
	s := q.s
	bg := context.WithoutCancel(ctx)
	now := s.clock()
	// From here every path ends the log (finish or release): deleting the
	// run's thread meanwhile leaves it to this one (deleteThreads).
	log.markEnding()
	if q.events != nil {
		// The events go to storage before the end: a stream elsewhere that
		// sees the run ended has them all.
		if err := q.events.flush(bg, log); err != nil {
			s.logger.Warn("store run events", "run_id", run.RunID, "err", err)
		}
	}
	if len(out.deferred) > 0 && !out.rollback && (out.status != RunSuccess || out.final == nil) {
		// Only a run that succeeded with its state known saves them with
		// its end (below); any other end that keeps the run's writes, or
		// reads the state back, needs them saved first.
		if err := q.storage.PutRunCheckpoints(bg, run.RunID, token, out.deferred); err != nil && ErrorCode(err) != ENOTFOUND {
			s.logger.Error("save run checkpoints", "run_id", run.RunID, "err", err)
		}
		out.deferred = nil
	}
	if out.status == "" && !out.rollback {
		// Released: the server is closing or another claim took the run over.
		if ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrServerClosed) {
			if err := q.storage.ReleaseRun(bg, run.RunID, token, now); err != nil && ErrorCode(err) != ENOTFOUND {
				s.logger.Error("release run", "run_id", run.RunID, "err", err)
			} else if err == nil {
				s.runChanged(endedEvent(run, out, RunPending, now.Sub(startedAt), "server closing"))
			}
			log.release(now.Add(q.logTTL(log)))
			return
		}
		s.runChanged(q.endLost(bg, run, log, now, endedEvent(run, out, RunPending, now.Sub(startedAt), "lease lost")))
		return
	}

	f := &driver.RunFinish{RunID: run.RunID, ThreadID: run.ThreadID, Owner: token, Status: out.status,
		Delete: out.rollback, DeleteThread: run.Kwargs.Temporary, Checkpoints: out.deferred, Now: now}
	var errJSON json.RawMessage
	if out.err != nil {
		errJSON = q.runErrorJSON(run.RunID, out.err)
	}
	if !run.Kwargs.Temporary && out.graph != nil {
		st, err := q.finalState(bg, run, out)
		if err != nil {
			st, err = q.finalState(bg, run, out) // once more: a transient failure must not wipe the thread
		}
		switch {
		case err == nil:
			out.state = st
			f.Summary = summarize(st, errJSON)
		case errJSON != nil:
			// Unknown state: record the error but keep values and interrupts.
			s.logger.Error("read final state", "run_id", run.RunID, "err", err)
			f.Summary = &driver.ThreadSummary{Status: ThreadError, Error: errJSON}
		default:
			// Unknown state: settle the status only (Summary nil).
			s.logger.Error("read final state", "run_id", run.RunID, "err", err)
		}
	}
	output := finalOutput(out, errJSON)
	if run.Kwargs.Webhook != nil && *run.Kwargs.Webhook != "" {
		f.Webhook = q.hooks.delivery(run, out, startedAt, now, errJSON)
	}
	left, err := finishRunActive(bg, q.storage, f)
	if err != nil {
		// Not recorded: another claim holds the run (or it is gone, or
		// storage failed and the sweep gives it another attempt).
		if ErrorCode(err) != ENOTFOUND {
			s.logger.Error("finish run", "run_id", run.RunID, "err", err)
			log.release(now.Add(q.logTTL(log)))
			return
		}
		s.runChanged(q.endLost(bg, run, log, now, endedEvent(run, out, RunPending, now.Sub(startedAt), "lease lost")))
		return
	}
	if out.rollback && f.Summary != nil {
		// The summary was read before the run's writes were deleted with
		// it: the pending writes of its Command (an update a state shows
		// applied) were still there. Read it again without them.
		if err := s.resummarize(bg, run.ThreadID); err != nil {
			s.logger.Error("summarize thread after rollback", "run_id", run.RunID, "err", err)
		}
	}
	if errJSON != nil {
		log.append("error", errJSON)
	}
	status := out.status
	if out.rollback {
		status = ""
	}
	// Observers hear of the end before the run's waiters are released.
	s.runChanged(endedEvent(run, out, status, now.Sub(startedAt), ""))
	log.finish(status, output, now.Add(q.logTTL(log)))
	q.signalEnded(left)
	if f.Webhook != nil {
		q.hooks.signal()
	}
}

// endLost ends the log of an execution that lost its run: released when
// another claim holds the run (it goes on), finished (interrupted) when the
// run is gone with its thread, as nothing will resume it. It returns ev
// (the release event), made the end event of an interrupted run if so.
func (q *runQueue) endLost(ctx context.Context, run *Run, log *eventLog, now time.Time, ev RunEvent) RunEvent {
	if _, err := q.storage.GetRun(ctx, "", run.RunID, nil); ErrorCode(err) == ENOTFOUND {
		log.finish(RunInterrupted, nil, now.Add(q.logTTL(log)))
		ev.Status, ev.Released, ev.Reason = RunInterrupted, false, "run deleted"
		return ev
	}
	log.release(now.Add(q.logTTL(log)))
	return ev
}

// finalState returns the thread's state after the run: the state the graph
// reported for a run that succeeded, else read back from the latest
// checkpoint, or for a rollback the latest one the run did not write.
func (q *runQueue) finalState(ctx context.Context, run *Run, out *runOutcome) (*ThreadState, error) {
	if out.final != nil && out.status == RunSuccess && !out.rollback {
		return out.final, nil
	}
	req := &StateRequest{Checkpoint: Checkpoint{ThreadID: run.ThreadID}, Config: out.cfg, Checkpointer: q.s.storage}
	if out.rollback {
		id, err := q.storage.LatestCheckpointNotByRun(ctx, run.ThreadID, run.RunID)
		if err != nil {
			return nil, err
		}
		if id == "" {
			return &ThreadState{}, nil
		}
		req.Checkpoint.CheckpointID = &id
	}
	return out.graph.State(ctx, req)
}

// resummarize recomputes a thread's values, interrupts and status from its
// latest root checkpoint, read through the thread's graph, as a finished run
// does (the thread error is cleared). A thread with no checkpoint left gets
// null values and status idle; one whose graph is not registered here is
// left as it is unless it has no checkpoint. The status stays busy while a
// run is in flight (setThreadSummary).
func (s *Server) resummarize(ctx context.Context, threadID string) error {
	th, err := s.storage.GetThread(ctx, threadID, nil)
	if err != nil {
		return err
	}
	if g, _ := s.threadGraph(th); g != nil {
		_, err := s.refreshThreadSummary(ctx, th, g)
		return err
	}
	if _, err := s.storage.GetCheckpoint(ctx, threadID, "", ""); ErrorCode(err) != ENOTFOUND {
		return err // nil: a checkpoint remains that only its graph can read
	}
	return setThreadSummary(ctx, s.storage, threadID, summarize(nil, nil), s.clock())
}

// summarize derives the thread summary from the final state.
func summarize(st *ThreadState, errJSON json.RawMessage) *driver.ThreadSummary {
	sum := &driver.ThreadSummary{Status: ThreadIdle, Values: json.RawMessage("null"), Interrupts: map[string][]Interrupt{}, Error: errJSON}
	if st != nil {
		if st.Values != nil && st.Checkpoint != nil {
			sum.Values = marshalOutput(st.Values)
		}
		for _, t := range st.Tasks {
			if len(t.Interrupts) > 0 {
				sum.Interrupts[t.ID] = t.Interrupts
			}
		}
		if len(st.Next) > 0 {
			sum.Status = ThreadInterrupted
		}
	}
	if errJSON != nil {
		sum.Status = ThreadError
	}
	return sum
}

// finalOutput builds the output of a finished run.
func finalOutput(out *runOutcome, errJSON json.RawMessage) json.RawMessage {
	if errJSON != nil {
		return marshalOutput(map[string]json.RawMessage{"__error__": errJSON})
	}
	t := out.tracker
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.interrupt != nil && !out.rollback {
		return t.interrupt
	}
	if out.state != nil && len(out.state.Next) > 0 && !out.rollback {
		for _, task := range out.state.Tasks {
			if len(task.Interrupts) > 0 {
				return marshalOutput(map[string]any{"__interrupt__": task.Interrupts[:1]})
			}
		}
	}
	if t.lastValues != nil && !out.rollback {
		return t.lastValues
	}
	if out.state != nil && out.state.Checkpoint != nil && out.state.Values != nil {
		return marshalOutput(out.state.Values)
	}
	return json.RawMessage(`{}`)
}

// asObject reads a JSON object held as Object or map[string]any.
func asObject(v any) (Object, bool) {
	switch m := v.(type) {
	case Object:
		return m, true
	case map[string]any:
		return Object(m), true
	}
	return nil, false
}
