package sqlite

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// A store item's full-text entry is written to store_fts_pending by its put
// and moved into store_fts (the FTS5 index) later, in batches: one FTS5
// segment per batch instead of one per put (see
// migrations/0009_store_fts_pending.sql). The entries are as durable as the
// items; only their indexing waits, and a full-text search indexes what
// waits before it reads.

// textIndexBatch is how many texts this DB queues before its indexer runs
// without waiting for the next tick.
const textIndexBatch = 256

// textIndexInterval is how often the indexer looks for texts to index.
const textIndexInterval = time.Second

// textIndexer is the DB's background indexer of waiting texts. Its
// goroutine is owned by the DB: started by Open, stopped by Close.
type textIndexer struct {
	queued atomic.Int64  // texts this DB queued since it last indexed
	wake   chan struct{} // capacity 1: queued reached textIndexBatch
	stop   chan struct{}
	done   chan struct{}
}

func newTextIndexer() *textIndexer {
	return &textIndexer{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// textQueued counts a committed put that queued a text, and wakes the
// indexer once a batch is waiting.
func (db *DB) textQueued() {
	if db.text.queued.Add(1) >= textIndexBatch {
		select {
		case db.text.wake <- struct{}{}:
		default:
		}
	}
}

// textIndexLoop indexes the waiting texts every textIndexInterval, or when
// a batch is waiting, until Close. The first round also indexes what an
// earlier process left waiting. A failure is left to the next round (and to
// the next full-text search, which reports it).
func (db *DB) textIndexLoop() {
	x := db.text
	defer close(x.done)
	tick := time.NewTicker(textIndexInterval)
	defer tick.Stop()
	first := true
	for {
		select {
		case <-x.stop:
			return
		case <-x.wake:
		case <-tick.C:
		}
		if first || x.queued.Load() > 0 {
			first = false
			_ = db.indexText(context.Background())
		}
	}
}

// indexText moves the texts waiting in store_fts_pending into store_fts, in
// one grouped write; it reads first, so that nothing is written when
// nothing waits.
func (db *DB) indexText(ctx context.Context) error {
	var waiting bool
	if err := db.reader.GetContext(ctx, &waiting, `SELECT EXISTS (SELECT 1 FROM store_fts_pending)`); err != nil {
		return fmt.Errorf("read waiting store texts: %w", err)
	}
	if !waiting {
		return nil
	}
	queued := db.text.queued.Load() // committed before this write begins: it indexes them
	err := db.writeGrouped(ctx, func(ctx context.Context, tx *connTx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO store_fts (rowid, text) SELECT item_id, text FROM store_fts_pending ORDER BY item_id`); err != nil {
			return fmt.Errorf("index store texts: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM store_fts_pending`); err != nil {
			return fmt.Errorf("index store texts: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	db.text.queued.Add(-queued)
	return nil
}
