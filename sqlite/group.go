package sqlite

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/graphserver/graphserver"
)

// maxGroup is the most write functions one grouped transaction runs.
const maxGroup = 64

// groupWriter commits the short, frequent writes of the hot paths
// (writeGrouped) in groups: the functions queued while the previous group
// commits run in one transaction, so that one commit (the costly part of a
// small write) serves several callers; a failing one is rolled back alone
// (runGroup). Its goroutine is owned by the DB: started by Open,
// stopped by Close.
type groupWriter struct {
	mu      sync.Mutex
	queue   []*writeReq
	closed  bool
	pending chan struct{} // capacity 1: the queue is not empty
	stop    chan struct{}
	done    chan struct{}
}

// writeReq is one function waiting for its group.
type writeReq struct {
	ctx    context.Context
	fn     func(ctx context.Context, tx *connTx) error
	done   chan error // capacity 1
	queued time.Time  // when writeGrouped queued it

	// state is reqQueued until the group loop starts fn (reqStarted) or
	// the caller gives up waiting (reqAbandoned), whichever comes first.
	state    atomic.Int32
	panicked any // fn panicked with this value
}

const (
	reqQueued int32 = iota
	reqStarted
	reqAbandoned
)

func newGroupWriter() *groupWriter {
	return &groupWriter{pending: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// writeGrouped runs fn in a write transaction shared with other grouped
// writes: fn's changes are rolled back alone when it fails, and committed
// with the group otherwise. It returns fn's error (through translate), or
// the group's commit error. fn may run twice (when another write of its
// group fails, the group runs again, see runGroup), so it must set its
// results anew each time rather than add to them. fn gets ctx without its
// cancellation (an interrupted statement would roll back the whole group),
// so it must be short; ctx is checked before fn runs. fn must not call the
// DB (the group holds the writer connection). When ctx ends while fn waits
// for its group, writeGrouped returns ctx.Err() and fn never runs; once fn
// has started, writeGrouped waits for the group's commit whatever ctx does,
// so a committed write is never reported as failed.
func (db *DB) writeGrouped(ctx context.Context, fn func(ctx context.Context, tx *connTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	g := db.group
	req := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1), queued: time.Now()}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return errors.New("sqlite: database is closed")
	}
	g.queue = append(g.queue, req)
	g.mu.Unlock()
	select {
	case g.pending <- struct{}{}:
	default:
	}
	var err error
	select {
	case err = <-req.done:
	case <-ctx.Done():
		if req.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return ctx.Err()
		}
		err = <-req.done
	}
	if req.panicked != nil {
		panic(req.panicked)
	}
	return err
}

// groupLoop runs groups until Close; then it fails what is still queued.
// Close marks the writer closed before it closes stop, so no write joins
// the queue after that and the loop reaches stop.
func (db *DB) groupLoop() {
	g := db.group
	defer close(g.done)
	for {
		select {
		case <-g.pending:
		case <-g.stop:
			g.mu.Lock()
			g.closed = true
			rest := g.queue
			g.queue = nil
			g.mu.Unlock()
			for _, r := range rest {
				r.done <- errors.New("sqlite: database is closed")
			}
			return
		}
		for {
			// Let the goroutines ready to run queue their writes first: they
			// join this group instead of waiting for the next commit. Without
			// this, on few cores a write arriving at an idle writer commits
			// alone while the requests behind it are a scheduling slice away.
			runtime.Gosched()
			g.mu.Lock()
			n := min(len(g.queue), maxGroup)
			batch := g.queue[:n:n]
			g.queue = g.queue[n:]
			if len(g.queue) == 0 {
				g.queue = nil
			}
			g.mu.Unlock()
			if n == 0 {
				break
			}
			db.runGroup(batch)
			db.restartLog()
		}
	}
}

// runGroup runs batch in one transaction and answers each request.
//
// It first runs the writes one after the other without savepoints (a
// statement each, and a statement journal, saved per write). When one
// fails, that transaction is rolled back and the group runs again with a
// savepoint per write, so that the failure is undone alone; the writes of
// a group may therefore run twice (see writeGrouped).
func (db *DB) runGroup(batch []*writeReq) {
	// The transaction begins before the writes are taken: a caller that
	// gives up while the group waits for the connection (which a write
	// outside the group may hold) is answered then, its write never run.
	start := time.Now()
	var wait time.Duration // the oldest write's, the first in the queue
	if q := batch[0].queued; !q.IsZero() {
		wait = start.Sub(q)
	}
	tx, err := db.beginGroup()
	live := make([]*writeReq, 0, len(batch))
	for _, r := range batch {
		// Writes whose caller gave up before they started are answered now.
		if err := r.ctx.Err(); err != nil || !r.state.CompareAndSwap(reqQueued, reqStarted) {
			r.done <- cmp.Or(err, context.Canceled)
			continue
		}
		live = append(live, r)
	}
	if err != nil || len(live) == 0 {
		if tx != nil {
			rollback(tx)
		}
		for _, r := range live {
			r.done <- err
		}
		return
	}
	results, retry := db.tryGroup(tx, start, wait, live, false)
	if retry {
		for _, r := range live {
			r.panicked = nil
		}
		start = time.Now()
		if tx, err = db.beginGroup(); err != nil {
			for i := range results {
				results[i] = err
			}
		} else {
			results, _ = db.tryGroup(tx, start, wait, live, true)
		}
	}
	for i, r := range live {
		r.done <- results[i]
	}
}

// beginGroup begins a group's transaction on the writer connection.
func (db *DB) beginGroup() (*connTx, error) {
	tx, err := beginTx(context.Background(), db.writer, beginWrite)
	if err != nil {
		return nil, translate(fmt.Errorf("begin write: %w", err))
	}
	return tx, nil
}

// tryGroup runs batch in tx, begun at start after its oldest write waited
// wait, and ends tx: with savepoints,
// each write that fails is rolled back alone and the others are committed;
// without, the first failure rolls the transaction back and asks for a
// retry (unless the write is alone). It returns each write's result.
func (db *DB) tryGroup(tx *connTx, start time.Time, wait time.Duration, batch []*writeReq, savepoints bool) (results []error, retry bool) {
	results = make([]error, len(batch))
	fail := func(err error) ([]error, bool) {
		for i := range results {
			results[i] = err
		}
		return results, false
	}
	ctx := context.Background()
	defer rollback(tx)
	defer db.latest.discard(0) // what a group that did not commit staged
	ran := false
	for i, r := range batch {
		mark := db.latest.mark()
		if savepoints {
			if _, err := tx.ExecContext(ctx, `SAVEPOINT grouped`); err != nil {
				return fail(translate(fmt.Errorf("begin write: %w", err)))
			}
		}
		if err := callFn(context.WithoutCancel(r.ctx), tx, r); err != nil {
			db.latest.discard(mark)
			results[i] = translate(err)
			if !savepoints {
				// Alone, the write fails by itself; else undo it alone.
				return results, len(batch) > 1
			}
			if _, err := tx.ExecContext(ctx, `ROLLBACK TO grouped`); err != nil {
				// The transaction is gone (SQLite rolled it back).
				return fail(errors.Join(results[i], translate(fmt.Errorf("roll back write: %w", err))))
			}
		} else {
			ran = true
		}
		if savepoints {
			if _, err := tx.ExecContext(ctx, `RELEASE grouped`); err != nil {
				return fail(translate(fmt.Errorf("end write: %w", err)))
			}
		}
	}
	if ran {
		err := tx.Commit()
		db.observeGroup(graphserver.StorageWriteEvent{Size: len(batch), Duration: time.Since(start), Wait: wait, Err: err})
		if err == nil {
			db.wal.committed()
			db.latest.commit()
		}
		if err != nil {
			return fail(translate(fmt.Errorf("commit: %w", err)))
		}
	}
	return results, false
}

// callFn calls fn; a panic is recorded in r (writeGrouped panics with it
// in the caller's goroutine) and returned as an error so that the group
// rolls fn back and goes on.
func callFn(ctx context.Context, tx *connTx, r *writeReq) (err error) {
	defer func() {
		if v := recover(); v != nil {
			r.panicked = v
			err = fmt.Errorf("write panicked: %v", v)
		}
	}()
	return r.fn(ctx, tx)
}
