package graphserver

import (
	"cmp"
	"context"
	"encoding/json"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/graphserver/graphserver/driver"
)

// Thread stream modes (GET /threads/{thread_id}/stream).
const (
	// ThreadStreamRunModes passes every event of every run of the thread
	// (each mode event, metadata, error and the run_done marker), but not
	// state updates. It is the default.
	ThreadStreamRunModes = "run_modes"
	// ThreadStreamLifecycle passes only the metadata events: a run's start
	// {"run_id", "attempt"} and its end {"status": "run_done", "run_id"}.
	ThreadStreamLifecycle = "lifecycle"
	// ThreadStreamStateUpdate passes only state_update events
	// {"state": ThreadState, "thread_id"}, sent after a state update
	// (UpdateThreadState) or a thread created with supersteps.
	ThreadStreamStateUpdate = "state_update"
)

// threadStreamModes are the values a thread stream's modes take.
var threadStreamModes = []string{ThreadStreamRunModes, ThreadStreamLifecycle, ThreadStreamStateUpdate}

// threadFeedMax bounds the events a thread's feed retains for replay; older
// ones are dropped first.
const threadFeedMax = 10000

// ThreadStreamOptions tunes JoinThreadStream.
type ThreadStreamOptions struct {
	// LastEventID resumes strictly after that thread event id ("<ms>-<seq>",
	// as the stream's ids are). "-" (or "-1") replays every event this
	// process still retains for the thread (with a stored thread log: the
	// log as stored), then goes live. "" is live only: the events published
	// from the moment the stream starts.
	LastEventID string
	// StreamModes selects the events (threadStreamModes); empty means
	// run_modes.
	StreamModes []string
}

// ThreadStream follows the events of a thread: those of every run on it
// and its state updates. Create it with JoinThreadStream; it is owned by one
// consumer.
type ThreadStream struct {
	// ThreadID is the thread followed.
	ThreadID string

	s     *Server
	after feedID // the stream starts strictly after this id
	modes []string
}

// JoinThreadStream returns a stream of the thread's events: the events of
// every run executed on it (each named as on the run's stream, with
// metadata first and a metadata {"status": "run_done", "run_id"} once the
// run ended) and state_update events, filtered by opts.StreamModes. Event
// ids are "<ms>-<seq>", growing within the thread. Events are retained for
// replay as long as run logs are (Options.ResumableStreamTTL for resumable
// runs and state updates, a few seconds for the others).
//
// Without a stored thread log (the sqlite driver), the runs are those
// executed in this process, the state updates those made in it, and ids
// are given by this process. With a storage that keeps thread logs and
// notifies (driver.ThreadLogStorage and Notifier: the postgres driver),
// the stream is made from the thread's stored log: the runs any process
// executes, the state updates any process makes, every event retained for
// Options.ResumableStreamTTL, and ids from the log's numbers ("<n>-0",
// and "<n>-1" for a run_done marker), the same on every process, so that
// a client resumes with Last-Event-ID on any of them. The stream never
// ends on its own: see ThreadStream.Events.
//
// It returns EINVALID for a malformed thread id, an unknown mode or a
// malformed LastEventID, and ENOTFOUND when the thread is missing or hidden.
// It blocks on storage.
func (s *Server) JoinThreadStream(ctx context.Context, threadID string, opts ThreadStreamOptions) (*ThreadStream, error) {
	modes := opts.StreamModes
	for _, m := range modes {
		if !slices.Contains(threadStreamModes, m) {
			return nil, Errorf(EINVALID, "Invalid stream mode: %s. Thread streams take %s.", m, strings.Join(threadStreamModes, ", "))
		}
	}
	if len(modes) == 0 {
		modes = []string{ThreadStreamRunModes}
	}
	st := &ThreadStream{s: s, modes: slices.Clone(modes)}
	id := strings.TrimSpace(opts.LastEventID)
	switch id {
	case "":
	case "-", "-1":
		st.after = feedID{ms: -1, seq: -1}
	default:
		after, ok := parseFeedID(id)
		if !ok {
			return nil, Errorf(EINVALID, "Invalid last-event-id %q: must be a thread stream event id (<ms>-<seq>) or - to replay from the beginning", id)
		}
		st.after = after
	}
	t, err := s.stateThread(ctx, threadID, "read")
	if err != nil {
		return nil, err
	}
	st.ThreadID = t.ThreadID
	if err := s.rq.catchUp(ctx, t.ThreadID); err != nil {
		return nil, err
	}
	if id == "" {
		// Live only: what is published from now on.
		st.after = s.rq.logs.hub.lastID(t.ThreadID)
	}
	return st, nil
}

// Events returns the thread's events after the stream's starting point,
// then live ones, until ctx ends (it yields ctx's cause) or the server
// closes (it yields ErrServerClosed). It never ends on its own.
func (st *ThreadStream) Events(ctx context.Context) iter.Seq2[StreamEvent, error] {
	return func(yield func(StreamEvent, error) bool) {
		hub := &st.s.rq.logs.hub
		feed := hub.subscribe(st.ThreadID)
		defer hub.unsubscribe(st.ThreadID, feed)
		defer st.s.rq.followThread(st.ThreadID)()
		pos := feed.start(st.after)
		for {
			evs, next, wake := feed.read(pos, st.after)
			pos = next
			for _, ev := range evs {
				if !st.pass(ev.Event) {
					continue
				}
				if !yield(ev, nil) {
					return
				}
			}
			if len(evs) > 0 {
				continue
			}
			select {
			case <-wake:
			case <-ctx.Done():
				yield(StreamEvent{}, context.Cause(ctx))
				return
			case <-st.s.lifetime.Done():
				yield(StreamEvent{}, ErrServerClosed)
				return
			}
		}
	}
}

// pass applies the stream modes, as LangGraph's thread stream filter does:
// run_modes passes everything but state updates, state_update only them,
// lifecycle only the metadata events (run start and run_done).
func (st *ThreadStream) pass(event string) bool {
	for _, m := range st.modes {
		switch {
		case m == ThreadStreamRunModes && event != "state_update":
			return true
		case m == ThreadStreamStateUpdate && event == "state_update":
			return true
		case m == ThreadStreamLifecycle && event == "metadata":
			return true
		}
	}
	return false
}

// publishStateUpdate sends a state_update event {"state", "thread_id"} to
// the thread's stream. With a stored thread log (the postgres driver), it
// is stored in it, for the thread's streams on every process; a failure
// to store it is logged (the state update it tells of is done).
func (s *Server) publishStateUpdate(ctx context.Context, threadID string, st *ThreadState) {
	if st == nil {
		return
	}
	data := marshalOutput(map[string]any{"state": st, "thread_id": threadID})
	if s.rq.mirror != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		defer cancel()
		if err := s.rq.mirror.log.AppendThreadEvent(ctx, threadID, "state_update", data); err != nil {
			s.logger.WarnContext(ctx, "store state update event", "thread_id", threadID, "err", err)
		}
		return
	}
	s.rq.logs.hub.publish(threadID, "state_update", data, true)
}

// feedID is a thread event id: milliseconds and a sequence number within
// them, written "<ms>-<seq>" (the form of LangGraph's Redis stream ids).
type feedID struct{ ms, seq int64 }

func (id feedID) String() string {
	return strconv.FormatInt(id.ms, 10) + "-" + strconv.FormatInt(id.seq, 10)
}

func (id feedID) after(o feedID) bool {
	return id.ms > o.ms || (id.ms == o.ms && id.seq > o.seq)
}

// parseFeedID reads "<ms>-<seq>" or "<ms>" (sequence 0).
func parseFeedID(s string) (feedID, bool) {
	msPart, seqPart, hasSeq := strings.Cut(s, "-")
	ms, err := strconv.ParseInt(msPart, 10, 64)
	if err != nil || ms < 0 || msPart == "" || msPart[0] == '+' {
		return feedID{}, false
	}
	if !hasSeq {
		return feedID{ms: ms}, true
	}
	seq, err := strconv.ParseInt(seqPart, 10, 64)
	if err != nil || seq < 0 || seqPart == "" || seqPart[0] == '+' {
		return feedID{}, false
	}
	return feedID{ms: ms, seq: seq}, true
}

// threadHub fans the events of a process's runs and state updates out to
// the streams of their threads: one feed per thread, created on the first
// event or subscriber, dropped once it has neither retained events nor
// subscribers. It is safe for concurrent use; the zero value is ready.
type threadHub struct {
	mu           sync.Mutex
	feeds        map[string]*threadFeed
	resumableTTL time.Duration // retention of resumable runs' events and state updates
	now          func() time.Time
	seq          atomic.Int64 // the last protocol-v2 event seq given out (all threads, without stored)
	// stored: the feeds are made from the stored thread logs (a
	// driver.ThreadLogStorage), by the threadMirror, with the ids the log
	// numbers give (the same on every process), rather than from the runs
	// executing here and the state updates made here. Set before the hub
	// is shared.
	stored bool
}

// threadFeed is the retained, ordered events of one thread.
type threadFeed struct {
	mu     sync.Mutex
	base   int // position of events[0]; positions grow forever
	events []feedEvent
	last   feedID
	wake   chan struct{}       // closed and replaced on every change
	subs   int                 // streams following it
	v2     v2Log               // the protocol-v2 events derived from the events
	runs   map[string]*feedRun // threadHub.stored: the runs whose events it holds
	cursor int64               // threadHub.stored: the number of the last log entry read

	// Without a stored log, the executions of the thread's runs publish
	// from their own goroutines, and a run's end goes out after storage
	// ended it, when the thread's next run may already execute: the feed
	// puts the executions in order itself (see startRun), so that a run's
	// events never come before the end of the run before it.
	live  string     // the run whose execution's events go in now; "" none
	held  []*heldRun // executions that began while live's went on, in order
	heldN int        // the events in held
}

// heldRun is an execution of a run that began while the live one's had not
// ended: its events wait until that one's end is in.
type heldRun struct {
	runID  string
	events []heldEvent
	ended  bool // its end (done marker or release) is in: it goes in whole
}

// heldEvent is an event of a held execution.
type heldEvent struct {
	event  string
	data   json.RawMessage
	status string // for the done marker (publishStatus)
	retain bool
}

// feedRun is where a run's events stand in a thread's feed made from the
// stored thread log (threadHub.stored).
type feedRun struct {
	next      int       // the run-log position of the next event
	done      bool      // its run_done marker is in: nothing more goes in
	lastError bool      // its last event is an error event
	ended     time.Time // when done (the entry is pruned after the retention)
}

type feedEvent struct {
	StreamEvent
	id      feedID
	expires time.Time
}

func (h *threadHub) clock() time.Time {
	if h.now != nil {
		return h.now()
	}
	return time.Now()
}

// feed returns the thread's feed, creating it; h.mu is held.
func (h *threadHub) feed(threadID string) *threadFeed {
	if h.feeds == nil {
		h.feeds = map[string]*threadFeed{}
	}
	f := h.feeds[threadID]
	if f == nil {
		f = &threadFeed{wake: make(chan struct{})}
		// From a stored log, every process derives the protocol-v2 events
		// from the start of the feed, so that they are the same everywhere.
		f.v2.on = h.stored
		h.feeds[threadID] = f
	}
	return f
}

// publish appends an event to the thread's feed and wakes its streams.
// retain keeps it for the resumable TTL rather than the short grace of
// non-resumable run events.
func (h *threadHub) publish(threadID, event string, data json.RawMessage, retain bool) {
	h.publishStatus(threadID, event, data, retain, "")
}

// publishStatus is publish with the final status of the run whose end
// (the run_done marker) the event is, for the protocol-v2 lifecycle.
func (h *threadHub) publishStatus(threadID, event string, data json.RawMessage, retain bool, status string) {
	now := h.clock()
	h.mu.Lock()
	f := h.feed(threadID)
	h.mu.Unlock()
	f.append(h, event, data, status, now, now.Add(h.ttl(retain)))
}

// lockedFeed returns thread threadID's feed, made if needed, with its
// lock held: the caller unlocks f.mu.
func (h *threadHub) lockedFeed(threadID string) *threadFeed {
	h.mu.Lock()
	f := h.feed(threadID)
	h.mu.Unlock()
	f.mu.Lock()
	return f
}

// cursor returns the number of the last stored log entry the thread's
// feed read (threadHub.stored), creating the feed.
func (h *threadHub) cursor(threadID string) int64 {
	f := h.lockedFeed(threadID)
	defer f.mu.Unlock()
	return f.cursor
}

// startRun tells that an execution of run runID begins (its log is
// attached here): its events go in after the end of the execution under
// way, if any, whose end may not be in yet although storage ended its run
// (the end is published after the commit that lets the thread's next run
// start, from another goroutine).
func (h *threadHub) startRun(threadID, runID string) {
	f := h.lockedFeed(threadID)
	defer f.mu.Unlock()
	switch {
	case f.live == runID || f.heldRun(runID) != nil:
	case f.live == "":
		f.live = runID
	default:
		f.held = append(f.held, &heldRun{runID: runID})
	}
}

// publishRun publishes an event of run runID: from its execution (exec),
// in the order of the executions (startRun), else (the metadata event of a
// run just created) at once.
func (h *threadHub) publishRun(threadID, runID string, exec bool, event string, data json.RawMessage, retain bool) {
	if !exec {
		h.publish(threadID, event, data, retain)
		return
	}
	now := h.clock()
	f := h.lockedFeed(threadID)
	defer f.mu.Unlock()
	if r := f.heldRun(runID); r != nil {
		r.events = append(r.events, heldEvent{event: event, data: data, retain: retain})
		f.heldN++
		f.bound(h, now)
		return
	}
	if f.live == "" {
		f.live = runID // the feed was made anew while the run executed
	} else if f.live != runID {
		f.held = append(f.held, &heldRun{runID: runID, events: []heldEvent{{event: event, data: data, retain: retain}}})
		f.heldN++
		return
	}
	f.appendLocked(h, feedID{}, event, data, "", now, now.Add(h.ttl(retain)))
}

// publishDone publishes the run_done marker of run runID, ended with
// status (see publishStatus), after the run's events; the executions held
// behind the run's then go in.
func (h *threadHub) publishDone(threadID, runID string, retain bool, status string) {
	h.endRun(threadID, runID, &heldEvent{event: "metadata", data: runDoneData(runID), status: status, retain: retain})
}

// releaseRun tells that the execution of run runID here gave the run up
// without an end (a later attempt goes on): the executions held behind it
// go in.
func (h *threadHub) releaseRun(threadID, runID string) {
	h.endRun(threadID, runID, nil)
}

// endRun ends run runID's execution with the done marker done, or without
// one (nil).
func (h *threadHub) endRun(threadID, runID string, done *heldEvent) {
	now := h.clock()
	f := h.lockedFeed(threadID)
	defer f.mu.Unlock()
	if r := f.heldRun(runID); r != nil {
		if done != nil {
			r.events = append(r.events, *done)
			f.heldN++
		}
		r.ended = true
		return
	}
	if done != nil {
		// Also the end of a run that never executed here (cancelled while
		// pending): at once.
		f.appendLocked(h, feedID{}, done.event, done.data, done.status, now, now.Add(h.ttl(done.retain)))
	}
	if f.live == runID {
		f.live = ""
		f.flush(h, now)
	}
}

// heldRun returns the held execution of run runID that has not ended, or
// nil; f.mu is held.
func (f *threadFeed) heldRun(runID string) *heldRun {
	for _, r := range slices.Backward(f.held) {
		if r.runID == runID && !r.ended {
			return r
		}
	}
	return nil
}

// flush appends the held executions, in order, while none is live: the
// first that has not ended becomes live; f.mu is held.
func (f *threadFeed) flush(h *threadHub, now time.Time) {
	for f.live == "" && len(f.held) > 0 {
		r := f.held[0]
		f.held[0] = nil
		f.held = f.held[1:]
		f.heldN -= len(r.events)
		for _, e := range r.events {
			f.appendLocked(h, feedID{}, e.event, e.data, e.status, now, now.Add(h.ttl(e.retain)))
		}
		if !r.ended {
			f.live = r.runID
		}
	}
}

// bound stops waiting for the live execution's end once the held events
// reach threadFeedMax (an end that does not come must not hold the
// thread's events without bound); f.mu is held.
func (f *threadFeed) bound(h *threadHub, now time.Time) {
	if f.heldN >= threadFeedMax {
		f.live = ""
		f.flush(h, now)
	}
}

// runDoneData is the data of the run_done marker of run runID.
func runDoneData(runID string) json.RawMessage {
	return marshalOutput(map[string]string{"status": "run_done", "run_id": runID})
}

// publishEntry appends an entry of the thread's stored log to its feed
// (h.stored), after the entries before it, by the one goroutine that
// reads the stored logs (threadMirror): a run event under id (seq, 0),
// a state update likewise, and a run's end as its run_done marker under
// (seq, 1), preceded at (seq, 0) by the error told from the thread
// (tellError, read when needed) when the run failed without an error
// event. Events of a run after its end, or before the feed's position in
// the run, are skipped; so is the end of a run none of whose events is in
// the feed (a run cancelled before it started). Every process builds the
// same feed, ids included, from the same log.
func (h *threadHub) publishEntry(threadID string, e driver.ThreadLogEntry, tellError func() json.RawMessage) {
	now := h.clock()
	expires := now.Add(h.ttl(true))
	f := h.lockedFeed(threadID)
	defer f.mu.Unlock()
	if e.Seq <= f.cursor {
		return
	}
	f.cursor = e.Seq
	id := feedID{ms: e.Seq}
	switch {
	case e.RunID == "":
		f.appendLocked(h, id, e.Event, e.Data, "", now, expires)
	case e.Pos >= 0:
		r := f.run(e.RunID)
		if r.done || e.Pos < r.next {
			return
		}
		r.next, r.lastError = e.Pos+1, e.Event == "error"
		f.appendLocked(h, id, e.Event, e.Data, "", now, expires)
	case e.Event == driver.RunDoneEvent:
		r := f.run(e.RunID)
		if r.done {
			return
		}
		r.done, r.ended = true, now
		if r.next == 0 {
			return
		}
		var status string
		_ = json.Unmarshal(e.Data, &status)
		if (status == RunError || status == RunTimeout) && !r.lastError {
			// Only the mirror appends to the feed: it may be let go
			// while the thread is read.
			f.mu.Unlock()
			data := tellError()
			f.mu.Lock()
			if len(data) > 0 && string(data) != "null" {
				f.appendLocked(h, id, "error", data, "", now, expires)
			}
		}
		f.appendLocked(h, feedID{ms: e.Seq, seq: 1}, "metadata", runDoneData(e.RunID), status, now, expires)
	}
}

// run returns the position entry of a run, creating it; f.mu is held.
func (f *threadFeed) run(runID string) *feedRun {
	if f.runs == nil {
		f.runs = map[string]*feedRun{}
	}
	r := f.runs[runID]
	if r == nil {
		r = &feedRun{}
		f.runs[runID] = r
	}
	return r
}

// ttl is how long an event stays in a feed.
func (h *threadHub) ttl(retain bool) time.Duration {
	if retain {
		return cmp.Or(h.resumableTTL, ResumableStreamTTLDefault)
	}
	return endedLogGrace
}

// lastID returns the id of the thread's latest event, so that a stream
// starting after it sees what is published from now on. Without a feed it
// is a bound below any id the next event can get: a feed is dropped only
// once its events expired, seconds after the last one, so a new feed's ids,
// from the clock, are greater. From the stored logs, it is after the last
// entry the feed read (the mirror has caught up when it is asked).
func (h *threadHub) lastID(threadID string) feedID {
	now := h.clock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stored {
		f := h.feed(threadID)
		f.mu.Lock()
		defer f.mu.Unlock()
		return feedID{ms: f.cursor, seq: math.MaxInt64}
	}
	if f := h.feeds[threadID]; f != nil {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.last != (feedID{}) {
			return f.last
		}
	}
	return feedID{ms: now.UnixMilli(), seq: -1}
}

// subscribe returns the thread's feed, counting a stream on it so that it
// is kept.
func (h *threadHub) subscribe(threadID string) *threadFeed {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.feed(threadID)
	f.mu.Lock()
	f.subs++
	f.mu.Unlock()
	return f
}

func (h *threadHub) unsubscribe(threadID string, f *threadFeed) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f.mu.Lock()
	f.subs--
	drop := f.subs == 0 && len(f.events) == 0 && len(f.v2.events) == 0 && !h.clock().Before(f.v2.keep) && f.live == "" && len(f.held) == 0
	f.mu.Unlock()
	if drop && h.feeds[threadID] == f {
		delete(h.feeds, threadID)
	}
}

// prune drops the events that expired before now, and the feeds left with
// no events and no streams.
func (h *threadHub) prune(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, f := range h.feeds {
		f.mu.Lock()
		n := 0
		for n < len(f.events) && now.After(f.events[n].expires) {
			n++
		}
		if n > 0 {
			f.drop(n)
		}
		n = 0
		for n < len(f.v2.events) && now.After(f.v2.events[n].expires) {
			n++
		}
		if n > 0 {
			f.dropV2(n)
		}
		for id, r := range f.runs {
			if r.done && now.After(r.ended.Add(h.ttl(true))) {
				delete(f.runs, id)
			}
		}
		empty := f.subs == 0 && len(f.events) == 0 && len(f.v2.events) == 0 && now.After(f.v2.keep) && f.live == "" && len(f.held) == 0
		f.mu.Unlock()
		if empty {
			delete(h.feeds, id)
		}
	}
}

// append adds one event with the next id; ids grow with the clock and, within
// one millisecond, by sequence.
// Once a protocol-v2 client touched the thread, the event's v2 events are
// derived and appended too (status is the run's final status for its
// run_done marker).
func (f *threadFeed) append(h *threadHub, event string, data json.RawMessage, status string, now, expires time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.appendLocked(h, feedID{}, event, data, status, now, expires)
}

// appendLocked is append with f.mu held, under id when it is not zero
// (an entry of a stored thread log, see publishEntry).
func (f *threadFeed) appendLocked(h *threadHub, id feedID, event string, data json.RawMessage, status string, now, expires time.Time) {
	if id == (feedID{}) {
		id = feedID{ms: now.UnixMilli()}
		if id.ms <= f.last.ms {
			id = feedID{ms: f.last.ms, seq: f.last.seq + 1}
		}
	}
	f.last = id
	f.events = append(f.events, feedEvent{StreamEvent: StreamEvent{ID: id.String(), Event: event, Data: data}, id: id, expires: expires})
	if len(f.events) > threadFeedMax {
		f.drop(len(f.events) - threadFeedMax)
	}
	if f.v2.on {
		f.appendV2(h, id, event, data, status, now, expires)
	}
	close(f.wake)
	f.wake = make(chan struct{})
}

// drop removes the n oldest events; f.mu is held. It costs O(n), not the
// length of the feed: the slice is cut at the front (the dropped events'
// data released at once), and append moves the rest to a new array only
// when it runs out of room, so each event is copied a bounded number of
// times (issue 17: appending to a feed stays O(1) per event).
func (f *threadFeed) drop(n int) {
	clear(f.events[:n])
	f.events = f.events[n:]
	f.base += n
}

// start returns the position of the first retained event after `after`.
func (f *threadFeed) start(after feedID) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, _ := slices.BinarySearchFunc(f.events, after, func(e feedEvent, t feedID) int {
		if e.id.after(t) {
			return 1
		}
		return -1
	})
	return f.base + i
}

// read returns the events from position pos on (from the oldest retained
// when pos was dropped) whose ids are after after, the position after
// them, and a channel closed at the next change. (The ids filter what a
// feed dropped and made anew, read again from a stored log, holds.)
func (f *threadFeed) read(pos int, after feedID) ([]StreamEvent, int, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pos = max(pos, f.base)
	var out []StreamEvent
	for _, e := range f.events[pos-f.base:] {
		if e.id.after(after) {
			out = append(out, e.StreamEvent)
		}
	}
	return out, f.base + len(f.events), f.wake
}
