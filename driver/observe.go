package driver

import (
	"context"
	"time"

	"github.com/graphserver/graphserver/record"
)

// ObservableStorage is an optional Storage capability, detected with a type
// assertion: a driver that reports events of its own (sqlite: its grouped
// writes) to Observers. Server.AddObserver registers each observer with the
// Storage too. AddObserver must be safe to call at any time.
type ObservableStorage interface {
	AddObserver(o record.Observer)
}

// RunQueueCounter is an optional Storage capability, detected with a type
// assertion: counting the run queue for Server.Stats (sqlite implements it).
type RunQueueCounter interface {
	// CountRunQueue counts the runs of the queue at now, over every process
	// sharing the storage.
	CountRunQueue(ctx context.Context, now time.Time) (record.RunQueueCount, error)
}
