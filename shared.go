package graphserver

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/graphserver/graphserver/driver"
)

// Notification kinds.
const (
	NotifyRunQueued = "run_queued" // a run may be claimable (new, given back, or its thread's previous run ended): workers claim again
	NotifyRunEnded  = "run_ended"  // the run ended: its streams, waits and joins look at storage
	NotifyRunCancel = "run_cancel" // a cancellation was recorded for the running run: its worker stops it
	NotifyRunEvents = "run_events" // events of the run were stored: its streams read them
	NotifyReset     = "reset"      // notifications may have been missed: look at everything
)

// listenRetryDelay is how long the listener waits before listening again
// after its Notifier failed.
const listenRetryDelay = time.Second

// listen acts on the Notifier's notifications until the server drains.
func (q *runQueue) listen(ctx context.Context, n driver.Notifier) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-q.drain:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		err := n.Listen(ctx, q.notified)
		if ctx.Err() != nil {
			return
		}
		q.s.logger.Warn("listen for notifications", "err", err)
		t := time.NewTimer(listenRetryDelay)
		select {
		case <-t.C:
			q.notified(driver.Notification{Kind: NotifyReset})
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// notified acts on one notification.
func (q *runQueue) notified(n driver.Notification) {
	switch n.Kind {
	case NotifyRunQueued:
		q.signal()
	case NotifyRunCancel:
		q.cancelLocal(n.RunID, n.Action)
	case NotifyRunEnded:
		q.logs.watches.wake(n.RunID)
	case NotifyRunEvents:
		q.logs.watches.wake(n.RunID)
	}
	if q.mirror != nil {
		q.mirror.notified(n)
	}
	switch n.Kind {
	case NotifyReset:
		q.signal()
		q.recheckRuns() // a cancellation may have been missed
		for _, id := range q.logs.watches.ids() {
			q.logs.watches.wake(id)
		}
	}
}

// recheckWait returns a channel closed at the next recheckRuns.
func (q *runQueue) recheckWait() <-chan struct{} {
	q.recheckMu.Lock()
	defer q.recheckMu.Unlock()
	if q.recheck == nil {
		q.recheck = make(chan struct{})
	}
	return q.recheck
}

// recheckRuns makes the runs executing here renew their leases at once,
// reading the cancellations recorded for them: after notifications may
// have been missed (the listener was connecting or reconnecting).
func (q *runQueue) recheckRuns() {
	q.recheckMu.Lock()
	defer q.recheckMu.Unlock()
	if q.recheck != nil {
		close(q.recheck)
	}
	q.recheck = make(chan struct{})
}

// eventWriter stores the events of the runs executing here in an
// EventStorage.
type eventWriter struct {
	q  *runQueue
	st driver.EventStorage
}

// storeTimeout bounds one write of events.
const storeTimeout = 10 * time.Second

// flush stores the events of l not stored yet. Flushes of one log run one
// at a time, in order.
func (w *eventWriter) flush(ctx context.Context, l *eventLog) error {
	l.storeMu.Lock()
	defer l.storeMu.Unlock()
	l.mu.Lock()
	from := max(l.stored, l.base)
	var evs []StreamEvent
	if i := from - l.base; i < len(l.events) {
		evs = append(evs, l.events[i:]...)
	}
	l.mu.Unlock()
	if len(evs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := w.st.AppendRunEvents(ctx, l.runID, evs); err != nil {
		return err
	}
	l.mu.Lock()
	l.stored = from + len(evs)
	l.mu.Unlock()
	w.q.logs.watches.wake(l.runID)
	return nil
}

// follow stores l's events as they are appended, from a goroutine that
// the returned stop ends (after a last flush); execute owns it.
func (w *eventWriter) follow(ctx context.Context, l *eventLog) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			wake := l.state().wake
			if err := w.flush(ctx, l); err != nil {
				w.q.s.logger.Warn("store run events", "run_id", l.runID, "err", err)
			}
			select {
			case <-wake:
			case <-done:
				return
			}
		}
	})
	return sync.OnceFunc(func() {
		close(done)
		wg.Wait()
		if err := w.flush(ctx, l); err != nil {
			w.q.s.logger.Warn("store run events", "run_id", l.runID, "err", err)
		}
	})
}

// storedEventsPage bounds the events a stream reads from storage at once.
const storedEventsPage = 256

// sharedEvents is Events when the storage keeps the event logs
// (EventStorage). While this process executes the run, the stream reads
// the run's log in memory, as without an EventStorage: its events come at
// once, and it ends when the run's end is recorded. Otherwise (the run
// executes elsewhere, or not yet, or its execution here gave it up) it
// reads the run's stored log, woken when events are stored here or
// notified from elsewhere, and ends once the run has ended and its log is
// read to the end. Events before an in-memory log's first (earlier
// attempts, elsewhere) come from storage too.
func (st *RunStream) sharedEvents(ctx context.Context, yield func(StreamEvent, error) bool) {
	s := st.s
	events := s.rq.events.st
	defer s.subscribe()()
	f := &follower{s: s, runID: st.Run.RunID}
	defer f.stop()
	pos := st.from
	lastError := false // the last event read is an error event
	ended := false
	var errData []byte
	// emit yields evs, advancing pos; false when the consumer stopped.
	emit := func(evs []StreamEvent) bool {
		for _, ev := range evs {
			if n, err := strconv.Atoi(ev.ID); err == nil {
				pos = n + 1
			} else {
				pos++
			}
			lastError = ev.Event == "error"
			if !st.pass(ev.Event) {
				continue
			}
			if !yield(ev, nil) {
				st.dropped(nil)
				return false
			}
		}
		return true
	}
	for {
		_, changed := f.current()
		var wake <-chan struct{}
		if l := s.rq.logs.get(st.Run.RunID); l != nil {
			if ls := l.state(); ls.attached && !ls.released {
				evs, done, w, err := l.read(pos)
				if err == nil {
					if !emit(evs) {
						return
					}
					if len(evs) > 0 {
						continue
					}
					if done {
						return // ended here: the log holds every event
					}
					wake = w
				}
			}
		}
		if wake == nil {
			evs, err := events.RunEvents(ctx, st.Run.RunID, pos, storedEventsPage)
			if err != nil {
				if ctx.Err() != nil {
					st.dropped(nil)
					err = context.Cause(ctx)
				}
				yield(StreamEvent{}, err)
				return
			}
			if !emit(evs) {
				return
			}
			if len(evs) > 0 {
				continue
			}
			if ended {
				// The log is read to its end: the executor stores a run's
				// events before its end, all but a failure's error event,
				// which is told from the thread when not stored yet.
				if errData != nil && !lastError {
					yield(StreamEvent{Event: "error", Data: errData}, nil)
				}
				return
			}
			if ended, errData, err = s.runEnded(ctx, st.Run.ThreadID, st.Run.RunID); err != nil {
				yield(StreamEvent{}, err)
				return
			} else if ended {
				continue // read what was stored before the end
			}
		}
		select {
		case <-wake:
		case <-changed:
		case <-f.poll():
		case <-ctx.Done():
			st.dropped(nil)
			yield(StreamEvent{}, context.Cause(ctx))
			return
		case <-s.lifetime.Done():
			yield(StreamEvent{}, ErrServerClosed)
			return
		}
	}
}

// mirrorRunsListed bounds the runs of a thread the mirror looks at when a
// stream starts following the thread (the newest ones).
const mirrorRunsListed = 20

// followThread counts a thread stream following threadID here, so that the
// mirror brings the runs of other processes into the thread's feed, and
// returns the function that ends it.
func (q *runQueue) followThread(threadID string) (release func()) {
	if q.mirror == nil {
		return func() {}
	}
	return q.mirror.follow(threadID)
}

// threadMirror brings into this process's thread feeds the events of the
// runs of other processes, read from their stored logs (EventStorage), so
// that the thread streams opened here (JoinThreadStream,
// SubscribeThreadEvents) carry every run of their thread, wherever it
// executes: replayed from the stored log, then live. It works for the
// threads followed here only, woken by the notifications of stored events
// and of ended runs (Notifier), on the mechanism the run streams use. One
// goroutine (loop) reads storage and publishes, so a run's events reach
// the feed in order; positions in the feed (feedRun) keep an event from
// going in twice, whoever brings it.
type threadMirror struct {
	q    *runQueue
	wake chan struct{} // capacity 1

	mu      sync.Mutex
	follows map[string]int         // thread -> streams following it here
	runs    map[string]string      // run -> thread: runs seen on followed threads, not done
	work    map[string]*mirrorWork // thread -> what to read
}

// mirrorWork is what the mirror reads for one thread.
type mirrorWork struct {
	sync  bool            // list the thread's recent runs (a stream started, or notifications were missed)
	runs  []string        // runs with new stored events, in the order notified
	ended map[string]bool // runs that ended
}

func newThreadMirror(q *runQueue) *threadMirror {
	return &threadMirror{q: q, wake: make(chan struct{}, 1), follows: map[string]int{},
		runs: map[string]string{}, work: map[string]*mirrorWork{}}
}

func (m *threadMirror) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// workOf returns the pending work of a thread, creating it; m.mu is held.
func (m *threadMirror) workOf(threadID string) *mirrorWork {
	w := m.work[threadID]
	if w == nil {
		w = &mirrorWork{ended: map[string]bool{}}
		m.work[threadID] = w
	}
	return w
}

// addRun queues run runID of a followed thread; m.mu is held.
func (m *threadMirror) addRun(threadID, runID string, ended bool) {
	w := m.workOf(threadID)
	if !slices.Contains(w.runs, runID) {
		w.runs = append(w.runs, runID)
	}
	if ended {
		w.ended[runID] = true
	}
	m.runs[runID] = threadID
	m.signal()
}

// follow counts a stream following threadID here and returns the function
// that ends it. The first stream of a thread makes the mirror look at the
// thread's recent runs.
func (m *threadMirror) follow(threadID string) (release func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.follows[threadID]++; m.follows[threadID] == 1 {
		m.workOf(threadID).sync = true
		m.signal()
	}
	return sync.OnceFunc(func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.follows[threadID]--; m.follows[threadID] > 0 {
			return
		}
		delete(m.follows, threadID)
		delete(m.work, threadID)
		for run, t := range m.runs {
			if t == threadID {
				delete(m.runs, run)
			}
		}
	})
}

// notified queues what a notification tells of the followed threads.
func (m *threadMirror) notified(n driver.Notification) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch n.Kind {
	case NotifyRunEvents:
		if m.follows[n.ThreadID] > 0 {
			m.addRun(n.ThreadID, n.RunID, false)
		}
	case NotifyRunEnded:
		if t, ok := m.runs[n.RunID]; ok {
			m.addRun(t, n.RunID, true)
		}
	case NotifyReset:
		for t := range m.follows {
			m.workOf(t).sync = true
		}
		m.signal()
	}
}

// loop reads what was queued until ctx ends or the server drains (the
// notifications stop then).
func (m *threadMirror) loop(ctx context.Context) {
	for {
		select {
		case <-m.wake:
		case <-m.q.drain:
			return
		case <-ctx.Done():
			return
		}
		m.mu.Lock()
		work := m.work
		m.work = map[string]*mirrorWork{}
		m.mu.Unlock()
		for threadID, w := range work {
			if err := m.mirrorThread(ctx, threadID, w); err != nil {
				if ctx.Err() != nil {
					return
				}
				m.q.s.logger.Warn("mirror thread stream", "thread_id", threadID, "err", err)
				m.retry(threadID, w)
			}
		}
	}
}

// retry queues again the work that failed, for a look after a delay.
func (m *threadMirror) retry(threadID string, w *mirrorWork) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.follows[threadID] == 0 {
		return
	}
	cur := m.workOf(threadID)
	cur.sync = cur.sync || w.sync
	for _, r := range w.runs {
		if !slices.Contains(cur.runs, r) {
			cur.runs = append(cur.runs, r)
		}
	}
	for r := range w.ended {
		cur.ended[r] = true
	}
	time.AfterFunc(listenRetryDelay, m.signal)
}

// mirrorThread reads the queued runs of one thread into its feed.
func (m *threadMirror) mirrorThread(ctx context.Context, threadID string, w *mirrorWork) error {
	q := m.q
	resumable := map[string]bool{} // known from the listing
	runs, ended := w.runs, w.ended
	if w.sync {
		listed, err := q.storage.ListRuns(ctx, threadID, &RunSearch{Limit: mirrorRunsListed})
		if err != nil && ErrorCode(err) != ENOTFOUND {
			return err
		}
		now := q.s.clock()
		var synced []string
		for _, r := range slices.Backward(listed) { // oldest first
			keep := endedLogGrace
			if r.Kwargs.Resumable {
				keep = q.resumableTTL
			}
			switch {
			case r.Status == RunPending:
				continue // no events yet: they are notified
			case r.Status != RunRunning && now.Sub(r.UpdatedAt) > keep:
				continue // its events are past the feed's retention
			}
			resumable[r.RunID] = r.Kwargs.Resumable
			synced = append(synced, r.RunID)
			ended[r.RunID] = true // look at its status after its events
		}
		runs = append(synced, slices.DeleteFunc(runs, func(id string) bool { return slices.Contains(synced, id) })...)
		m.mu.Lock()
		if m.follows[threadID] > 0 {
			for _, id := range synced {
				m.runs[id] = threadID
			}
		}
		m.mu.Unlock()
	}
	for i, runID := range runs {
		retain, known := resumable[runID]
		if err := m.mirrorRun(ctx, threadID, runID, retain, known, ended[runID]); err != nil {
			// What is left is tried again.
			w.sync, w.runs = false, runs[i:]
			return err
		}
	}
	return nil
}

// mirrorRun reads the stored events of one run from where the feed stands,
// and its end when checkEnd (it was notified ended, or listed).
func (m *threadMirror) mirrorRun(ctx context.Context, threadID, runID string, retain, known, checkEnd bool) error {
	q := m.q
	hub := &q.logs.hub
	if l := q.logs.get(runID); l != nil {
		if ls := l.state(); ls.attached && !ls.done || ls.done && !ls.released {
			return nil // executed here: its log publishes its events and its end
		}
	}
	next, done, _ := hub.runPosition(threadID, runID)
	if done {
		m.forget(runID)
		return nil
	}
	var run *Run
	if !known {
		r, err := q.storage.GetRun(ctx, threadID, runID, nil)
		if ErrorCode(err) == ENOTFOUND {
			checkEnd = true // gone (a rollback): its end is all that is left
		} else if err != nil {
			return err
		} else {
			run, retain = r, r.Kwargs.Resumable
		}
	}
	read := func() error {
		for {
			evs, err := q.events.st.RunEvents(ctx, runID, next, storedEventsPage)
			if err != nil {
				return err
			}
			for _, ev := range evs {
				pos, err := strconv.Atoi(ev.ID)
				if err != nil {
					continue
				}
				hub.publishRun(threadID, runID, pos, ev.Event, ev.Data, retain)
				next = pos + 1
			}
			if len(evs) < storedEventsPage {
				return nil
			}
		}
	}
	if err := read(); err != nil {
		return err
	}
	if !checkEnd && (run == nil || run.Status == RunPending || run.Status == RunRunning) {
		return nil
	}
	ended, th, err := q.s.endedRun(ctx, threadID, runID)
	if err != nil || ended == nil {
		return err
	}
	// Ended: what it stored before its end is in; a failure's error event
	// may be stored after it, and is told from the thread if not yet.
	if err := read(); err != nil {
		return err
	}
	if _, _, lastError := hub.runPosition(threadID, runID); !lastError && th != nil &&
		(ended.Status == RunError || ended.Status == RunTimeout) && len(th.Error) > 0 && string(th.Error) != "null" {
		hub.publishRun(threadID, runID, -1, "error", th.Error, retain)
	}
	hub.publishDone(threadID, runID, retain, ended.Status)
	m.forget(runID)
	return nil
}

// forget drops a run the mirror is done with.
func (m *threadMirror) forget(runID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.runs, runID)
}
