package graphserver

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/record"
)

// Observer is told what a Server does, for metrics and tracing: each run's
// state changes (RunEvent), each webhook delivery attempt (WebhookEvent) and
// the storage's own events (StorageWriteEvent, from a Storage implementing
// ObservableStorage). Register one with Server.AddObserver
// (httpapi.Options.Metrics does, for Prometheus).
//
// Observe is called synchronously on the goroutine doing the work, from many
// goroutines at once: it must be safe for concurrent use, return quickly,
// not block and not call the Server.
type Observer = record.Observer

// Event is what an Observer receives: a RunEvent, a WebhookEvent or a
// StorageWriteEvent. Switch on its type; more event types may be added, so
// ignore the ones you do not know.
type Event = record.Event

// RunEvent reports a change of a run's status.
//
// Status is the new status: RunPending when the run was created (Released
// false) or handed back to the queue (Released true: the server closed, the
// lease was lost or expired; a later attempt resumes it); RunRunning when a
// worker of this process claimed it; RunSuccess, RunError, RunTimeout or
// RunInterrupted when it ended; "" when it was rolled back (deleted with
// what it wrote).
type RunEvent = record.RunEvent

// WebhookEvent reports one webhook delivery attempt.
type WebhookEvent = record.WebhookEvent

// Webhook delivery outcomes (WebhookEvent.Outcome).
const (
	WebhookDelivered = "delivered"
	WebhookRetry     = "retry"
	WebhookFailed    = "failed"
)

// StorageWriteEvent reports one write transaction that a Storage committed
// for a group of writes (SQLite commits the short writes queued while the
// previous transaction commits together).
type StorageWriteEvent = record.StorageWriteEvent

// observers is a copy-on-write list of Observers, cheap to read on hot paths.
type observers struct {
	list atomic.Pointer[[]Observer]
}

func (os *observers) add(o Observer) {
	for {
		old := os.list.Load()
		var next []Observer
		if old != nil {
			next = append(next, *old...)
		}
		next = append(next, o)
		if os.list.CompareAndSwap(old, &next) {
			return
		}
	}
}

func (os *observers) notify(ev Event) {
	if l := os.list.Load(); l != nil {
		for _, o := range *l {
			o.Observe(ev)
		}
	}
}

// AddObserver registers o to be told of every later event (see Observer),
// and registers it with the Storage when that is an ObservableStorage. It is
// safe for concurrent use; observers cannot be removed.
func (s *Server) AddObserver(o Observer) {
	if o == nil {
		return
	}
	s.observers.add(o)
	if os, ok := s.storage.(driver.ObservableStorage); ok {
		os.AddObserver(o)
	}
}

// Logger returns the logger the Server logs to (Options.Logger, or
// slog.Default()). httpapi logs to it unless given its own.
func (s *Server) Logger() *slog.Logger { return s.logger }

// Log keys shared by every log line of graphserver and httpapi, so that one
// query finds everything about a run, a thread or a request.
const (
	logKeyErr       = "err"
	logKeyRunID     = "run_id"
	logKeyThreadID  = "thread_id"
	logKeyStatus    = "status"     // an HTTP status (request, webhook)
	logKeyRunStatus = "run_status" // a run's status
	logKeyAttempt   = "attempt"
	logKeyDuration  = "duration"
	logKeyAssistant = "assistant_id"
)

// runChanged logs a run's status change and tells the observers.
func (s *Server) runChanged(ev RunEvent) {
	level, msg := slog.LevelInfo, "run ended"
	switch {
	case ev.Status == RunPending && !ev.Released:
		msg = "run created"
	case ev.Status == RunPending:
		level, msg = slog.LevelWarn, "run released"
	case ev.Status == RunRunning:
		msg = "run started"
	case ev.Status == RunError || ev.Status == RunTimeout:
		level = slog.LevelWarn
	}
	// The attributes are built only for a record the logger keeps: a run
	// logs three.
	if s.logger.Enabled(context.Background(), level) {
		attrs := make([]slog.Attr, 0, 8)
		attrs = append(attrs, slog.String(logKeyRunID, ev.RunID), slog.String(logKeyThreadID, ev.ThreadID))
		if ev.AssistantID != "" {
			attrs = append(attrs, slog.String(logKeyAssistant, ev.AssistantID))
		}
		attrs = append(attrs, slog.String(logKeyRunStatus, runStatusName(ev.Status)))
		if ev.Attempt > 0 {
			attrs = append(attrs, slog.Int(logKeyAttempt, ev.Attempt))
		}
		if ev.Status == RunRunning && ev.Attempt == 1 {
			attrs = append(attrs, slog.Duration("wait", ev.Wait))
		}
		if ev.Duration > 0 {
			attrs = append(attrs, slog.Duration(logKeyDuration, ev.Duration))
		}
		if ev.Reason != "" {
			attrs = append(attrs, slog.String("reason", ev.Reason))
		}
		if ev.Err != nil {
			attrs = append(attrs, slog.String(logKeyErr, ev.Err.Error()))
		}
		s.logger.LogAttrs(context.Background(), level, msg, attrs...)
	}
	s.observers.notify(ev)
}

// runStatusName is status as logs name it: the status itself, or
// "rolled_back" for "" (a run deleted by a rollback).
func runStatusName(status string) string {
	if status == "" {
		return "rolled_back"
	}
	return status
}

// webhookAttempted logs a webhook delivery attempt and tells the observers.
func (s *Server) webhookAttempted(ev WebhookEvent) {
	level, msg := slog.LevelInfo, "webhook delivered"
	switch ev.Outcome {
	case WebhookRetry:
		level, msg = slog.LevelWarn, "webhook attempt failed"
	case WebhookFailed:
		level, msg = slog.LevelWarn, "webhook delivery failed"
	}
	attrs := []slog.Attr{slog.String(logKeyRunID, ev.RunID), slog.String("url", ev.URL),
		slog.Int(logKeyAttempt, ev.Attempt), slog.Int(logKeyStatus, ev.StatusCode),
		slog.Duration(logKeyDuration, ev.Duration)}
	if ev.Err != "" {
		attrs = append(attrs, slog.String(logKeyErr, ev.Err))
	}
	s.logger.LogAttrs(context.Background(), level, msg, attrs...)
	s.observers.notify(ev)
}

// RunQueueCount counts the runs of the queue.
type RunQueueCount = record.RunQueueCount

// Stats is a snapshot of what a Server is doing, for metrics.
type Stats struct {
	// Queue counts the run queue in storage (every process sharing it);
	// QueueCounted is false, and Queue zero, when the Storage is not a
	// RunQueueCounter.
	Queue        RunQueueCount
	QueueCounted bool
	// RunsExecuting is the number of runs executing in this process.
	RunsExecuting int
	// EventLogs is the number of runs whose events this process records
	// and serves to streams (the run executes here, or was just created).
	EventLogs int
	// Subscribers is the number of consumers following runs in this
	// process: RunStream.Events and RunStream.Wait calls in progress (each
	// SSE stream, /wait and /join request is one).
	Subscribers int
}

// Stats returns a snapshot of the Server's work. Only the queue counts read
// storage; an error reading them is returned with the rest of the snapshot.
// It is safe for concurrent use.
func (s *Server) Stats(ctx context.Context) (Stats, error) {
	st := Stats{
		RunsExecuting: s.rq.executing(),
		EventLogs:     len(s.rq.logs.live()),
		Subscribers:   int(s.subscribers.Load()),
	}
	qc, ok := s.storage.(driver.RunQueueCounter)
	if !ok {
		return st, nil
	}
	c, err := qc.CountRunQueue(ctx, s.clock())
	if err != nil {
		return st, err
	}
	st.Queue, st.QueueCounted = c, true
	return st, nil
}

// executing returns the number of runs executing in this process.
func (q *runQueue) executing() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.running)
}

// subscribe counts a consumer following a run until the returned func is
// called (Stats.Subscribers).
func (s *Server) subscribe() (unsubscribe func()) {
	s.subscribers.Add(1)
	return func() { s.subscribers.Add(-1) }
}

// startedEvent is the RunEvent of a claimed run starting at now.
func startedEvent(qr *driver.QueuedRun, now time.Time) RunEvent {
	ev := RunEvent{RunID: qr.Run.RunID, ThreadID: qr.Run.ThreadID, AssistantID: qr.Run.AssistantID, Status: RunRunning, Attempt: qr.Attempt}
	if qr.Attempt == 1 {
		ev.Wait = max(now.Sub(qr.Run.CreatedAt), 0)
	}
	return ev
}

// endedEvent is the RunEvent of an execution that ended with status after
// running d (RunPending: released).
func endedEvent(run *Run, out *runOutcome, status string, d time.Duration, reason string) RunEvent {
	return RunEvent{RunID: run.RunID, ThreadID: run.ThreadID, AssistantID: run.AssistantID, Status: status,
		Released: status == RunPending, Attempt: out.attempt, Duration: d, Reason: reason, Err: out.err}
}

// sweptEvent is the RunEvent of a run the lease sweep changed.
func sweptEvent(r driver.SweptRun) RunEvent {
	ev := RunEvent{RunID: r.RunID, ThreadID: r.ThreadID, Status: r.Status, Released: r.Status == RunPending, Reason: "lease expired"}
	if r.Status == RunError {
		ev.Reason = "out of attempts"
	}
	return ev
}

// webhookOutcome classifies a delivery attempt (WebhookEvent.Outcome):
// done says no attempt follows, errText is "" for a 2xx response.
func webhookOutcome(done bool, errText string) string {
	switch {
	case errText == "":
		return WebhookDelivered
	case done:
		return WebhookFailed
	}
	return WebhookRetry
}
