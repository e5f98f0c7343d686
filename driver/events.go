package driver

import (
	"context"
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
	Kind   string // NotifyRunQueued, NotifyRunEnded, NotifyRunCancel, NotifyRunEvents or NotifyReset
	RunID  string
	Action string // NotifyRunCancel: CancelInterrupt or CancelRollback
	// ThreadID is the run's thread (NotifyRunEvents): the thread streams
	// of every process following it read the stored events.
	ThreadID string
}
