package sqlite

import (
	"sync"
	"sync/atomic"
)

// Bounds of the itemCache: how many items it keeps, the total size of
// their values, the largest value it keeps, and how many written keys it
// remembers (see itemCache.wrote).
const (
	itemCacheSize      = 4096
	itemCacheBytes     = 8 << 20
	itemCacheValueSize = 64 << 10
	itemCacheWrites    = 4096
)

// itemCache keeps the store items GetItem read (their rows, the value as
// stored), for the DBs of this process open on one file: a DB reads from
// it only when it has the file to itself (OpenOptions.Exclusive), and
// every DB of the file tells it of each write of store_items it makes
// (changed), naming the items written when it knows them. A write drops
// only the items it names (a write naming none drops every item), so
// that a put or a TTL refresh leaves the other items cached. A read of a
// kept item then reads nothing; its expiry is checked against the read's
// clock, as the SELECT does, and the value is decoded anew for each
// caller.
//
// A read that raced a write must not cache the row it read before the
// write: the cache's generation moves after every write, each written
// item remembers the generation its write moved it to (wrote), and a row
// read at an older generation than its item's last write, or than floor,
// is not kept.
type itemCache struct {
	gen atomic.Int64 // moves once after every write of store_items

	mu    sync.RWMutex // reads (concurrent) take it shared
	floor int64        // rows read before it are not kept
	wrote map[itemKey]int64
	bytes int // of the entries' values
	m     map[itemKey]*itemRow

	file any // the file's fileID
	refs int // DBs open on the file, guarded by itemCaches.mu
}

// itemKey names an item: its joined namespace and its key.
type itemKey struct{ namespace, key string }

// itemCaches holds the itemCache of each database file (fileID) some DB
// of this process has open; a file's goes with its last DB.
var itemCaches = struct {
	mu sync.Mutex
	m  map[any]*itemCache
}{m: map[any]*itemCache{}}

// acquireItemCache returns the itemCache of the file at path, for one
// more DB; release it when the DB closes.
func acquireItemCache(path string) (*itemCache, error) {
	id, err := fileID(path)
	if err != nil {
		return nil, err
	}
	itemCaches.mu.Lock()
	defer itemCaches.mu.Unlock()
	c := itemCaches.m[id]
	if c == nil {
		c = &itemCache{file: id, wrote: map[itemKey]int64{}, m: map[itemKey]*itemRow{}}
		itemCaches.m[id] = c
	}
	c.refs++
	return c, nil
}

// release gives back one DB's hold on c: the file's last DB drops it.
func (c *itemCache) release() {
	itemCaches.mu.Lock()
	defer itemCaches.mu.Unlock()
	if c.refs--; c.refs == 0 {
		delete(itemCaches.m, c.file)
	}
}

// generation is the generation a read is made at: load it before the read.
func (c *itemCache) generation() int64 { return c.gen.Load() }

// get returns the kept row of the item at k, or nil. The row is shared:
// callers do not modify it.
func (c *itemCache) get(k itemKey) *itemRow {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.m[k]
}

// put keeps r, read at generation gen (loaded before the read), unless the
// item was written since gen (or every item was: floor), or r's value is
// larger than itemCacheValueSize. Beyond the cache's bounds, other
// entries make room.
func (c *itemCache) put(k itemKey, r *itemRow, gen int64) {
	if len(r.Value) > itemCacheValueSize {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen < c.floor || gen < c.wrote[k] {
		return
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

// changed records a write of store_items, once it is over (whatever its
// outcome): the items at keys are dropped, or every item when keys is
// empty (a write whose items are not known).
func (c *itemCache) changed(keys ...itemKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gen := c.gen.Add(1)
	if len(keys) == 0 {
		c.floor = gen
		clear(c.wrote)
		clear(c.m)
		c.bytes = 0
		return
	}
	if len(c.wrote)+len(keys) > itemCacheWrites {
		// Forget the keys written so far: reads older than now are no
		// longer kept, whatever their item. The kept rows stay valid, as
		// their writes dropped the stale ones.
		c.floor = gen
		clear(c.wrote)
	}
	for _, k := range keys {
		if old := c.m[k]; old != nil {
			c.bytes -= len(old.Value)
			delete(c.m, k)
		}
		c.wrote[k] = gen
	}
}
