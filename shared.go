package graphserver

import (
	"context"
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
