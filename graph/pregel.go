package graph

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/record"
)

// task is one unit of work of a superstep.
type task struct {
	id       string
	name     string
	path     []any
	pathKey  string
	triggers []string
	push     bool
	arg      any
	ns       string // checkpoint namespace of the task: <parent ns|>name:id

	writes     []write
	update     any
	done       bool // finished before (its writes come from pending writes)
	ran        bool // ran in this run (execTask returned)
	saved      bool // its writes of this run are saved (PutWrites)
	errRec     map[string]any
	interrupts []graphserver.Interrupt
	resume     []any
	runErr     error
	bubble     bool // it sent a Command on to a parent graph, or was stopped by the run's end: nothing is saved for it
	cached     bool // its writes came from the cache (CachePolicy): it did not run

	// call is set for a task call (Task.Call) made by another task of the step
	call *callSpec
}

type write struct {
	ch string
	v  any
}

func (t *task) hidden() bool { return t.name == Start }

// interruptError pauses a graph: it carries the interrupts raised (none for
// a static breakpoint).
type interruptError struct{ interrupts []graphserver.Interrupt }

func (e *interruptError) Error() string { return "graph interrupted" }

// ErrInterrupt is matched (errors.Is) by the error Interrupt returns to pause
// the graph.
var ErrInterrupt = errors.New("graph interrupted")

func (e *interruptError) Is(target error) bool { return target == ErrInterrupt }

// runner executes one graph (root or subgraph) in one namespace.
type runner struct {
	g       *Compiled
	rc      *runCtx
	ns      string
	nsParts []string
	parents map[string]string
	stop    int // the step past which the run fails (recursion limit)
	track   tracker
	saved   string // id of the last persisted checkpoint
	save    *saveOp
	held    *heldSave // checkpoints persisted, not yet handed to the checkpointer
	final   *ckpt     // the checkpoint a completed run ended at
	parent  string    // parent id stored with the last persisted checkpoint

	resumeMap  map[string]any
	nullResume func() (any, bool)
	resumeMu   sync.Mutex
	nullUsed   bool
	nullValue  any
	hasNull    bool

	// resumingStep is set while the first step of a resumed run executes
	// (LangGraph's CONFIG_KEY_RESUMING): a persistent subgraph invoked
	// then continues where it paused
	resumingStep bool

	// the Command's update/goto writes not yet saved (durability exit) and
	// the checkpoint they are pending on
	nullWrites []driver.PendingWrite
	nullAt     string

	// the task calls of the running step, and the pending writes its
	// tasks may reuse
	calls       *stepCalls
	stepPending []driver.PendingWrite
}

type saveOp struct {
	done chan struct{}
	err  error
	// recs and cancel: a save to a CheckpointDeferrer, which endSave may
	// take back (cancel) while it has not started; nil cancel otherwise.
	recs   []*driver.CheckpointRecord
	cancel context.CancelFunc
}

// heldSave is an input checkpoint persist keeps to save with the next
// checkpoint (see persist).
type heldSave struct {
	ctx  context.Context
	recs []*driver.CheckpointRecord
}

func newRunner(g *Compiled, rc *runCtx, ns string) *runner {
	r := &runner{g: g, rc: rc, ns: ns, track: tracker{}, parents: map[string]string{}}
	if ns != "" {
		r.nsParts = strings.Split(ns, "|")
	}
	return r
}

func (r *runner) visible() bool { return len(r.nsParts) == 0 || r.rc.req.Subgraphs }

func (r *runner) emit(mode string, data any) {
	if !r.rc.modes[mode] || !r.visible() {
		return
	}
	event := mode
	if mode == "messages-tuple" {
		event = "messages"
	}
	r.rc.send(r.nsParts, event, data)
}

// persist writes c through the checkpointer (per durability).
func (r *runner) persist(ctx context.Context, c *ckpt, final bool) error {
	if r.rc.durability == "exit" && !final {
		return nil
	}
	if r.saved == c.id {
		return nil
	}
	c.metadata = r.metadata(c.metadata)
	rec, err := r.track.record(c, r.g, r.rc.threadID, r.rc.req.RunID, r.saved)
	if err != nil {
		return err
	}
	async := r.rc.durability == "async" && !final
	_, batches := r.rc.cp.(driver.CheckpointBatcher)
	_, defers := r.rc.cp.(driver.CheckpointDeferrer)
	// A checkpoint held (below) starts no save: the save in flight goes
	// on meanwhile; the next save waits for it (flushHeld), and a run's
	// end hands both to its deferrer, which may take it back (endSave).
	hold := (async && batches) || (final && defers && r == r.rc.root)
	if !hold {
		if err := r.waitPut(); err != nil {
			return err
		}
	}
	r.parent, r.saved = r.saved, c.id
	recs := []*driver.CheckpointRecord{rec}
	if h := r.held; h != nil {
		r.held, recs = nil, append(h.recs, rec)
	}
	if hold {
		// Kept to go with the next checkpoint, in one transaction instead
		// of two, or with the run's end (endSave): the save starts before
		// the next step that runs a node (runTasks; a run's input is
		// followed by its __start__ task, which runs none), and waitSave
		// ends it before anything reads or builds on it.
		r.held = &heldSave{ctx: ctx, recs: recs}
		return nil
	}
	return r.put(ctx, recs, async)
}

// put saves recs, in the background when async (waitPut waits for it).
func (r *runner) put(ctx context.Context, recs []*driver.CheckpointRecord, async bool) error {
	op := &saveOp{done: make(chan struct{})}
	r.save = op
	ctx = context.WithoutCancel(ctx)
	b, batches := r.rc.cp.(driver.CheckpointBatcher)
	if _, defers := r.rc.cp.(driver.CheckpointDeferrer); defers && async && (batches || len(recs) == 1) {
		// One call, which the deferrer's contract lets endSave take back
		// while it waits to start.
		op.recs = recs
		ctx, op.cancel = context.WithCancel(ctx)
	}
	put := func() {
		defer close(op.done)
		if batches && len(recs) > 1 {
			op.err = b.PutCheckpoints(ctx, recs)
			return
		}
		for _, rec := range recs {
			if op.err = r.rc.cp.PutCheckpoint(ctx, rec); op.err != nil {
				return
			}
		}
	}
	if async {
		r.rc.wg.Go(put)
		return nil
	}
	put()
	return op.err
}

// flushHeld starts saving the held input checkpoint (in the background, as
// persist would have).
func (r *runner) flushHeld() error {
	h := r.held
	if h == nil {
		return nil
	}
	if err := r.waitPut(); err != nil {
		return err
	}
	r.held = nil
	return r.put(h.ctx, h.recs, true)
}

// endSave ends the saves of a graph that completed. The root graph of a
// run hands the checkpoints it still holds to a CheckpointDeferrer, which
// saves them with the run's end, in the transaction recording it; else,
// and for a subgraph, they are saved now (waitSave).
//
// The save still in flight (the checkpoints saved in the background
// while the last node ran, which under load often still waits for
// storage) is cancelled first: a deferrer's save stops only before it
// starts writing (driver.CheckpointDeferrer), so one that returns
// context.Canceled wrote nothing, and its checkpoints go with the run's
// end too, before the held ones; one that had started completes.
func (r *runner) endSave() error {
	d, ok := r.rc.cp.(driver.CheckpointDeferrer)
	if !ok || r != r.rc.root || r.held == nil {
		return r.waitSave()
	}
	recs := r.held.recs
	if op := r.save; op != nil && op.cancel != nil {
		op.cancel()
		<-op.done
		switch {
		case op.err == nil: // it had started: saved
		case errors.Is(op.err, context.Canceled):
			// Taken back before it started (so it wrote nothing): its
			// checkpoints go first, with the run's end.
			r.save = nil
			recs = append(slices.Clip(op.recs), recs...)
			r.held.recs = recs
		default:
			return op.err
		}
	}
	if !d.DeferCheckpoints(recs) {
		return r.waitSave()
	}
	r.held = nil
	return nil
}

// waitSave waits until every checkpoint persisted so far is saved.
func (r *runner) waitSave() error {
	if err := r.flushHeld(); err != nil {
		return err
	}
	return r.waitPut()
}

// waitPut waits for the save in flight.
func (r *runner) waitPut() error {
	if r.save == nil {
		return nil
	}
	<-r.save.done
	if r.save.cancel != nil {
		r.save.cancel() // releases its context
	}
	return r.save.err
}

func (r *runner) metadata(m graphserver.Object) graphserver.Object {
	out := graphserver.Object{}
	maps.Copy(out, r.rc.req.Metadata)
	maps.Copy(out, m)
	out["parents"] = maps.Clone(r.parents)
	return out
}

// run executes the graph from input (hasInput) or a command, or continues
// from the latest checkpoint. It returns the output values.
func (r *runner) run(ctx context.Context, input any, hasInput bool, cmd *graphserver.RunCommand, fromID string) (any, error) {
	cs, err := load(ctx, r.rc.cp, r.rc.threadID, r.ns, fromID)
	if err != nil {
		return nil, err
	}
	if r.ns == "" && r.rc.req.RunID != "" && fromID != "" {
		// a retried run that forked continues from its own latest checkpoint
		latest, err := load(ctx, r.rc.cp, r.rc.threadID, r.ns, "")
		if err != nil {
			return nil, err
		}
		if latest != nil && latest.runID == r.rc.req.RunID {
			cs = latest
		}
	}
	fresh := cs == nil
	// Run from a checkpoint named by id (a replay or a fork), the first
	// step reruns its tasks rather than reusing the writes saved for them:
	// those are reused only when resuming the latest state (LangGraph's
	// skip_done_tasks is off while config has a checkpoint_id).
	replay := !fresh && fromID != "" && cs.id == fromID
	if !fresh && r.ns == "" && r.rc.req.RunID != "" && cs.runID == r.rc.req.RunID {
		// This run wrote cs: it is a retry (a run released on close or
		// recovered after a crash, claimed again with the same input), so
		// it resumes from cs rather than applying its input or Command over
		// its own progress (LangGraph's _first: a resume when the
		// checkpoint's run_id is the run's).
		input, hasInput, cmd = nil, false, nil
	}
	if fresh {
		cs = emptyCkpt(r.ns)
	} else {
		r.track.loaded(cs)
		r.saved = cs.id
	}
	enterStep := cs.step + 1
	limit := r.rc.recursionLimit
	stop := enterStep + limit + 1
	r.stop = stop
	resuming := false
	switch {
	case cmd != nil:
		if err := r.applyCommandInput(ctx, cs, cmd, fresh); err != nil {
			return nil, err
		}
		resuming = !fresh
	case hasInput:
		cs, err = r.startInput(ctx, cs, input)
		if err != nil {
			return nil, err
		}
	default:
		if fresh {
			return r.g.output(r.g.view(cs)), nil
		}
		resuming = true
	}
	updated := false // a Command's update was applied to cs in place
	advanced := false
	if resuming {
		updated = r.applyNullWrites(cs)
		if cs.seen[chInterrupt] == nil {
			cs.seen[chInterrupt] = map[string]string{}
		}
		maps.Copy(cs.seen[chInterrupt], cs.versions)
		maps.Copy(cs.seen[chInterrupt], cs.triggers)
		r.emit("values", r.g.output(r.g.view(cs)))
	}
	for {
		if err := context.Cause(ctx); err != nil {
			return nil, r.exit(ctx, cs, nil, err)
		}
		step := cs.step + 1
		if step > stop {
			// checked before looking for tasks, as LangGraph's tick does
			return nil, r.exit(ctx, cs, nil, &RecursionError{Limit: limit})
		}
		tasks := r.g.prepare(cs, r.ns)
		r.stepPending = cs.pending
		if replay {
			r.stepPending = resumeWrites(cs.pending)
			replay = false
		}
		attachWrites(tasks, r.stepPending)
		// As LangGraph's tick: the current checkpoint (the input one, the
		// one resumed from, or the last step's, after its values event) is
		// emitted once its next tasks are known.
		if cs.id != "" {
			r.rc.emitCheckpoint(r, cs)
		}
		if len(tasks) == 0 {
			break
		}
		if r.shouldInterrupt(cs, r.rc.before(r), tasks) {
			r.emitInterrupt(nil, true)
			return nil, r.exit(ctx, cs, nil, &interruptError{})
		}
		if !onlyStart(tasks) {
			// A node runs: its input checkpoint is on its way first.
			if err := r.flushHeld(); err != nil {
				return nil, err
			}
		}
		r.resumingStep = resuming && !advanced
		err := r.runTasks(ctx, cs, tasks, step)
		calls, cerr := r.calls.wait()
		r.resumingStep = false
		// the calls' writes are saved with the step's (exit) but applied to
		// no channel; their failures and interrupts reach the run through
		// the tasks that called them
		tasks = append(tasks, calls...)
		if err == nil && cerr == nil {
			cerr = r.liftCallInterrupts(ctx, cs, calls)
		}
		if err = cmp.Or(err, cerr); err != nil {
			return nil, r.exit(ctx, cs, tasks, err)
		}
		if err := context.Cause(ctx); err != nil {
			return nil, r.exit(ctx, cs, tasks, err)
		}
		var intr []graphserver.Interrupt
		interrupted := false
		for _, t := range tasks {
			if t.call != nil {
				continue
			}
			if t.runErr != nil {
				return nil, r.exit(ctx, cs, tasks, t.runErr)
			}
			if t.interrupts != nil {
				interrupted = true
				intr = append(intr, t.interrupts...)
				// one updates chunk per interrupted task (LangGraph's
				// output_writes of the task's INTERRUPT write), emitted once
				// the step's tasks and their calls are done
				r.emit("updates", map[string]any{chInterrupt: t.interrupts})
			}
		}
		if interrupted {
			r.emitInterrupt(intr, false)
			return nil, r.exit(ctx, cs, tasks, &interruptError{interrupts: intr})
		}
		next, updatedChans, err := r.g.apply(cs, tasks, step, r.track, true)
		if err != nil {
			if berr := r.blame(ctx, cs, tasks, err); berr != nil {
				err = errors.Join(err, berr)
			}
			return nil, r.exit(ctx, cs, tasks, err)
		}
		cs, advanced = next, true
		if err := r.persist(ctx, cs, false); err != nil {
			return nil, err
		}
		if r.g.outputUpdated(updatedChans) {
			r.emit("values", r.g.output(r.g.view(cs)))
		}
		if r.shouldInterrupt(cs, r.rc.after(r), tasks) {
			r.emitInterrupt(nil, true)
			return nil, r.exit(ctx, cs, nil, &interruptError{})
		}
	}
	if updated && !advanced {
		// a Command update that scheduled nothing still lands in a new
		// checkpoint, as LangGraph's next tick would write it
		cs = cs.next(cs.step+1, "loop")
		if err := r.persist(ctx, cs, true); err != nil {
			return nil, err
		}
		r.rc.emitCheckpoint(r, cs)
	}
	if err := r.persist(ctx, cs, true); err != nil {
		return nil, err
	}
	if err := r.endSave(); err != nil {
		return nil, err
	}
	r.final = cs
	return r.g.output(r.g.view(cs)), nil
}

// onlyStart reports whether tasks are a lone __start__ task, which runs
// no node (it writes the run's input to the channels).
func onlyStart(tasks []*task) bool {
	return len(tasks) == 1 && tasks[0].name == Start
}

// exit persists what must survive a pause or failure, then returns err.
func (r *runner) exit(ctx context.Context, cs *ckpt, tasks []*task, err error) error {
	wctx := context.WithoutCancel(ctx)
	if perr := r.persist(wctx, cs, true); perr != nil {
		return errors.Join(err, perr)
	}
	if werr := r.waitSave(); werr != nil {
		return errors.Join(err, werr)
	}
	if r.nullWrites != nil && r.nullAt == cs.id && r.saved == cs.id {
		// no step consumed the Command's writes: keep them pending on the
		// checkpoint, as LangGraph's _put_pending_writes does on exit
		if perr := r.rc.cp.PutWrites(wctx, r.rc.threadID, r.ns, cs.id, nullTaskID, r.nullWrites); perr != nil {
			return errors.Join(err, perr)
		}
		r.nullWrites = nil
	}
	// Save the work of the tasks that finished but whose step was not
	// committed (a lone task's writes, or any under durability exit), so
	// that the next run does not run them again. Under durability exit the
	// failures are saved too, as the other modes saved them when they came.
	for _, t := range tasks {
		if t.ran && !t.done && !t.saved && !t.bubble && (t.errRec == nil || r.rc.durability == "exit") {
			if perr := r.putWrites(wctx, cs, t); perr != nil {
				return errors.Join(err, perr)
			}
		}
	}
	return err
}

// emitInterrupt emits what ends a paused step: a values part with the
// interrupts of the step's tasks (the server's run output and the SDKs'
// values streams read it), and for a breakpoint (no task raised anything,
// withUpdates) the updates part {"__interrupt__": []} LangGraph's
// _suppress_interrupt emits; each interrupted task emitted its own updates
// part before.
func (r *runner) emitInterrupt(intr []graphserver.Interrupt, withUpdates bool) {
	// The checkpoint the run pauses at starts saving before the pause is
	// announced, as it did before checkpoints were held (persist): a client
	// that sees the interrupt reads the thread soon after. A failed save
	// comes back from exit's waitSave.
	_ = r.flushHeld()
	if intr == nil {
		intr = []graphserver.Interrupt{}
	}
	if withUpdates {
		r.emit("updates", map[string]any{chInterrupt: intr})
	}
	r.emit("values", map[string]any{chInterrupt: intr})
}

func (r *runner) shouldInterrupt(cs *ckpt, nodes []string, tasks []*task) bool {
	if len(nodes) == 0 {
		return false
	}
	seen := cs.seen[chInterrupt]
	updated := false
	for _, vs := range []map[string]string{cs.versions, cs.triggers} {
		for ch, v := range vs {
			if vcmp(v, seen[ch]) > 0 {
				updated = true
			}
		}
	}
	if !updated {
		return false
	}
	all := slices.Contains(nodes, "*")
	for _, t := range tasks {
		if t.hidden() {
			continue
		}
		if all || slices.Contains(nodes, t.name) {
			return true
		}
	}
	return false
}

// startInput writes the input checkpoint (source "input", with the pending
// tasks of cs discarded).
func (r *runner) startInput(ctx context.Context, cs *ckpt, input any) (*ckpt, error) {
	tasks := r.g.prepare(cs, r.ns)
	next := cs.next(cs.step+1, "input")
	for _, t := range tasks {
		if !t.push {
			markSeen(next, cs, t)
		}
	}
	next.sends = nil
	next.start, next.hasStart = input, true
	next.triggers[Start] = nextVersion(maxVersion(next))
	if err := r.persist(ctx, next, false); err != nil {
		return nil, err
	}
	return next, nil
}

func markSeen(next, cs *ckpt, t *task) {
	if next.seen[t.name] == nil {
		next.seen[t.name] = map[string]string{}
	}
	for _, tr := range t.triggers {
		if v, ok := cs.triggers[tr]; ok {
			next.seen[t.name][tr] = v
		}
	}
}

// applyCommandInput saves a run's Command as writes of the null task.
func (r *runner) applyCommandInput(ctx context.Context, cs *ckpt, cmd *graphserver.RunCommand, fresh bool) error {
	var writes []write
	if len(cmd.Update) > 0 && string(cmd.Update) != "null" {
		ws, err := r.g.updateWrites(cmd.Update)
		if err != nil {
			return err
		}
		writes = append(writes, ws...)
	}
	if len(cmd.Goto) > 0 && string(cmd.Goto) != "null" {
		var g any
		if err := json.Unmarshal(cmd.Goto, &g); err != nil {
			return graphserver.Errorf(graphserver.EINVALID, "command.goto is not valid JSON")
		}
		ws, err := r.g.gotoWrites(gotoFromJSON(g))
		if err != nil {
			return err
		}
		writes = append(writes, ws...)
	}
	if len(cmd.Resume) > 0 && string(cmd.Resume) != "null" {
		var v any
		if err := json.Unmarshal(cmd.Resume, &v); err != nil {
			return graphserver.Errorf(graphserver.EINVALID, "command.resume is not valid JSON")
		}
		if m, ok := v.(map[string]any); ok && len(m) > 0 && isResumeMap(m) {
			r.resumeMap = m
		} else {
			if !fresh && hangingInterrupts(cs.pending) > 1 {
				return &NodeError{Name: "RuntimeError", Message: "When there are multiple pending interrupts, you must specify the interrupt id when resuming. " +
					"Docs: https://docs.langchain.com/oss/python/langgraph/add-human-in-the-loop#resume-multiple-interrupts-with-one-invocation."}
			}
			writes = append(writes, write{chResume, v})
			r.nullValue, r.hasNull = v, true
		}
	}
	if len(writes) == 0 && r.resumeMap == nil {
		return graphserver.Errorf(graphserver.EINVALID, "Received empty Command input")
	}
	// An update the channels reject (two values for a LastValue channel, a
	// message removed that does not exist) fails the run before anything
	// is saved, as LangGraph's _first raises applying the null writes.
	var update []write
	for _, w := range writes {
		if w.ch != chResume {
			update = append(update, w)
		}
	}
	if len(update) > 0 {
		if _, _, err := r.g.apply(cs, []*task{{name: Input, writes: update}}, cs.step, nil, false); err != nil {
			return err
		}
	}
	if fresh {
		// nothing to resume: apply update and goto as a new superstep base
		for _, w := range writes {
			if w.ch != chResume {
				cs.pending = append(cs.pending, driver.PendingWrite{TaskID: nullTaskID, Channel: w.ch, Value: mustJSON(w.v)})
			}
		}
		r.applyNullWrites(cs)
		cs.pending = nil
		return nil
	}
	pws := make([]driver.PendingWrite, 0, len(writes))
	for i, w := range writes {
		pws = append(pws, driver.PendingWrite{TaskID: nullTaskID, TaskPath: "", Idx: i, Channel: w.ch, Value: mustJSON(w.v)})
	}
	if r.rc.durability != "exit" {
		if err := r.rc.cp.PutWrites(ctx, r.rc.threadID, r.ns, cs.id, nullTaskID, pws); err != nil {
			return err
		}
	} else {
		r.nullWrites, r.nullAt = pws, cs.id
	}
	cs.pending = slices.DeleteFunc(cs.pending, func(w driver.PendingWrite) bool { return w.TaskID == nullTaskID })
	cs.pending = append(cs.pending, pws...)
	return nil
}

// hangingInterrupts counts the interrupts pending at a checkpoint that no
// resume value answers, one per interrupted task, as LangGraph's
// _pending_interrupts does (a plain resume value cannot choose among
// several).
func hangingInterrupts(pending []driver.PendingWrite) int {
	interrupted := map[string]string{}
	resumed := map[string]bool{}
	for _, w := range pending {
		switch w.Channel {
		case chInterrupt:
			var l []graphserver.Interrupt
			if json.Unmarshal(w.Value, &l) == nil && len(l) > 0 {
				interrupted[w.TaskID] = l[0].ID
			}
		case chResume:
			resumed[w.TaskID] = true
		}
	}
	hanging := map[string]bool{}
	answered := map[string]bool{}
	for task, id := range interrupted {
		if resumed[task] {
			answered[id] = true
		}
	}
	for _, id := range interrupted {
		if !answered[id] {
			hanging[id] = true
		}
	}
	return len(hanging)
}

// isResumeMap tells whether m maps interrupt ids to values (rather than
// being a single object resume value): all its keys look like interrupt ids
// (32 hex digits). An id that matches no pending interrupt resumes nothing.
func isResumeMap(m map[string]any) bool {
	for k := range m {
		if !isInterruptID(k) {
			return false
		}
	}
	return true
}

func isInterruptID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// applyNullWrites applies the update/goto writes of a run's Command to cs in
// place, and reports whether there were any.
func (r *runner) applyNullWrites(cs *ckpt) bool {
	next, ok := r.g.withNullWrites(cs, r.track)
	if !ok {
		return false
	}
	cs.values, cs.versions, cs.triggers, cs.sends = next.values, next.versions, next.triggers, next.sends
	return true
}

// prepare returns the tasks a checkpoint schedules: pushes (Sends) first,
// then triggered nodes in name order, as LangGraph's prepare_next_tasks
// (their writes apply in task path order all the same, see apply).
func (g *Compiled) prepare(cs *ckpt, ns string) []*task {
	var tasks []*task
	mk := func(name string, path []any, pathKey string, triggers []string) *task {
		id := taskID(cs.id, ns, pathKey)
		tns := name + ":" + id
		if ns != "" {
			tns = ns + "|" + tns
		}
		return &task{id: id, name: name, path: path, pathKey: pathKey, triggers: triggers, ns: tns}
	}
	for i, s := range cs.sends {
		t := mk(s.Node, []any{"__pregel_push", i}, fmt.Sprintf("__pregel_push/%010d", i), []string{"__pregel_push"})
		t.push, t.arg = true, s.Arg
		tasks = append(tasks, t)
	}
	switch {
	case g.entry != "":
		// an entrypoint's node runs on the input itself
		if cs.hasStart && vcmp(cs.triggers[Start], cs.seen[g.entry][Start]) > 0 {
			t := mk(g.entry, []any{"__pregel_pull", g.entry}, "__pregel_pull/"+g.entry, []string{Start})
			t.arg = cs.start
			tasks = append(tasks, t)
		}
	case cs.hasStart && vcmp(cs.triggers[Start], cs.seen[Start][Start]) > 0:
		tasks = append(tasks, mk(Start, []any{"__pregel_pull", Start}, "__pregel_pull/"+Start, []string{Start}))
	}
	for _, n := range g.order {
		var triggers []string
		tr := "branch:to:" + n
		if v, ok := cs.triggers[tr]; ok && vcmp(v, cs.seen[n][tr]) > 0 && g.available(cs, tr) {
			triggers = append(triggers, tr)
		}
		for _, j := range g.joinsTo[n] {
			// a join triggers once all it waits for are done (LangGraph's
			// NamedBarrierValue is available only then)
			if v, ok := cs.triggers[j.ch]; ok && len(cs.joins[j.ch]) == len(j.from) && vcmp(v, cs.seen[n][j.ch]) > 0 && g.available(cs, j.ch) {
				triggers = append(triggers, j.ch)
			}
		}
		if len(triggers) > 0 {
			slices.Sort(triggers)
			tasks = append(tasks, mk(n, []any{"__pregel_pull", n}, "__pregel_pull/"+n, triggers))
		}
	}
	return tasks
}

// nodeInput is the part of state node name reads: the keys of its input
// schema (WithInput), or all of it.
func (g *Compiled) nodeInput(name string, state State) State {
	n := g.nodes[name]
	if n == nil || n.input == nil {
		return state
	}
	in := make(State, len(n.input))
	for _, k := range n.input {
		if v, ok := state[k]; ok {
			in[k] = v
		}
	}
	return in
}

// available reports whether trigger channel ch can trigger its node: a
// deferred node's only once finished.
func (g *Compiled) available(cs *ckpt, ch string) bool {
	if _, ok := g.deferred[ch]; ok {
		return cs.finished[ch]
	}
	return true
}

// finish makes the triggers of deferred nodes available when the step
// just applied triggers no other node (LangGraph's apply_writes calls
// finish() on every channel when the updated channels trigger no node).
func (g *Compiled) finish(next *ckpt, written map[string]bool, nv string) {
	if len(g.deferred) == 0 {
		return
	}
	for ch := range written {
		if _, ok := g.deferred[ch]; ok {
			continue
		}
		if _, ok := next.triggers[ch]; !ok {
			continue
		}
		if rest, ok := strings.CutPrefix(ch, branchPrefix); ok {
			if _, ok := g.nodes[rest]; ok {
				return
			}
			continue
		}
		for _, j := range g.joins {
			if j.ch == ch && len(next.joins[ch]) == len(j.from) {
				return
			}
		}
	}
	for ch, j := range g.deferred {
		if _, ok := next.triggers[ch]; !ok || next.finished[ch] {
			continue
		}
		if j != nil && len(next.joins[ch]) != len(j.from) {
			continue
		}
		if next.finished == nil {
			next.finished = map[string]bool{}
		}
		next.finished[ch] = true
		next.triggers[ch] = nv
	}
}

// resumeWrites keeps of pending the resume values saved for tasks (a
// replayed task interrupting again gets them, as LangGraph's scratchpad
// does), leaving out their writes, errors and interrupts.
func resumeWrites(pending []driver.PendingWrite) []driver.PendingWrite {
	var out []driver.PendingWrite
	for _, w := range pending {
		if w.Channel == chResume && w.TaskID != nullTaskID {
			out = append(out, w)
		}
	}
	return out
}

// attachWrites gives tasks the pending writes saved for them.
func attachWrites(tasks []*task, pending []driver.PendingWrite) {
	byID := map[string]*task{}
	for _, t := range tasks {
		byID[t.id] = t
	}
	ws := slices.Clone(pending)
	slices.SortStableFunc(ws, func(a, b driver.PendingWrite) int { return cmp.Compare(a.Idx, b.Idx) })
	for _, w := range ws {
		t := byID[w.TaskID]
		if t == nil {
			continue
		}
		var v any
		_ = json.Unmarshal(w.Value, &v)
		switch w.Channel {
		case chError:
			t.errRec, _ = v.(map[string]any)
		case chInterrupt:
			var l []graphserver.Interrupt
			_ = json.Unmarshal(w.Value, &l)
			t.interrupts = append(t.interrupts, l...)
		case chResume:
			if l, ok := v.([]any); ok {
				t.resume = l
			}
		default:
			t.done = true
			if w.Channel != chNoWrites {
				t.writes = append(t.writes, write{w.Channel, v})
			}
		}
	}
	for _, t := range tasks {
		if t.done {
			t.interrupts, t.errRec = nil, nil
		}
	}
}

// view returns the state at cs: stored values plus channel defaults.
func (g *Compiled) view(cs *ckpt) State {
	s := make(State, len(g.channels))
	for k, c := range g.channels {
		if v, ok := cs.values[k]; ok {
			if v, ok := c.read(v); ok {
				s[k] = v
			}
		} else if c.hasDef {
			s[k] = c.def
		}
	}
	return s
}

// output returns the output values of state s.
func (g *Compiled) output(s State) any {
	if g.root {
		return s[chRoot]
	}
	out := make(map[string]any, len(g.outputKeys))
	for _, k := range g.outputKeys {
		if v, ok := s[k]; ok {
			out[k] = v
		}
	}
	return out
}

func (g *Compiled) outputUpdated(updated []string) bool {
	for _, u := range updated {
		if slices.Contains(g.outputKeys, u) || (g.root && u == chRoot) {
			return true
		}
	}
	return false
}

// apply applies the writes of finished tasks to cs, returning the next
// checkpoint and the data channels updated.
func (g *Compiled) apply(cs *ckpt, tasks []*task, step int, track tracker, clear bool) (*ckpt, []string, error) {
	next := cs.next(step, "loop")
	tasks = slices.Clone(tasks)
	slices.SortStableFunc(tasks, func(a, b *task) int { return cmp.Compare(a.pathKey, b.pathKey) })
	next.sends = nil
	byChan := map[string][]any{}
	var chOrder []string
	written := map[string]bool{}
	nv := nextVersion(maxVersion(cs))
	// the joins the tasks were triggered by are consumed before the step's
	// writes apply: each waits anew (LangGraph's apply_writes consumes the
	// channels read, then updates)
	for _, t := range tasks {
		if t.push || t.name == Input {
			continue
		}
		for _, tr := range t.triggers {
			if j, ok := g.deferred[tr]; ok && j == nil {
				// LastValueAfterFinish.consume: empty and unfinished
				delete(next.triggers, tr)
				delete(next.finished, tr)
				continue
			}
			if _, ok := next.joins[tr]; ok {
				delete(next.joins, tr)
				delete(next.finished, tr)
				next.triggers[tr] = nv
				written[tr] = true
			}
		}
	}
	for _, t := range tasks {
		if t.name == Start && !t.push {
			next.start, next.hasStart = nil, false
		}
		if !t.push && t.name != Input {
			markSeen(next, cs, t)
		}
		if t.name == Input {
			next.sends = cs.sends
		}
		for _, w := range t.writes {
			switch {
			case w.ch == chTasks:
				var s Send
				b, _ := json.Marshal(w.v)
				_ = json.Unmarshal(b, &s)
				next.sends = append(next.sends, s)
			case strings.HasPrefix(w.ch, "branch:to:"):
				if !written[w.ch] {
					next.triggers[w.ch] = nv
					written[w.ch] = true
					delete(next.finished, w.ch) // a new write waits for a new finish
				}
			case strings.HasPrefix(w.ch, "join:"):
				name, _ := w.v.(string)
				done := next.joins[w.ch]
				if !slices.Contains(done, name) {
					done = append(slices.Clone(done), name)
					slices.Sort(done)
					if next.joins == nil {
						next.joins = map[string][]string{}
					}
					next.joins[w.ch] = done
					next.triggers[w.ch] = nv
					written[w.ch] = true
				}
			default:
				if _, ok := g.channels[w.ch]; !ok {
					continue
				}
				if _, ok := byChan[w.ch]; !ok {
					chOrder = append(chOrder, w.ch)
				}
				byChan[w.ch] = append(byChan[w.ch], w.v)
			}
		}
	}
	if clear {
		// trigger channels last one step (LangGraph's ephemeral branch:to:*)
		for ch := range next.triggers {
			if _, deferred := g.deferred[ch]; !written[ch] && !deferred && !strings.HasPrefix(ch, "join:") {
				delete(next.triggers, ch)
				if ch == Start {
					next.start, next.hasStart = nil, false
				}
			}
		}
	}
	var updated []string
	for _, k := range chOrder {
		c := g.channels[k]
		old, present := next.values[k]
		if !present && c.hasDef {
			old = c.def
		}
		v, appendOnly, err := c.update(k, old, byChan[k])
		if err != nil {
			return nil, nil, &channelError{ch: k, err: err}
		}
		// Every write updates its channel, a reducer's that changes
		// nothing too (BinaryOperatorAggregate.update returns True for any
		// write): the channel gets a new version and the values stream a
		// part. A barrier is updated by a name it had not seen.
		if c.kind == kindBarrier && present && len(v.([]any)) == len(old.([]any)) {
			continue
		}
		if _, avail := c.read(v); c.kind == kindTopic && !avail && !present {
			continue // a Topic written an empty list stays empty
		}
		next.values[k] = v
		next.versions[k] = nv
		if track != nil {
			track.changed(k, appendOnly && present)
		}
		updated = append(updated, k)
	}
	if clear {
		g.finish(next, written, nv)
		// a step notifies the channels it did not write: an EphemeralValue,
		// an AnyValue and a Topic without accumulate empty (apply_writes
		// calls update with no values on them)
		for _, k := range g.chanNames {
			if _, ok := byChan[k]; ok {
				continue
			}
			c := g.channels[k]
			if v, ok := next.values[k]; ok && c.clearsOnStep() {
				if _, avail := c.read(v); !avail {
					continue
				}
				next.values[k] = []any{}
				next.versions[k] = nv
				if track != nil {
					track.changed(k, false)
				}
				updated = append(updated, k)
			}
		}
	}
	return next, updated, nil
}

// channelError is an error applying the writes of a step to channel ch (a
// reducer rejecting a write, two writes to a LastValue channel).
type channelError struct {
	ch  string
	err error
}

func (e *channelError) Error() string { return e.err.Error() }
func (e *channelError) Unwrap() error { return e.err }

// blame records err, an error applying the writes of a step, as the error
// of the tasks that caused it: those whose writes fail on their own, or else
// every task writing the channel err names. Their error is saved in place of
// their writes, so that the thread's state shows it in tasks[].error as it
// shows a failed node's, and State and History agree on the step.
func (r *runner) blame(ctx context.Context, cs *ckpt, tasks []*task, err error) error {
	var culprits []*task
	for _, t := range tasks {
		if len(t.writes) == 0 || t.errRec != nil || t.interrupts != nil {
			continue
		}
		if _, _, e := r.g.apply(cs, []*task{t}, cs.step, nil, false); e != nil {
			culprits = append(culprits, t)
		}
	}
	var ce *channelError
	if len(culprits) == 0 && errors.As(err, &ce) {
		for _, t := range tasks {
			if slices.ContainsFunc(t.writes, func(w write) bool { return w.ch == ce.ch }) {
				culprits = append(culprits, t)
			}
		}
	}
	rec := map[string]any{"error": graphserver.ErrorName(err), "message": err.Error()}
	for _, t := range culprits {
		t.errRec, t.writes, t.runErr, t.saved = rec, nil, err, false
		if perr := r.putWrites(context.WithoutCancel(ctx), cs, t); perr != nil {
			return perr
		}
	}
	return nil
}

// maxVersion returns the greatest version known at c. As in LangGraph, all
// channels written in one step get the next version after it.
func maxVersion(c *ckpt) string {
	v := ""
	for _, m := range []map[string]string{c.versions, c.triggers} {
		for _, x := range m {
			if vcmp(x, v) > 0 {
				v = x
			}
		}
	}
	for _, s := range c.seen {
		for _, x := range s {
			if vcmp(x, v) > 0 {
				v = x
			}
		}
	}
	return v
}

// runTasks runs the unfinished tasks of a step in parallel and records their
// writes. It returns an error only for infrastructure failures.
func (r *runner) runTasks(ctx context.Context, cs *ckpt, tasks []*task, step int) error {
	state := r.g.view(cs)
	for k, c := range r.g.managed {
		state[k] = c.managed(step, r.stop)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var perr error
	r.calls = newStepCalls(ctx, r.stepPending)
	for _, t := range tasks {
		if t.done {
			continue
		}
		t.interrupts, t.errRec = nil, nil
		if r.fromCache(ctx, t, state) {
			continue
		}
		r.rc.taskStart(r, t, step, state)
	}
	// A lone task's successful writes need no saving: the checkpoint that
	// follows holds them, and nothing else in the step could fail.
	alone := len(tasks) == 1
	run := func(t *task) {
		if !t.cached {
			r.execTask(ctx, cs, state, t, step)
			r.toCache(ctx, t, state)
		}
		if t.bubble || (alone && t.errRec == nil && t.interrupts == nil) {
			return
		}
		if err := r.putWrites(ctx, cs, t); err != nil {
			mu.Lock()
			perr = cmp.Or(perr, err)
			mu.Unlock()
		}
	}
	if alone {
		// As LangGraph's PregelRunner.tick, a lone task runs in the loop's
		// own goroutine (no goroutine to start, no stack to grow anew).
		if !tasks[0].done {
			run(tasks[0])
		}
		return perr
	}
	for _, t := range tasks {
		if !t.done {
			wg.Go(func() { run(t) })
		}
	}
	wg.Wait()
	return perr
}

func (r *runner) putWrites(ctx context.Context, cs *ckpt, t *task) error {
	if r.rc.durability == "exit" && r.saved != cs.id {
		return nil
	}
	if err := r.waitSave(); err != nil {
		return err
	}
	var ws []write
	switch {
	case t.errRec != nil:
		ws = []write{{chError, t.errRec}}
	case t.interrupts != nil:
		if len(t.resume) > 0 {
			ws = append(ws, write{chResume, t.resume})
		}
		ws = append(ws, write{chInterrupt, t.interrupts})
	default:
		ws = t.writes
		if len(ws) == 0 {
			ws = []write{{chNoWrites, nil}}
		}
	}
	pws := make([]driver.PendingWrite, len(ws))
	for i, w := range ws {
		pws[i] = driver.PendingWrite{TaskID: t.id, TaskPath: t.pathKey, Idx: i, Channel: w.ch, Value: mustJSON(w.v)}
	}
	if err := r.rc.cp.PutWrites(context.WithoutCancel(ctx), r.rc.threadID, r.ns, cs.id, t.id, pws); err != nil {
		return err
	}
	t.saved = true
	return nil
}

func mustJSON(v any) json.RawMessage {
	b, err := record.MarshalJSON(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// execTask runs one task and fills its writes, interrupts or error.
func (r *runner) execTask(ctx context.Context, cs *ckpt, state State, t *task, step int) {
	var in State
	if t.push {
		if m, ok := t.arg.(map[string]any); ok {
			in = State(m)
		} else {
			in = State{}
		}
	} else {
		in = r.g.nodeInput(t.name, state)
	}
	var out any
	var err error
	var pc *parentCommand
	var ie *interruptError
	for attempt := 1; ; attempt++ {
		out, err = r.attempt(ctx, cs, state, in, t, step)
		if err == nil || errors.As(err, &ie) || errors.As(err, &pc) || context.Cause(ctx) != nil {
			break
		}
		nd := r.g.nodes[t.name]
		if nd == nil {
			break
		}
		policy, wait := nd.retryFor(err, attempt)
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
		t.writes = nil
	case errors.As(err, &pc):
		// the Command goes on up to the graph above this one: this task
		// neither finished nor failed (a GraphBubbleUp in LangGraph)
		t.runErr, t.bubble, t.writes = err, true, nil
		t.ran = true
		return
	case err != nil && stoppedBy(ctx, err):
		// The run was cancelled (or ran out of time) under the node, which
		// gave up: the task did not fail, it was stopped, and it runs again
		// when the thread is resumed. Nothing is recorded for it, so the
		// thread's state shows it pending, without an error (a chat page
		// reloaded after Stop shows no error).
		t.runErr, t.bubble, t.writes = err, true, nil
		t.ran = true
		return
	case err != nil:
		t.runErr = err
		t.errRec = map[string]any{"error": graphserver.ErrorName(err), "message": err.Error()}
		t.writes = nil
	}
	t.ran = true
	r.rc.taskEnd(r, t, step, out)
}

// stoppedBy reports whether err is the end of ctx (the run's), seen by a
// node that gave up because of it.
func stoppedBy(ctx context.Context, err error) bool {
	cause := context.Cause(ctx)
	return cause != nil && (errors.Is(err, cause) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// attempt runs a task once (LangGraph's run_with_retry runs it again on a
// retried failure, its writes cleared): the node, then its writes.
func (r *runner) attempt(ctx context.Context, cs *ckpt, state, in State, t *task, step int) (any, error) {
	tr := &taskRuntime{r: r, t: t, step: step, cs: cs, calls: r.calls}
	ctx = context.WithValue(ctx, taskKey{}, tr)
	t.writes, t.update = nil, nil
	out, err := r.call(ctx, tr, in)
	if err == nil {
		err = r.writesFor(ctx, cs, t, state, out)
	}
	var pc *parentCommand
	if errors.As(err, &pc) && pc.from == t.ns {
		// a node of this task's subgraph sent its Command to this graph:
		// the task ends as if it had returned it (LangGraph's run_with_retry
		// runs the task's writers on a ParentCommand meant for its graph)
		cmd := pc.cmd
		out = &cmd
		err = r.writesFor(ctx, cs, t, state, out)
	}
	return out, err
}

// parentCommand carries a Command a node returned for its parent graph
// (Command.Graph == Parent) up to the task of the parent graph that runs
// the node's graph (LangGraph's ParentCommand exception).
type parentCommand struct {
	cmd  Command // Graph cleared
	from string  // namespace of the graph the node belongs to
}

func (e *parentCommand) Error() string {
	return "a Command for the parent graph reached no parent graph"
}
func (e *parentCommand) ErrorName() string { return "ParentCommand" }

func (r *runner) call(ctx context.Context, tr *taskRuntime, in State) (out any, err error) {
	t := tr.t
	defer func() {
		if p := recover(); p != nil {
			err = &NodeError{Name: "PanicError", Message: fmt.Sprintf("node %s panicked: %v\n%s", t.name, p, debug.Stack())}
		}
	}()
	if t.name == Start && !t.push {
		return nil, nil
	}
	n := r.g.nodes[t.name]
	if n == nil {
		return nil, fmt.Errorf("task of unknown node %q", t.name)
	}
	if n.fn == nil {
		return tr.invoke(ctx, n.subgraph, map[string]any(in))
	}
	return n.fn(ctx, in)
}

// writesFor turns a node's output into writes: channel updates, then the
// edges and branches out of the node.
func (r *runner) writesFor(ctx context.Context, cs *ckpt, t *task, state State, out any) error {
	g := r.g
	var ws []write
	var gotoWs []write
	if t.name == Start && !t.push {
		iw, err := g.inputWrites(cs.start)
		if err != nil {
			return err
		}
		ws = iw
	} else {
		// A node returns an update, a Command, or a list mixing Commands
		// and updates (LangGraph's _get_updates and _control_branch: each
		// Command's update and goto apply, in order).
		outs, cmds := []any{out}, []*Command{nil}
		if l, ok := commandList(out); ok {
			outs, cmds = l, make([]*Command, len(l))
		}
		for i, o := range outs {
			switch c := o.(type) {
			case *Command:
				cmds[i] = c
			case Command:
				cmds[i] = &c
			}
		}
		for _, cmd := range cmds {
			if cmd == nil || cmd.Graph == "" {
				continue
			}
			switch {
			case cmd.Graph != Parent:
				return &NodeError{Name: "InvalidUpdateError", Message: fmt.Sprintf("Command.Graph %q is not graph.Parent", cmd.Graph)}
			case r.ns == "":
				return &NodeError{Name: "InvalidUpdateError", Message: "There is no parent graph"}
			}
			up := *cmd
			up.Graph = ""
			return &parentCommand{cmd: up, from: ownNS(r.ns)}
		}
		var shown []any
		for i, upd := range outs {
			if cmd := cmds[i]; cmd != nil {
				upd = cmd.Update
				if cmd.Goto != nil {
					gw, err := g.gotoWrites(cmd.Goto)
					if err != nil {
						return err
					}
					gotoWs = append(gotoWs, gw...)
				}
			}
			uw, update, err := g.nodeWrites(upd)
			if err != nil {
				return err
			}
			ws = append(ws, uw...)
			if update != nil {
				shown = append(shown, update)
			}
		}
		switch {
		case len(outs) == 1 && len(shown) == 1:
			t.update = shown[0]
		case len(shown) > 0:
			t.update = shown
		}
	}
	// edges
	for _, to := range g.edges[t.name] {
		if to != End {
			ws = append(ws, write{"branch:to:" + to, nil})
		}
	}
	for _, j := range g.joinsFrom[t.name] {
		ws = append(ws, write{j.ch, t.name})
	}
	if bs := g.branches[t.name]; len(bs) > 0 {
		fresh := state
		if len(ws) > 0 {
			tmp := &ckpt{values: map[string]any{}, versions: map[string]string{}, triggers: map[string]string{}, seen: map[string]map[string]string{}}
			for k, v := range state {
				tmp.values[k] = v
			}
			next, _, err := g.apply(tmp, []*task{{name: Input, writes: ws}}, 0, nil, false)
			if err == nil {
				fresh = g.view(next)
			}
		}
		for _, b := range bs {
			res, err := callRouter(ctx, b.router, fresh)
			if err != nil {
				return err
			}
			bw, err := g.routeWrites(res, b.pathMap)
			if err != nil {
				return err
			}
			ws = append(ws, bw...)
		}
	}
	t.writes = append(ws, gotoWs...)
	return nil
}

// callRouter runs a router. A router returning an error (the one Interrupt
// gave it, to pause the graph there) fails or pauses the task as its node
// would.
func callRouter(ctx context.Context, fn RouterFunc, s State) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &NodeError{Name: "PanicError", Message: fmt.Sprintf("router panicked: %v", p)}
		}
	}()
	res = fn(ctx, s)
	if e, ok := res.(error); ok {
		return nil, e
	}
	return res, nil
}

// commandList returns the elements of a node's output that is a list
// holding at least one Command.
func commandList(out any) ([]any, bool) {
	var l []any
	switch o := out.(type) {
	case []Command:
		for _, c := range o {
			l = append(l, c)
		}
	case []*Command:
		for _, c := range o {
			l = append(l, c)
		}
	case []any:
		l = o
	default:
		return nil, false
	}
	for _, e := range l {
		switch e.(type) {
		case Command, *Command:
			return l, true
		}
	}
	return nil, false
}

func (g *Compiled) routeWrites(res any, pathMap map[string]string) ([]write, error) {
	dest := func(n string) (string, error) {
		if pathMap != nil {
			d, ok := pathMap[n]
			if !ok {
				return "", &NodeError{Name: "InvalidUpdateError", Message: fmt.Sprintf("router returned %q, which is not in its path map", n)}
			}
			return d, nil
		}
		return n, nil
	}
	var ws []write
	var add func(v any) error
	add = func(v any) error {
		switch v := v.(type) {
		case nil:
			return nil
		case string:
			d, err := dest(v)
			if err != nil {
				return err
			}
			if d == End {
				return nil
			}
			if _, ok := g.nodes[d]; !ok {
				return &NodeError{Name: "InvalidUpdateError", Message: fmt.Sprintf("router returned unknown node %q", d)}
			}
			ws = append(ws, write{"branch:to:" + d, nil})
		case Send:
			if _, ok := g.nodes[v.Node]; !ok {
				return &NodeError{Name: "InvalidUpdateError", Message: fmt.Sprintf("Send to unknown node %q", v.Node)}
			}
			arg, err := normalize(v.Arg)
			if err != nil {
				return err
			}
			ws = append(ws, write{chTasks, Send{Node: v.Node, Arg: arg}})
		case *Send:
			return add(*v)
		case []string:
			for _, s := range v {
				if err := add(s); err != nil {
					return err
				}
			}
		case []Send:
			for _, s := range v {
				if err := add(s); err != nil {
					return err
				}
			}
		case []any:
			for _, s := range v {
				if err := add(s); err != nil {
					return err
				}
			}
		default:
			return &NodeError{Name: "InvalidUpdateError", Message: fmt.Sprintf("router returned %T; want a node name, a Send or a list of them", v)}
		}
		return nil
	}
	return ws, add(res)
}

func (g *Compiled) gotoWrites(v any) ([]write, error) { return g.routeWrites(v, nil) }

// gotoFromJSON converts a wire goto ({node, input} objects become Sends).
func gotoFromJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		n, _ := v["node"].(string)
		arg, ok := v["input"]
		if !ok {
			arg = v["arg"]
		}
		return Send{Node: n, Arg: arg}
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = gotoFromJSON(e)
		}
		return out
	}
	return v
}

// nodeWrites turns a node's update into channel writes and the update shown
// in the updates stream.
func (g *Compiled) nodeWrites(upd any) ([]write, any, error) {
	if upd == nil {
		return nil, nil, nil
	}
	if e, ok := upd.(entryResult); ok {
		return entryWrites(e)
	}
	v, err := normalize(upd)
	if err != nil {
		return nil, nil, err
	}
	if g.root {
		if g.entry != "" {
			// an update as the entrypoint is saved for its next run too,
			// as its writers write both (LangGraph's END and PREVIOUS)
			return []write{{chRoot, v}, {chPrevious, v}}, v, nil
		}
		return []write{{chRoot, v}}, v, nil
	}
	var ws []write
	switch o := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(o)) {
			if c, ok := g.channels[k]; ok {
				if c.kind == kindMessages {
					o[k] = withMessageIDs(o[k])
				}
				ws = append(ws, write{k, o[k]})
			}
		}
		return ws, o, nil
	case []any:
		// a list of [key, value] pairs
		shown := map[string]any{}
		for _, e := range o {
			p, ok := e.([]any)
			if !ok || len(p) != 2 {
				return nil, nil, &NodeError{Name: "InvalidUpdateError", Message: "a list update must hold [key, value] pairs"}
			}
			k, _ := p[0].(string)
			if c, ok := g.channels[k]; ok {
				if c.kind == kindMessages {
					p[1] = withMessageIDs(p[1])
				}
				ws = append(ws, write{k, p[1]})
				shown[k] = p[1]
			}
		}
		return ws, shown, nil
	case nil:
		return nil, nil, nil
	}
	return nil, nil, &NodeError{Name: "InvalidUpdateError", Message: fmt.Sprintf("Expected dict, got %v", v)}
}

// withMessageIDs gives a UUID to each message object (a map) of a node's
// write to a messages channel that has none, as LangChain's add-messages
// does in place: the node's update (and its stream events) then carry the
// id the message gets in the state. v is a freshly normalized value.
func withMessageIDs(v any) any {
	if inner, ok := overwriteValue(v); ok {
		withMessageIDs(inner)
		return v
	}
	set := func(e any) {
		if m, ok := e.(map[string]any); ok && m["type"] != RemoveMessage {
			if id, _ := m["id"].(string); id == "" {
				m["id"] = uuid.NewString()
			}
		}
	}
	if l, ok := v.([]any); ok {
		for _, e := range l {
			set(e)
		}
	} else {
		set(v)
	}
	return v
}

// updateWrites decodes a Command.update or state update body.
func (g *Compiled) updateWrites(raw json.RawMessage) ([]write, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, graphserver.Errorf(graphserver.EINVALID, "update is not valid JSON")
	}
	ws, _, err := g.nodeWrites(v)
	return ws, err
}

// inputWrites maps run input to channel writes plus the edges out of Start.
func (g *Compiled) inputWrites(input any) ([]write, error) {
	if g.root {
		return []write{{chRoot, input}}, nil
	}
	var ws []write
	switch in := input.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(in)) {
			if slices.Contains(g.inputKeys, k) {
				ws = append(ws, write{k, in[k]})
			}
		}
	case nil:
	default:
		return nil, &NodeError{Name: "InvalidUpdateError", Message: fmt.Sprintf("Expected dict, got %v", input)}
	}
	return ws, nil
}

// timestamp formats t as the debug stream does.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000+00:00") }
