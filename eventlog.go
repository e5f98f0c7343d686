package graphserver

import (
	"context"
	"encoding/json"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// eventLog is the append-only event log of one run in this process. Any
// number of readers follow it by position; nobody consumes events, so
// readers never steal events from each other. It is safe for concurrent use.
//
// A log is live while an execution of the run in this process (one attempt)
// appends to it (attached). A log created with the run but not attached yet
// may never be: another process may execute the run, so readers of an
// unattached log also watch storage.
type eventLog struct {
	runID     string
	threadID  string
	resumable bool
	// threadMeta is the metadata of the run's thread when the run was
	// created: access control checks it when the thread is gone (a
	// stateless run's temporary thread). Guarded by the registry's mu
	// (a thread run's is known once its insertion committed).
	threadMeta Metadata
	hub        *threadHub // the thread streams the log's events also go to; nil: none

	mu       sync.Mutex
	events   []StreamEvent
	base     int   // position (id) of events[0]: earlier events were dropped
	size     int64 // bytes held by events
	maxSize  int64 // Options.MaxEventLogBytes; <= 0: no bound
	done     bool
	attached bool          // an execution in this process appends to it
	released bool          // ended without an outcome: its execution gave the run up
	ending   bool          // its execution is recording the run's end, and ends the log after
	wake     chan struct{} // closed and replaced on every change
	output   json.RawMessage
	status   string    // final run status once done ("" for a rollback)
	expires  time.Time // when the log may be dropped; zero while the run lives

	// With an EventStorage: the position up to which events are stored,
	// and the lock serializing the writes (eventWriter.flush).
	stored  int
	storeMu sync.Mutex
}

func newEventLog(runID, threadID string, resumable bool) *eventLog {
	return &eventLog{runID: runID, threadID: threadID, resumable: resumable, wake: make(chan struct{})}
}

// append adds one event and wakes the readers.
func (l *eventLog) append(event string, data json.RawMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return
	}
	l.appendLocked(event, data)
}

// appendLocked appends an event to the log, which is not done; l.mu is
// held.
func (l *eventLog) appendLocked(event string, data json.RawMessage) {
	l.events = append(l.events, StreamEvent{ID: strconv.Itoa(l.base + len(l.events)), Event: event, Data: data})
	l.size += eventSize(event, data)
	// Over the bound, the oldest events go (the newest always stays):
	// readers that need them get ErrEventsDropped, never a silent gap.
	for l.maxSize > 0 && l.size > l.maxSize && len(l.events) > 1 {
		l.size -= eventSize(l.events[0].Event, l.events[0].Data)
		l.events[0] = StreamEvent{}
		l.events = l.events[1:]
		l.base++
	}
	l.changed()
	if l.hub != nil {
		// Under l.mu: the thread sees the run's order.
		l.hub.publishRun(l.threadID, l.runID, l.attached, event, data, l.resumable)
	}
}

// eventSize is what an event counts against Options.MaxEventLogBytes: its
// name and data, and a fixed overhead for its id and bookkeeping.
func eventSize(event string, data json.RawMessage) int64 {
	return int64(len(event) + len(data) + 64)
}

// changed wakes the readers; l.mu is held.
func (l *eventLog) changed() {
	close(l.wake)
	l.wake = make(chan struct{})
}

// finish ends the log with the run's final status and output.
func (l *eventLog) finish(status string, output json.RawMessage, expires time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return
	}
	l.finishLocked(status, output, expires)
}

// fail ends the log of a run that failed outside its execution (the sweep
// ended it, status error): its error event last, and the output a wait
// answers for it, in one step, so that no event of an execution still
// going comes after the error.
func (l *eventLog) fail(errData json.RawMessage, expires time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return
	}
	l.appendLocked("error", errData)
	l.finishLocked(RunError, marshalOutput(map[string]json.RawMessage{"__error__": errData}), expires)
}

// finishLocked ends the log, which is not done; l.mu is held.
func (l *eventLog) finishLocked(status string, output json.RawMessage, expires time.Time) {
	l.done, l.status, l.output, l.expires = true, status, output, expires
	l.changed()
	if l.hub != nil {
		l.hub.publishDone(l.threadID, l.runID, l.resumable, status)
	}
}

// release ends the log without an outcome: the execution appending to it
// gave the run up (server closing, lease lost), and a later attempt, here or
// elsewhere, will run it.
func (l *eventLog) release(expires time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return
	}
	l.done, l.released, l.expires = true, true, expires
	l.changed()
	if l.hub != nil && l.attached {
		l.hub.releaseRun(l.threadID, l.runID)
	}
}

// markEnding records that the log's execution is recording the run's end:
// the execution ends the log after, whatever the outcome (see endsHere).
func (l *eventLog) markEnding() {
	l.mu.Lock()
	l.ending = true
	l.mu.Unlock()
}

// endsHere reports whether the log's execution is recording the run's
// end, and so ends the log itself: the run's thread may already be gone
// (a stateless run deletes its temporary thread as it ends) while the log
// waits for its outcome.
func (l *eventLog) endsHere() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ending
}

// attach marks the log as appended to by an execution. It reports false
// when the log ended or another execution holds it.
func (l *eventLog) attach() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done || l.attached {
		return false
	}
	l.attached = true
	l.changed()
	if l.hub != nil {
		l.hub.startRun(l.threadID, l.runID)
	}
	return true
}

// read returns the events from position from on, whether the log has ended,
// and a channel closed at the next change. It returns ErrEventsDropped when
// the event at from was dropped (Options.MaxEventLogBytes).
func (l *eventLog) read(from int) ([]StreamEvent, bool, <-chan struct{}, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if from < l.base {
		return nil, l.done, l.wake, errEventsDropped(l.base)
	}
	var evs []StreamEvent
	if i := from - l.base; i < len(l.events) {
		evs = l.events[i:len(l.events):len(l.events)]
	}
	return evs, l.done, l.wake, nil
}

// ErrEventsDropped is the code of the error a stream of a run gets when it
// needs events its run's log no longer holds: the log outgrew
// Options.MaxEventLogBytes and its oldest events were dropped. The stream
// (a join from the start, a resume from an old Last-Event-ID, or a reader
// that fell too far behind) fails with it instead of skipping them. Its
// code is EUNAVAILABLE (503 over HTTP); the message names the first event
// still held.
var ErrEventsDropped = Errorf(EUNAVAILABLE, "Events of this run were dropped: its event log outgrew its size limit.")

// errEventsDropped is ErrEventsDropped naming the first event still held;
// errors.Is matches it to ErrEventsDropped.
func errEventsDropped(first int) error {
	return &droppedError{first: first}
}

type droppedError struct{ first int }

func (e *droppedError) Error() string { return ErrEventsDropped.Error() }

func (e *droppedError) Unwrap() error {
	return &Error{Code: EUNAVAILABLE, Message: "Events of this run before id " + strconv.Itoa(e.first) +
		" were dropped: its event log outgrew its size limit. Resume from a later event id."}
}

func (e *droppedError) Is(target error) bool { return target == ErrEventsDropped }

// logState is a snapshot of a log's state.
type logState struct {
	done, released, attached bool
	output                   json.RawMessage
	wake                     <-chan struct{}
}

func (l *eventLog) state() logState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return logState{done: l.done, released: l.released, attached: l.attached, output: l.output, wake: l.wake}
}

// parseLastEventID returns the log position after id: "", "-1" and "-" mean
// the start. Ids of the "<ms>-<seq>" form are not ours: they replay all.
func parseLastEventID(id string) int {
	id = strings.TrimSpace(id)
	n, err := strconv.Atoi(id)
	if err != nil || n < 0 {
		return 0
	}
	return n + 1
}

// ErrRunReleased ends a run's stream when the execution it followed gave
// the run up without an outcome (the server closing, or its lease lost): the
// run goes on in a later attempt, here or in another process. Join the run
// again (with the last event id) to follow it.
var ErrRunReleased = Errorf(EUNAVAILABLE, "The run was released by its worker; join it again to follow its next attempt.")

// RunStream follows one run's events. Create it with StreamRun or
// JoinRunStream. It is owned by one consumer.
type RunStream struct {
	// Run is the run followed, as it was when the stream was opened.
	Run *Run

	s            *Server
	log          *eventLog // the run's log in this process when opened, if any
	from         int
	modes        []string // filter on base mode; nil = all
	cancelOnDrop bool
}

// follower tracks which log of a run a reader follows: the run's log in this
// process while one is live, else storage. It registers the run with the
// run watches for as long as it follows, so that it wakes once when the
// run's log here appears or changes hands and once when the run's status in
// storage changes (the watches poll storage for every watched run together,
// see runQueue.watchRuns), instead of querying storage itself every poll
// interval.
type follower struct {
	s       *Server
	runID   string
	log     *eventLog
	stale   *eventLog // a log found released: storage is followed instead
	release func()    // ends the watch registration
	tick    *time.Ticker
}

// current returns the log to follow (nil: follow storage) and a channel
// closed when the run's log in this process is added or replaced, or its
// status in storage changes.
func (f *follower) current() (*eventLog, <-chan struct{}) {
	if f.release == nil {
		f.release = f.s.rq.logs.watches.add(f.runID)
	}
	cur, changed := f.s.rq.logs.watch(f.runID)
	if f.log == nil && cur != f.stale {
		f.log = cur
	}
	return f.log, changed
}

// poll returns a channel ticking every poll interval while the server is
// not started: then no watcher polls storage for this follower (a run
// created here may be executed by another process), so it polls itself.
// Once the server is started it returns nil (never ready).
func (f *follower) poll() <-chan time.Time {
	if f.s.rq.watching() {
		if f.tick != nil {
			f.tick.Stop()
			f.tick = nil
		}
		return nil
	}
	if f.tick == nil {
		f.tick = time.NewTicker(f.s.rq.pollInterval)
	}
	return f.tick.C
}

func (f *follower) stop() {
	if f.tick != nil {
		f.tick.Stop()
	}
	if f.release != nil {
		f.release()
	}
}

// Events returns the run's events: those already logged after the stream's
// starting point, then live ones, until the run ends, ctx ends or the server
// closes. When ctx ends (or the loop stops) before the run ends and the
// stream was opened with on_disconnect cancel / cancel_on_disconnect, the run
// is cancelled with action interrupt.
//
// A run this process does not execute (another process does, or it ended
// and its log is gone) is followed through storage: a metadata event
// {run_id, attempt}, then, once the run ends, an error event if it failed.
// Such synthesized events have an empty ID. When the execution followed
// gives the run up (server closing, lease lost), the sequence ends with
// ErrRunReleased, or ErrServerClosed when the server closes.
func (st *RunStream) Events(ctx context.Context) iter.Seq2[StreamEvent, error] {
	return func(yield func(StreamEvent, error) bool) {
		s := st.s
		if s.rq.events != nil {
			st.sharedEvents(ctx, yield)
			return
		}
		defer s.subscribe()()
		f := &follower{s: s, runID: st.Run.RunID, log: st.log}
		defer f.stop()
		pos := st.from
		announced := false // metadata synthesized
		sawLive := false   // an execution here was followed: its release ends the stream
		checkNow := f.log == nil
		for {
			log, changed := f.current()
			var wake <-chan struct{}
			if log != nil {
				evs, done, w, err := log.read(pos)
				if err != nil {
					yield(StreamEvent{}, err)
					return
				}
				for _, ev := range evs {
					pos++
					if !st.pass(ev.Event) {
						continue
					}
					if !yield(ev, nil) {
						st.dropped(log)
						return
					}
				}
				if len(evs) > 0 {
					continue
				}
				ls := log.state()
				switch {
				case done && !ls.released:
					return
				case done:
					if cur := s.rq.logs.get(st.Run.RunID); cur != nil && cur != log {
						f.log = cur // the next attempt runs here: its log carries on the ids
						continue
					}
					if !sawLive {
						// Released before this stream saw it live: follow storage.
						f.stale, f.log, checkNow = log, nil, true
						continue
					}
					yield(StreamEvent{}, ErrRunReleased)
					return
				case ls.attached:
					sawLive = true
					select {
					case <-w:
					case <-ctx.Done():
						st.dropped(log)
						yield(StreamEvent{}, context.Cause(ctx))
						return
					case <-s.lifetime.Done():
						yield(StreamEvent{}, ErrServerClosed)
						return
					}
					continue
				}
				wake = w
			} else if !announced && pos == st.from {
				announced = true
				attempt := max(st.Run.Attempt, 1)
				if !yield(StreamEvent{Event: "metadata", Data: marshalOutput(map[string]any{"run_id": st.Run.RunID, "attempt": attempt})}, nil) {
					st.dropped(nil)
					return
				}
			}
			// Not executed here (yet): watch storage too.
			if checkNow {
				checkNow = false
				ended, errData, err := s.runEnded(ctx, st.Run.ThreadID, st.Run.RunID)
				if err != nil {
					yield(StreamEvent{}, err)
					return
				}
				if ended {
					// The run may have started here, logged its events and
					// ended while storage was read: the log (or a log added
					// since) then holds them, and the error event if any.
					if logMoved(wake, changed) {
						checkNow = true
						continue
					}
					if errData != nil {
						yield(StreamEvent{Event: "error", Data: errData}, nil)
					}
					return
				}
			}
			select {
			case <-wake:
			case <-changed:
				checkNow = true
			case <-f.poll():
				checkNow = true
			case <-ctx.Done():
				st.dropped(log)
				yield(StreamEvent{}, context.Cause(ctx))
				return
			case <-s.lifetime.Done():
				yield(StreamEvent{}, ErrServerClosed)
				return
			}
		}
	}
}

// dropped cancels the run when the consumer left early and asked for it.
func (st *RunStream) dropped(log *eventLog) {
	if !st.cancelOnDrop {
		return
	}
	if log != nil {
		if ls := log.state(); ls.done && !ls.released {
			return
		}
	}
	ctx := context.WithoutCancel(st.s.lifetime)
	if err := st.s.CancelRun(ctx, st.Run.ThreadID, st.Run.RunID, CancelInterrupt); err != nil && ErrorCode(err) != ENOTFOUND {
		st.s.logger.Warn("cancel run on disconnect", "run_id", st.Run.RunID, "err", err)
	}
}

// Wait blocks until the run ends and returns its final output as the HTTP
// API answers it: the last values, the interrupt chunk, or
// {"__error__": {...}} with a nil error for a failed run (WaitRun and
// JoinRun return a *RunFailedError instead). A run this process does not execute is awaited
// through storage. When ctx ends first it returns ctx's cause, after
// cancelling the run if the stream was opened with on_disconnect cancel.
func (st *RunStream) Wait(ctx context.Context) (json.RawMessage, error) {
	s := st.s
	defer s.subscribe()()
	f := &follower{s: s, runID: st.Run.RunID, log: st.log}
	defer f.stop()
	checkNow := f.log == nil
	for {
		log, changed := f.current()
		var wake <-chan struct{}
		if log != nil {
			ls := log.state()
			switch {
			case ls.done && !ls.released && ls.output != nil:
				return ls.output, nil
			case ls.done && !ls.released:
				return s.finishedOutput(ctx, st.Run.ThreadID, st.Run.RunID)
			case ls.done:
				if cur := s.rq.logs.get(st.Run.RunID); cur != nil && cur != log {
					f.log = cur
					continue
				}
				// Released: a later attempt, maybe elsewhere, ends the run.
				f.stale, f.log, checkNow = log, nil, true
				continue
			case ls.attached:
				select {
				case <-ls.wake:
				case <-ctx.Done():
					st.dropped(log)
					return nil, context.Cause(ctx)
				case <-s.lifetime.Done():
					return nil, ErrServerClosed
				}
				continue
			}
			wake = ls.wake
		}
		if checkNow {
			checkNow = false
			out, ended, err := s.runOutput(ctx, st.Run.ThreadID, st.Run.RunID)
			if err == nil && ended && logMoved(wake, changed) {
				// Another attempt may have started here, ended and, for a
				// stateless run, been deleted with its thread while storage
				// was read: its log (registered since) holds the output
				// that storage no longer has. As in Events.
				checkNow = true
				continue
			}
			if err != nil || ended {
				return out, err
			}
		}
		select {
		case <-wake:
		case <-changed:
			checkNow = true
		case <-f.poll():
			checkNow = true
		case <-ctx.Done():
			st.dropped(log)
			return nil, context.Cause(ctx)
		case <-s.lifetime.Done():
			return nil, ErrServerClosed
		}
	}
}

// logMoved reports, without waiting, whether the followed log changed
// (wake) or another log of the run was registered (changed) since they
// were taken: what storage said meanwhile may be older than the logs.
func logMoved(wake, changed <-chan struct{}) bool {
	select {
	case <-wake:
		return true
	case <-changed:
		return true
	default:
		return false
	}
}

// pass applies the join-stream mode filter.
func (st *RunStream) pass(event string) bool {
	if len(st.modes) == 0 || event == "metadata" || event == "error" {
		return true
	}
	base, _, _ := strings.Cut(event, "|")
	for _, m := range st.modes {
		switch {
		case m == base:
			return true
		case m == "messages-tuple" && base == "messages":
			return true
		case m == "messages" && strings.HasPrefix(base, "messages"):
			return true
		}
	}
	return false
}

// logRegistry holds the event logs of the runs of this process, and the
// watches of the runs followed here.
type logRegistry struct {
	mu      sync.Mutex
	logs    map[string]*eventLog
	watches runWatches
	hub     threadHub // the logs' events fanned out per thread (thread streams)
	maxSize int64     // Options.MaxEventLogBytes of each log; <= 0: unbounded
}

func (r *logRegistry) get(runID string) *eventLog {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs[runID]
}

// watch returns the log of a run (nil if none) and a channel closed when
// the run's log is next added or replaced, or its watched status changes.
func (r *logRegistry) watch(runID string) (*eventLog, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs[runID], r.watches.wait(runID)
}

// notify wakes the followers of runID; r.mu is held.
func (r *logRegistry) notify(runID string) {
	r.watches.wake(runID)
}

// logHub is where the logs publish their events for the thread streams:
// the hub, unless the thread streams are made from the stored thread logs
// (threadHub.stored), which the logs' events reach once stored.
func (r *logRegistry) logHub() *threadHub {
	if r.hub.stored {
		return nil
	}
	return &r.hub
}

// open returns the log of a new run, creating it; threadMeta is its
// thread's metadata (see eventLog.threadMeta).
func (r *logRegistry) open(runID, threadID string, resumable bool, threadMeta Metadata) *eventLog {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l, ok := r.logs[runID]; ok {
		return l
	}
	l := newEventLog(runID, threadID, resumable)
	l.hub, l.maxSize, l.threadMeta = r.logHub(), r.maxSize, threadMeta
	r.logs[runID] = l
	r.notify(runID)
	return l
}

// setThreadMeta sets l's threadMeta (see eventLog.threadMeta).
func (r *logRegistry) setThreadMeta(l *eventLog, m Metadata) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l.threadMeta = m
}

// threadMeta returns l's threadMeta.
func (r *logRegistry) threadMeta(l *eventLog) Metadata {
	r.mu.Lock()
	defer r.mu.Unlock()
	return l.threadMeta
}

// attach returns the log an execution (one attempt) of a run appends to:
// the run's log when no execution holds it yet, else a new log that carries
// over the events logged so far, so event ids keep growing across attempts
// (a reader resuming after an id of an earlier attempt misses nothing). A
// log still held by a stale execution of an earlier attempt is released.
// stored is the length of the run's log in storage (EventStorage; 0
// without): when earlier attempts ran elsewhere, the log starts there.
func (r *logRegistry) attach(runID, threadID string, resumable bool, stored int) *eventLog {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.logs[runID]
	if old != nil && stored == 0 && old.attach() {
		return old
	}
	l := newEventLog(runID, threadID, resumable)
	l.hub, l.maxSize = r.logHub(), r.maxSize
	l.attached = true
	if old != nil {
		l.threadMeta = old.threadMeta
		old.mu.Lock()
		l.events, l.base, l.size, l.stored = slices.Clone(old.events), old.base, old.size, old.stored
		old.mu.Unlock()
		old.release(time.Now())
	}
	if stored > l.base+len(l.events) {
		l.events, l.base, l.size, l.stored = nil, stored, 0, stored
	}
	if l.hub != nil {
		l.hub.startRun(threadID, runID) // after the old execution's release
	}
	r.logs[runID] = l
	r.notify(runID)
	return l
}

// live returns the logs that have not ended.
func (r *logRegistry) live() []*eventLog {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*eventLog
	for _, l := range r.logs {
		if !l.state().done {
			out = append(out, l)
		}
	}
	return out
}

// prune drops the logs that expired before now, and the thread events.
func (r *logRegistry) prune(now time.Time) {
	r.hub.prune(now)
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, l := range r.logs {
		l.mu.Lock()
		expired := l.done && !l.expires.IsZero() && now.After(l.expires)
		l.mu.Unlock()
		if expired {
			delete(r.logs, id)
		}
	}
}

// drop removes a log at once.
func (r *logRegistry) drop(runID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.logs, runID)
}

// runWatches wakes the followers of runs: one channel per watched run,
// closed and replaced when the run's log here is added or replaced (wake),
// or when its status in storage changes (observe). A follower holds a
// registration (add) while it follows, so a run is watched while someone
// follows it, and a wake-up costs one channel close per run, whatever the
// number of followers.
type runWatches struct {
	mu sync.Mutex
	m  map[string]*runWatch
}

// runWatch is one watched run.
type runWatch struct {
	refs   int
	ch     chan struct{}
	status string // status last observed in storage; "" before the first look
}

// add registers a follower of runID and returns the function that ends the
// registration.
func (w *runWatches) add(runID string) (release func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]*runWatch{}
	}
	rw := w.m[runID]
	if rw == nil {
		rw = &runWatch{ch: make(chan struct{})}
		w.m[runID] = rw
	}
	rw.refs++
	return sync.OnceFunc(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if rw.refs--; rw.refs == 0 && w.m[runID] == rw {
			delete(w.m, runID)
		}
	})
}

// closedChan is a channel that is always closed: the wait of a run nobody
// registered for (the caller then looks again at once).
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// wait returns the channel closed at the run's next wake-up.
func (w *runWatches) wait(runID string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if rw := w.m[runID]; rw != nil {
		return rw.ch
	}
	return closedChan
}

// wake wakes the followers of runID.
func (w *runWatches) wake(runID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if rw := w.m[runID]; rw != nil {
		close(rw.ch)
		rw.ch = make(chan struct{})
	}
}

// ids returns the watched runs.
func (w *runWatches) ids() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.m))
	for id := range w.m {
		out = append(out, id)
	}
	return out
}

// observe records the statuses read from storage (a run missing from
// statuses is gone) for ids, and wakes the followers of each run whose
// status changed since the last look.
func (w *runWatches) observe(ids []string, statuses map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		rw := w.m[id]
		if rw == nil {
			continue
		}
		st, ok := statuses[id]
		if !ok {
			st = "gone"
		}
		if rw.status != st {
			rw.status = st
			close(rw.ch)
			rw.ch = make(chan struct{})
		}
	}
}
