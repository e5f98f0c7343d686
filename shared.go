package graphserver

import (
	"context"
	"encoding/json"
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
	// NotifyThreadEvents: an entry of the thread's own was stored in its
	// log (driver.ThreadLogStorage: a state update, a run's end): its
	// streams read it.
	NotifyThreadEvents = "thread_events"
	NotifyReset        = "reset" // notifications may have been missed: look at everything
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

// mirrorWaitTimeout bounds how long opening a thread stream waits for the
// mirror to read the thread's stored log.
const mirrorWaitTimeout = 10 * time.Second

// followThread counts a thread stream following threadID here, so that the
// mirror brings the thread's stored log into the thread's feed, and returns
// the function that ends it.
func (q *runQueue) followThread(threadID string) (release func()) {
	if q.mirror == nil {
		return func() {}
	}
	return q.mirror.follow(threadID)
}

// catchUp waits until the thread's feed holds its stored log as it is now
// (with a mirror; at once without), so that positions in the feed can be
// taken: where a live stream starts, where the latest run starts.
func (q *runQueue) catchUp(ctx context.Context, threadID string) error {
	if q.mirror == nil {
		return nil
	}
	defer q.mirror.follow(threadID)()
	ready := q.mirror.request(threadID)
	t := time.NewTimer(mirrorWaitTimeout)
	defer t.Stop()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-q.s.lifetime.Done():
		return ErrServerClosed
	case <-t.C:
		return Errorf(EUNAVAILABLE, "The thread's event log could not be read; try again.")
	}
}

// threadMirror makes this process's thread feeds from the stored thread
// logs (driver.ThreadLogStorage): the events of the thread's runs,
// wherever they execute, its state updates and the ends of its runs, in
// the log's order and with the ids its numbers give, so that the thread
// streams opened here (JoinThreadStream, SubscribeThreadEvents) carry the
// same events under the same ids as on every process: a client resumes
// on any. It works for the threads followed here only, woken by the
// notifications of stored entries (Notifier). One goroutine (loop) reads
// storage and appends to the feeds, so that each feed grows in order.
type threadMirror struct {
	q    *runQueue
	log  driver.ThreadLogStorage
	wake chan struct{} // capacity 1

	mu      sync.Mutex
	follows map[string]int             // thread -> streams following it here
	dirty   map[string][]chan struct{} // threads to read -> the channels to close once read
}

func newThreadMirror(q *runQueue, log driver.ThreadLogStorage) *threadMirror {
	return &threadMirror{q: q, log: log, wake: make(chan struct{}, 1),
		follows: map[string]int{}, dirty: map[string][]chan struct{}{}}
}

func (m *threadMirror) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// markLocked queues a read of the thread's log; m.mu is held.
func (m *threadMirror) markLocked(threadID string, ready chan struct{}) {
	chs := m.dirty[threadID]
	if ready != nil {
		chs = append(chs, ready)
	}
	m.dirty[threadID] = chs
	m.signal()
}

// follow counts a stream following threadID here and returns the function
// that ends it. The first stream of a thread makes the mirror read its log.
func (m *threadMirror) follow(threadID string) (release func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.follows[threadID]++; m.follows[threadID] == 1 {
		m.markLocked(threadID, nil)
	}
	return sync.OnceFunc(func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.follows[threadID]--; m.follows[threadID] <= 0 {
			delete(m.follows, threadID)
		}
	})
}

// request queues a read of a followed thread's log and returns a channel
// closed once the log, as stored now, is read into the feed.
func (m *threadMirror) request(threadID string) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	ready := make(chan struct{})
	m.markLocked(threadID, ready)
	return ready
}

// notified queues a read of the followed threads a notification names.
func (m *threadMirror) notified(n driver.Notification) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch n.Kind {
	case NotifyRunEvents, NotifyThreadEvents:
		if m.follows[n.ThreadID] > 0 {
			m.markLocked(n.ThreadID, nil)
		}
	case NotifyReset:
		for t := range m.follows {
			m.markLocked(t, nil)
		}
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
		work := m.dirty
		m.dirty = map[string][]chan struct{}{}
		m.mu.Unlock()
		for threadID, ready := range work {
			if err := m.mirrorThread(ctx, threadID); err != nil {
				if ctx.Err() != nil {
					return
				}
				m.q.s.logger.Warn("read thread log", "thread_id", threadID, "err", err)
				m.retry(threadID, ready)
				continue
			}
			for _, c := range ready {
				close(c)
			}
		}
	}
}

// retry queues again a read that failed, for after a delay.
func (m *threadMirror) retry(threadID string, ready []chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.follows[threadID] == 0 && len(ready) == 0 {
		return
	}
	m.dirty[threadID] = append(m.dirty[threadID], ready...)
	time.AfterFunc(listenRetryDelay, m.signal)
}

// mirrorThread reads the thread's log from where its feed stands to its
// end into the feed.
func (m *threadMirror) mirrorThread(ctx context.Context, threadID string) error {
	hub := &m.q.logs.hub
	after := hub.cursor(threadID)
	if after == 0 {
		// A new feed: the log's last threadFeedMax entries at most, what a
		// feed retains. (A thread with more within the retention has its
		// feeds start mid-run, where the v2 events of that run may differ
		// between processes that started at different points.)
		last, err := m.log.LastThreadSeq(ctx, threadID)
		if err != nil {
			return err
		}
		after = max(0, last-threadFeedMax)
	}
	var th *Thread // read once, when a failed run's error is told from it
	tellError := func() json.RawMessage {
		if th == nil {
			t, err := m.q.storage.GetThread(ctx, threadID, nil)
			if err != nil {
				return nil
			}
			th = t
		}
		return th.Error
	}
	for {
		entries, err := m.log.ThreadLog(ctx, threadID, after, storedEventsPage)
		if err != nil {
			return err
		}
		for _, e := range entries {
			hub.publishEntry(threadID, e, tellError)
			after = e.Seq
		}
		if len(entries) < storedEventsPage {
			return nil
		}
	}
}
