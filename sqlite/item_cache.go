package sqlite

import (
	"sync"
)

// Bounds of the itemCache: how many items it keeps, the total size of
// their values, and the largest value it keeps.
const (
	itemCacheSize      = 4096
	itemCacheBytes     = 8 << 20
	itemCacheValueSize = 64 << 10
)

// itemCache keeps the store items GetItem read (their rows, the value as
// stored) on a file this process has to itself (OpenOptions.Exclusive),
// for one value of the file's itemGen: every write of store_items is made
// in this process and moves it once over, so a row read at a generation is
// the current one while the generation stays. A read of a kept item then
// reads nothing; its expiry is checked against the read's clock, as the
// SELECT does, and the value is decoded anew for each caller.
type itemCache struct {
	mu    sync.RWMutex // reads (concurrent) take it shared
	gen   int64        // the generation the entries were read at
	bytes int          // of their values
	m     map[itemKey]*itemRow
}

// itemKey names an item: its joined namespace and its key.
type itemKey struct{ namespace, key string }

// get returns the row of the item at k cached at generation gen, or nil.
// The row is shared: callers do not modify it.
func (c *itemCache) get(k itemKey, gen int64) *itemRow {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.gen != gen {
		return nil
	}
	return c.m[k]
}

// put caches r, read at generation gen (loaded before the read). Entries
// of an older generation are dropped first; r is not kept when gen is
// older than the entries', nor when its value is larger than
// itemCacheValueSize. Beyond the cache's bounds, other entries make room.
func (c *itemCache) put(k itemKey, r *itemRow, gen int64) {
	if len(r.Value) > itemCacheValueSize {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case gen < c.gen:
		return
	case gen > c.gen || c.m == nil:
		c.gen, c.bytes, c.m = gen, 0, map[itemKey]*itemRow{}
	}
	if old := c.m[k]; old != nil {
		c.bytes -= len(old.Value)
		delete(c.m, k)
	}
	for ek, er := range c.m { // in no particular order
		if len(c.m) < itemCacheSize && c.bytes+len(r.Value) <= itemCacheBytes {
			break
		}
		c.bytes -= len(er.Value)
		delete(c.m, ek)
	}
	c.m[k] = r
	c.bytes += len(r.Value)
}

// itemGens maps a database file (fileID) to its itemGen: a generation of
// the store_items table that moves after every write of it made in this
// process, through any DB open on the file, before the write returns (see
// assistantGens).
var itemGens sync.Map // fileID -> *atomic.Int64

// itemsChanged moves the file's itemGen: called (deferred) by every method
// that may write store_items, once its write is over, whatever its
// outcome.
func (db *DB) itemsChanged() {
	db.itemGen.Add(1)
}
