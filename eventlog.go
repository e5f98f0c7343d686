package graphserver

import (
	"context"
	"encoding/json"
	"iter"
	"strconv"
	"strings"
	"sync"
	"time"
)

// eventLog is the append-only event log of one run. Any number of readers
// follow it by position; nobody consumes events, so readers never steal
// events from each other. It is safe for concurrent use.
type eventLog struct {
	runID     string
	threadID  string
	resumable bool

	mu      sync.Mutex
	events  []StreamEvent
	done    bool
	wake    chan struct{} // closed and replaced on every change
	output  json.RawMessage
	status  string    // final run status once done ("" when the run was released)
	expires time.Time // when the log may be dropped; zero while the run lives
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
	l.events = append(l.events, StreamEvent{ID: strconv.Itoa(len(l.events)), Event: event, Data: data})
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
	l.done, l.status, l.output, l.expires = true, status, output, expires
	close(l.wake)
	l.wake = make(chan struct{})
}

// read returns the events from position from on, whether the log has ended,
// and a channel closed at the next change.
func (l *eventLog) read(from int) ([]StreamEvent, bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var evs []StreamEvent
	if from < len(l.events) {
		evs = l.events[from:len(l.events):len(l.events)]
	}
	return evs, l.done, l.wake
}

// result waits until the log ends and returns the final status and output.
func (l *eventLog) result(ctx context.Context, closing <-chan struct{}) (string, json.RawMessage, bool, error) {
	for {
		l.mu.Lock()
		done, status, output, wake := l.done, l.status, l.output, l.wake
		l.mu.Unlock()
		if done {
			return status, output, true, nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return "", nil, false, context.Cause(ctx)
		case <-closing:
			return "", nil, false, ErrServerClosed
		}
	}
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

// RunStream follows one run's events. Create it with StreamRun or
// JoinRunStream. It is owned by one consumer.
type RunStream struct {
	// Run is the run followed, as it was when the stream was opened.
	Run *Run

	s            *Server
	log          *eventLog // nil: the run ended and its log is gone
	from         int
	modes        []string // filter on base mode; nil = all
	cancelOnDrop bool
}

// Events returns the run's events: those already logged after the stream's
// starting point, then live ones, until the run ends, ctx ends or the server
// closes. When ctx ends (or the loop stops) before the run ends and the
// stream was opened with on_disconnect cancel / cancel_on_disconnect, the run
// is cancelled with action interrupt. A stream whose log is gone (a finished,
// non-resumable run) yields nothing.
func (st *RunStream) Events(ctx context.Context) iter.Seq2[StreamEvent, error] {
	return func(yield func(StreamEvent, error) bool) {
		if st.log == nil {
			return
		}
		pos := st.from
		for {
			evs, done, wake := st.log.read(pos)
			for _, ev := range evs {
				pos++
				if !st.pass(ev.Event) {
					continue
				}
				if !yield(ev, nil) {
					st.dropped()
					return
				}
			}
			if len(evs) > 0 {
				continue
			}
			if done {
				return
			}
			select {
			case <-wake:
			case <-ctx.Done():
				st.dropped()
				yield(StreamEvent{}, context.Cause(ctx))
				return
			case <-st.s.lifetime.Done():
				yield(StreamEvent{}, ErrServerClosed)
				return
			}
		}
	}
}

// dropped cancels the run when the consumer left early and asked for it.
func (st *RunStream) dropped() {
	if !st.cancelOnDrop || st.log == nil {
		return
	}
	if _, done, _ := st.log.read(0); done {
		return
	}
	ctx := context.WithoutCancel(st.s.lifetime)
	if err := st.s.CancelRun(ctx, st.Run.ThreadID, st.Run.RunID, CancelInterrupt); err != nil && ErrorCode(err) != ENOTFOUND {
		st.s.logger.Warn("cancel run on disconnect", "run_id", st.Run.RunID, "err", err)
	}
}

// Wait blocks until the run ends and returns its final output (§2.8 of the
// wire contract): the last values, the interrupt chunk, or
// {"__error__": {...}}. When ctx ends first it returns ctx's cause, after
// cancelling the run if the stream was opened with on_disconnect cancel.
func (st *RunStream) Wait(ctx context.Context) (json.RawMessage, error) {
	if st.log == nil {
		return st.s.finishedOutput(ctx, st.Run.ThreadID, st.Run.RunID)
	}
	_, out, ok, err := st.log.result(ctx, st.s.lifetime.Done())
	if err != nil {
		st.dropped()
		return nil, err
	}
	if !ok || out == nil {
		return st.s.finishedOutput(ctx, st.Run.ThreadID, st.Run.RunID)
	}
	return out, nil
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

// logRegistry holds the event logs of the runs of this process.
type logRegistry struct {
	mu   sync.Mutex
	logs map[string]*eventLog
}

func (r *logRegistry) get(runID string) *eventLog {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs[runID]
}

// open returns the log of a run, creating it.
func (r *logRegistry) open(runID, threadID string, resumable bool) *eventLog {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l, ok := r.logs[runID]; ok {
		return l
	}
	l := newEventLog(runID, threadID, resumable)
	r.logs[runID] = l
	return l
}

// prune drops the logs that expired before now.
func (r *logRegistry) prune(now time.Time) {
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
