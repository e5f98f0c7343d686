package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/graphserver/graphserver/driver"
)

// latestCache keeps, on a file opened Exclusive, the latest root
// checkpoint of threads whose checkpoints this DB wrote or read last, as a
// read would return it: a thread run's creation reads its thread's latest
// checkpoint on the writer (the preload, see graphserver's
// preloadCheckpoint), and with the entry that read is one indexed look-up
// of the latest checkpoint's id instead of its row, its blobs and their
// decoding.
//
// An entry is made by the write of a root checkpoint whose parent is the
// thread's entry (or that has no parent), from the entry and the blobs
// written, or by a read of the latest checkpoint on the writer (readLatest),
// and counts only once its transaction committed (staged until then); a
// root write that cannot make one drops the thread's entry. An
// entry is used only when the thread's latest root checkpoint in storage
// is still its checkpoint (same thread key, same id, no pending writes),
// checked in the reading transaction, so that every other change of the
// thread's checkpoints (a run's rollback, a deleted thread, pending
// writes, a checkpoint written by a path that does not make entries) only
// makes the read go to storage. The one change that keeps the id, prune's
// keep_latest rewriting the latest checkpoint, drops the entry. Exclusive
// guarantees no other process or DB writes the file meanwhile.
type latestCache struct {
	enabled atomic.Bool
	verify  atomic.Bool // every hit is compared with a read (GRAPHSERVER_SQLITE_VERIFY_CACHE)
	hits    atomic.Int64

	mu      sync.Mutex
	entries map[string]*latestEntry // thread id ->
	bytes   int
	// staged are the entries (nil: drop) made by the writes of the group
	// being run, in order.
	staged []stagedLatest
}

type stagedLatest struct {
	threadID string
	entry    *latestEntry
}

// latestEntry is a thread's latest root checkpoint: its row as stored and
// each stored channel's value in the parts loadValues assembles it from.
type latestEntry struct {
	row   checkpointRow
	chans map[string]chanParts
	size  int
}

// chanParts is a channel's location and value: row 0 of its chain (head)
// and the elements rows 1..seq appended (tail, joined with commas), for a
// chain linked to no other.
type chanParts struct {
	loc        chanLoc
	head, tail []byte
}

// Bounds of the cache: a thread's entry past latestMaxEntry bytes is not
// kept; past the totals, entries are evicted.
const (
	latestMaxEntries = 4096
	latestMaxBytes   = 16 << 20
	latestMaxEntry   = 256 << 10
)

// verifyCacheEnv, set to 1, turns the cache on for every DB (Exclusive or
// not) and compares every hit with a read of storage, a difference being
// an error: for running the tests in that mode.
const verifyCacheEnv = "GRAPHSERVER_SQLITE_VERIFY_CACHE"

func newLatestCache(exclusive bool) *latestCache {
	verify := os.Getenv(verifyCacheEnv) == "1"
	c := &latestCache{entries: map[string]*latestEntry{}}
	c.enabled.Store(exclusive || verify)
	c.verify.Store(verify)
	return c
}

// lookupLocked returns a thread's entry: the one staged last in this
// group (nil for a staged drop), or the committed one. c.mu is held.
func (c *latestCache) lookupLocked(threadID string) *latestEntry {
	for i := len(c.staged) - 1; i >= 0; i-- {
		if c.staged[i].threadID == threadID {
			return c.staged[i].entry
		}
	}
	return c.entries[threadID]
}

func (c *latestCache) committed(threadID string) *latestEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[threadID]
}

// drop forgets a thread's committed entry at once (a miss is always
// safe), and the entries its group staged so far.
func (c *latestCache) drop(threadID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(threadID)
}

func (c *latestCache) dropLocked(threadID string) {
	c.remove(threadID)
	for i := range c.staged {
		if c.staged[i].threadID == threadID {
			c.staged[i].entry = nil
		}
	}
}

func (c *latestCache) remove(threadID string) {
	if e := c.entries[threadID]; e != nil {
		c.bytes -= e.size
		delete(c.entries, threadID)
	}
}

// mark, discard and commit bracket a grouped write (group.go): what a
// write staged is discarded when it fails, and the group's staged entries
// replace the committed ones when the group commits.
func (c *latestCache) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.staged)
}

func (c *latestCache) discard(mark int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.truncate(mark)
}

func (c *latestCache) truncate(mark int) {
	clear(c.staged[mark:])
	c.staged = c.staged[:mark]
}

func (c *latestCache) commit() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.staged {
		c.remove(s.threadID)
		if s.entry == nil || s.entry.size > latestMaxEntry {
			continue
		}
		for id := range c.entries { // evict any: a miss only costs a read
			if len(c.entries) < latestMaxEntries && c.bytes+s.entry.size <= latestMaxBytes {
				break
			}
			c.remove(id)
		}
		c.entries[s.threadID] = s.entry
		c.bytes += s.entry.size
	}
	c.truncate(0)
}

// forPut returns c when the put of a checkpoint in namespace ns may stage
// an entry (a root checkpoint, the cache on), nil otherwise: a placer
// without a cache records nothing of what it writes.
func (c *latestCache) forPut(ns string) *latestCache {
	if c == nil || ns != "" || !c.enabled.Load() {
		return nil
	}
	return c
}

// afterPut records the root checkpoint cp just written through p (its row
// as stored, its channels' locations): it stages the thread's new entry,
// made from the entry of cp's parent and the blobs p wrote, or the
// thread's drop when it cannot be made.
func (c *latestCache) afterPut(p *placer, cp *driver.CheckpointRecord, row checkpointRow, locs map[string]chanLoc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	parent := c.lookupLocked(cp.ThreadID)
	c.dropLocked(cp.ThreadID) // until the group commits
	c.staged = append(c.staged, stagedLatest{threadID: cp.ThreadID, entry: c.nextEntry(p, cp, row, locs, parent)})
}

func (c *latestCache) nextEntry(p *placer, cp *driver.CheckpointRecord, row checkpointRow, locs map[string]chanLoc, parent *latestEntry) *latestEntry {
	var prev map[string]chanParts
	switch {
	case p.replaced:
		return nil
	case cp.ParentCheckpointID == "":
	case parent != nil && parent.row.TID == p.tid && string(parent.row.CheckpointID) == cp.ParentCheckpointID:
		prev = parent.chans
	default:
		return nil
	}
	e := &latestEntry{row: row, chans: make(map[string]chanParts, len(locs))}
	for ch, l := range locs {
		if !l.stored {
			continue
		}
		var parts chanParts
		if b, ok := p.written[[2]string{ch, l.version}]; ok && b.loc == l {
			if b.linked {
				return nil
			}
			if !b.appended {
				parts = chanParts{loc: l, head: b.data}
			} else {
				base, ok := prev[ch]
				if !ok || base.loc.chain != l.chain || base.loc.seq+1 != l.seq {
					return nil
				}
				parts = chanParts{loc: l, head: base.head, tail: joinTail(base.tail, b.data)}
			}
		} else if old, ok := prev[ch]; ok && old.loc == l {
			parts = old
		} else {
			return nil
		}
		e.chans[ch] = parts
	}
	e.setSize()
	return e
}

// setSize sets e.size, roughly the bytes e holds.
func (e *latestEntry) setSize() {
	e.size = len(e.row.Metadata) + len(e.row.Shared.String) + len(e.row.Channels) + len(e.row.Body) + 256
	for ch, p := range e.chans {
		e.size += len(ch) + len(p.head) + len(p.tail)
	}
}

// joinTail appends a chain row's elements to the elements before it, as
// loadTailQuery joins them (rows without elements add nothing).
func joinTail(tail, inner []byte) []byte {
	switch {
	case len(inner) == 0:
		return tail
	case len(tail) == 0:
		return inner
	}
	out := make([]byte, 0, len(tail)+1+len(inner))
	return append(append(append(out, tail...), ','), inner...)
}

// record returns the entry as loadCheckpoint reads it: a record of the
// caller's own.
func (e *latestEntry) record(threadID string) (*driver.CheckpointRecord, error) {
	cp, _, err := decodeCheckpointRow(threadID, &e.row)
	if err != nil {
		return nil, err
	}
	cp.Values = make(map[string]json.RawMessage, len(e.chans))
	for ch, parts := range e.chans {
		if len(parts.tail) == 0 { // concatArrays would return head itself
			cp.Values[ch] = bytes.Clone(parts.head)
			continue
		}
		if cp.Values[ch], err = concatArrays(parts.head, [][]byte{parts.tail}); err != nil {
			return nil, fmt.Errorf("channel %s: %w", ch, err)
		}
	}
	cp.PendingWrites = []driver.PendingWrite{}
	return cp, nil
}

// latestKnownQuery reads a thread's latest root checkpoint's key and id,
// and whether it has pending writes: what an entry must still match.
const latestKnownQuery = `SELECT c.tid, c.checkpoint_id, EXISTS (SELECT 1 FROM checkpoint_writes AS w
		WHERE w.tid = c.tid AND w.checkpoint_ns = c.checkpoint_ns AND w.checkpoint_id = c.checkpoint_id)
	FROM checkpoints AS c WHERE c.tid = (SELECT tid FROM checkpoint_threads WHERE thread_id = ?) AND c.checkpoint_ns = ''
	ORDER BY c.checkpoint_id DESC LIMIT 1`

// get reads a thread's latest root checkpoint in tx: from the thread's
// entry when it still matches storage, else from storage (readLatest).
func (c *latestCache) get(ctx context.Context, tx *connTx, threadID string) (*driver.CheckpointRecord, error) {
	cp, err := c.cached(ctx, tx, threadID)
	if cp != nil || err != nil {
		return cp, err
	}
	return c.readLatest(ctx, tx, threadID)
}

// cached returns a thread's latest root checkpoint from its entry, when it
// has one that still matches storage (read in tx); nil otherwise.
func (c *latestCache) cached(ctx context.Context, tx *connTx, threadID string) (*driver.CheckpointRecord, error) {
	e := c.committed(threadID)
	if e == nil {
		return nil, nil
	}
	var tid int64
	var id checkpointID
	var hasWrites bool
	err := tx.QueryRowxContext(ctx, latestKnownQuery, threadID).Scan(&tid, &id, &hasWrites)
	if errors.Is(err, sql.ErrNoRows) || err == nil && (tid != e.row.TID || id != e.row.CheckpointID || hasWrites) {
		c.drop(threadID)
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("get checkpoint: %w", err)
	}
	c.hits.Add(1)
	cp, err := e.record(threadID)
	if err != nil || !c.verify.Load() {
		return cp, err
	}
	want, err := getCheckpoint(ctx, tx, threadID, "", "")
	if err != nil {
		return nil, err
	}
	if !reflect.DeepEqual(cp, want) {
		return nil, fmt.Errorf("sqlite: the cached latest checkpoint of thread %s differs from storage:\ncached %+v\nstored %+v", threadID, cp, want)
	}
	return cp, nil
}

// readLatest reads a thread's latest root checkpoint in tx, as
// getCheckpoint does, and stages the thread's entry from what it read
// when it can be one (no pending writes, no chain linked to another), so
// that the runs of a thread whose entry is missing (one written before
// this DB opened, or after a prune) read the cache again from the next.
func (c *latestCache) readLatest(ctx context.Context, tx *connTx, threadID string) (*driver.CheckpointRecord, error) {
	parts := &valueParts{chans: map[string]chanParts{}}
	cp, row, err := getCheckpointParts(ctx, tx, threadID, "", "", parts)
	if err != nil || row.HasWrites || parts.linked {
		return cp, err
	}
	for ch, p := range parts.chans { // cp's values may be the same bytes
		p.head = bytes.Clone(p.head)
		parts.chans[ch] = p
	}
	e := &latestEntry{row: *row, chans: parts.chans}
	e.setSize()
	c.mu.Lock()
	c.staged = append(c.staged, stagedLatest{threadID: threadID, entry: e})
	c.mu.Unlock()
	return cp, nil
}
