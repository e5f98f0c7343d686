package record

import "time"

// Observer is told what a Server does, for metrics and tracing: each run's
// state changes (RunEvent), each webhook delivery attempt (WebhookEvent) and
// the storage's own events (StorageWriteEvent, from a Storage implementing
// ObservableStorage). Register one with Server.AddObserver
// (httpapi.Options.Metrics does, for Prometheus).
//
// Observe is called synchronously on the goroutine doing the work, from many
// goroutines at once: it must be safe for concurrent use, return quickly,
// not block and not call the Server.
type Observer interface {
	Observe(ev Event)
}

// Event is what an Observer receives: a RunEvent, a WebhookEvent or a
// StorageWriteEvent. Switch on its type; more event types may be added, so
// ignore the ones you do not know.
type Event interface{ isEvent() }

// RunEvent reports a change of a run's status.
//
// Status is the new status: RunPending when the run was created (Released
// false) or handed back to the queue (Released true: the server closed, the
// lease was lost or expired; a later attempt resumes it); RunRunning when a
// worker of this process claimed it; RunSuccess, RunError, RunTimeout or
// RunInterrupted when it ended; "" when it was rolled back (deleted with
// what it wrote).
type RunEvent struct {
	RunID       string
	ThreadID    string
	AssistantID string // "" when not known (a swept or cancelled run)
	Status      string
	Released    bool
	// Attempt is the attempt number, from 1, once the run was claimed.
	Attempt int
	// Wait is, for the first attempt of a run that started, how long it
	// waited in the queue since it became claimable (its created_at, which
	// after_seconds moves).
	Wait time.Duration
	// Duration is, for an attempt that ended or was released in this
	// process, how long it ran.
	Duration time.Duration
	// Reason says why a run was released or ended without running ("server
	// closing", "lease lost", "lease expired", "out of attempts",
	// "cancelled", "thread deleted"); "" otherwise.
	Reason string
	// Err is the error of a run that ended with RunError or RunTimeout.
	Err error
}

// WebhookEvent reports one webhook delivery attempt.
type WebhookEvent struct {
	RunID string
	URL   string
	// Attempt is the attempt number, from 1.
	Attempt int
	// StatusCode is the receiver's HTTP status, 0 when no response came.
	StatusCode int
	// Outcome is "delivered" (2xx), "retry" (another attempt follows) or
	// "failed" (no more attempts: a 4xx other than 429, or the last attempt
	// failed).
	Outcome  string
	Duration time.Duration
	// Err describes a failed attempt ("" when delivered).
	Err string
}

// StorageWriteEvent reports one write transaction that a Storage committed
// for a group of writes (SQLite commits the short writes queued while the
// previous transaction commits together).
type StorageWriteEvent struct {
	// Size is the number of writes in the transaction.
	Size int
	// Duration is the time from the transaction's start to its commit.
	Duration time.Duration
	// Wait is how long the transaction's oldest write waited for it to
	// start: the time a write spends queued behind the writer (SQLite's
	// single writer commits one group at a time). Zero where writes do not
	// queue (PostgreSQL).
	Wait time.Duration
	// Err is the transaction's error (nil when committed).
	Err error
}

func (RunEvent) isEvent() {}

func (WebhookEvent) isEvent() {}

func (StorageWriteEvent) isEvent() {}

// RunQueueCount counts the runs of the queue.
type RunQueueCount struct {
	// Ready is the number of pending runs a worker may claim now (the queue
	// depth).
	Ready int
	// Delayed is the number of pending runs whose after_seconds has not
	// passed yet.
	Delayed int
	// Running is the number of runs claimed by a worker.
	Running int
}
