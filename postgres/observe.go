package postgres

import (
	"sync"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

var _ driver.ObservableStorage = (*DB)(nil)

// dbObservers holds the observers of a DB (AddObserver).
type dbObservers struct {
	mu   sync.RWMutex
	list []graphserver.Observer
}

// AddObserver implements driver.ObservableStorage: o is told of every
// write transaction of the run hot path (graphserver.StorageWriteEvent:
// size 1, its latency). It is safe for concurrent use.
func (db *DB) AddObserver(o graphserver.Observer) {
	if o == nil {
		return
	}
	db.observers.mu.Lock()
	defer db.observers.mu.Unlock()
	db.observers.list = append(db.observers.list, o)
}

// observeWrite reports a write transaction to the observers.
func (db *DB) observeWrite(took time.Duration, err error) {
	db.observers.mu.RLock()
	defer db.observers.mu.RUnlock()
	for _, o := range db.observers.list {
		o.Observe(graphserver.StorageWriteEvent{Size: 1, Duration: took, Err: err})
	}
}
