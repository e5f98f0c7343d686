package driver

import (
	"context"
	"encoding/json"
	"time"

	"github.com/graphserver/graphserver/record"
)

// EventStorage is an optional Storage capability, detected with a type
// assertion: the event logs of runs kept in storage, shared by every
// process on it. With it, the process executing a run stores its events as
// they come (in order, before the run's end is recorded), and a stream of
// the run opened on any process replays the stored log, then follows it
// live: event ids keep growing across attempts, whichever process runs
// each. Without it (the sqlite driver), a run's events live in the memory of
// the process executing it, and other processes see only its status.
type EventStorage interface {
	// AppendRunEvents stores events of run runID; each event's ID is its
	// position in the run's log ("0", "1", ...). An event already stored at
	// a position is kept.
	AppendRunEvents(ctx context.Context, runID string, events []record.StreamEvent) error
	// RunEvents returns up to limit stored events of runID from position
	// from on, in order.
	RunEvents(ctx context.Context, runID string, from, limit int) ([]record.StreamEvent, error)
	// CountRunEvents returns the length of the run's stored log: the
	// position of its next event.
	CountRunEvents(ctx context.Context, runID string) (int, error)
	// PruneRunEvents deletes the logs of the runs that ended before
	// endedBefore, and of runs that are gone, and returns how many events
	// it deleted.
	PruneRunEvents(ctx context.Context, endedBefore time.Time) (int, error)
}

// Notifier is an optional Storage capability, detected with a type
// assertion: notifications between the processes sharing the storage, so
// that they act at once on what another process did instead of at their
// next poll (Options.PollInterval) or lease renewal. The driver sends them
// itself, with the changes they announce (a run queued, ended or cancelled,
// events stored); the Server of each process listens.
type Notifier interface {
	// Listen calls fn with each notification until ctx ends, then returns
	// ctx's error. It calls fn from one goroutine at a time. When it may
	// have missed notifications (its connection was lost and restored), it
	// sends NotifyReset.
	Listen(ctx context.Context, fn func(Notification)) error
}

// Notification is one message of a Notifier.
type Notification struct {
	Kind   string // NotifyRunQueued, NotifyRunEnded, NotifyRunCancel, NotifyRunEvents, NotifyThreadEvents or NotifyReset
	RunID  string
	Action string // NotifyRunCancel: CancelInterrupt or CancelRollback
	// ThreadID is the run's thread (NotifyRunEvents), or the thread whose
	// log has new entries of its own (NotifyThreadEvents): the thread
	// streams of every process following it read its log.
	ThreadID string
}

// ThreadLogStorage is an optional capability of a Storage that keeps event
// logs and notifies (EventStorage and Notifier), detected with a type
// assertion: each thread's log, the events of its runs, its state updates
// and the ends of its runs in one order, numbered by a sequence of the
// thread that is the same for every process. Thread streams (their event
// ids, protocol-v2 seqs) are made from it, so that a client resumes one
// on any process. The driver numbers each run event as it stores it
// (AppendRunEvents), and records each run's end in the transaction that
// ends or deletes the run (Tx.SetRunStatus to a final status,
// Tx.EndHeldRun, Tx.DeleteRun), notifying NotifyThreadEvents; entries of a thread become
// visible in the order of their numbers.
type ThreadLogStorage interface {
	// AppendThreadEvent stores an event of the thread itself (a state
	// update) at the end of its log, and notifies NotifyThreadEvents.
	AppendThreadEvent(ctx context.Context, threadID, event string, data json.RawMessage) error
	// ThreadLog returns up to limit entries of the thread's log numbered
	// after after, in order.
	ThreadLog(ctx context.Context, threadID string, after int64, limit int) ([]ThreadLogEntry, error)
	// LastThreadSeq returns the number of the thread's latest entry (0
	// when it has none): the entries stored from now on have greater ones.
	LastThreadSeq(ctx context.Context, threadID string) (int64, error)
}

// ThreadLogEntry is one entry of a thread's log (ThreadLogStorage).
type ThreadLogEntry struct {
	// Seq is the entry's number in the thread's log.
	Seq int64
	// RunID is the run of a run event or run end; "" for an event of the
	// thread itself.
	RunID string
	// Pos is a run event's position in its run's log (its id on the run's
	// stream); -1 for a run's end and for an event of the thread.
	Pos int
	// Event and Data are the event. A run's end has Event RunDoneEvent
	// and Data its final status as a JSON string ("" when the run was
	// deleted by a rollback).
	Event string
	Data  json.RawMessage
}

// RunDoneEvent is the Event of a run's end in a thread's log.
const RunDoneEvent = "run_done"
