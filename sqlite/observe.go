package sqlite

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

var (
	_ driver.ObservableStorage = (*DB)(nil)
	_ driver.RunQueueCounter   = (*DB)(nil)
)

// dbObservers holds the observers of a DB (AddObserver).
type dbObservers struct {
	mu   sync.RWMutex
	list []graphserver.Observer
}

// AddObserver implements driver.ObservableStorage: o is told of every
// grouped write transaction (graphserver.StorageWriteEvent), whose size and
// latency show how well group commit amortizes the writer, and whose wait
// how long writes queue for it. It is safe for
// concurrent use.
func (db *DB) AddObserver(o graphserver.Observer) {
	if o == nil {
		return
	}
	db.observers.mu.Lock()
	defer db.observers.mu.Unlock()
	db.observers.list = append(db.observers.list, o)
}

// observeGroup reports a grouped transaction to the observers.
func (db *DB) observeGroup(ev graphserver.StorageWriteEvent) {
	db.observers.mu.RLock()
	defer db.observers.mu.RUnlock()
	for _, o := range db.observers.list {
		o.Observe(ev)
	}
}

// CountRunQueue implements driver.RunQueueCounter with one indexed
// query on the pending and running runs.
func (db *DB) CountRunQueue(ctx context.Context, now time.Time) (graphserver.RunQueueCount, error) {
	var row struct {
		Ready   int `db:"ready"`
		Delayed int `db:"delayed"`
		Running int `db:"running"`
	}
	err := db.reader.GetContext(ctx, &row, `SELECT
		(SELECT count(*) FROM runs WHERE status = 'pending' AND created_at <= ?) AS ready,
		(SELECT count(*) FROM runs WHERE status = 'pending' AND created_at > ?) AS delayed,
		(SELECT count(*) FROM runs WHERE status = 'running') AS running`, formatTime(now), formatTime(now))
	if err != nil {
		return graphserver.RunQueueCount{}, translate(fmt.Errorf("count run queue: %w", err))
	}
	return graphserver.RunQueueCount{Ready: row.Ready, Delayed: row.Delayed, Running: row.Running}, nil
}
