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

	"github.com/jmoiron/sqlx"
)

// maxGroup is the most write functions one grouped transaction runs.
const maxGroup = 64

// groupWriter commits the short, frequent writes of the run queue and the
// checkpoints (writeGrouped) in groups: the functions queued while the
// previous group commits run in one transaction, each inside its own
// savepoint, so that one commit (the costly part of a small write) serves
// several callers. Its goroutine is owned by the DB: started by Open,
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
	ctx  context.Context
	fn   func(ctx context.Context, tx *sqlx.Tx) error
	done chan error // capacity 1

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
// writes, inside a savepoint: fn's changes are rolled back alone when it
// fails, and committed with the group otherwise. It returns fn's error
// (through translate), or the group's commit error. fn gets ctx without its
// cancellation (an interrupted statement would roll back the whole group),
// so it must be short; ctx is checked before fn runs. fn must not call the
// DB (the group holds the writer connection). When ctx ends while fn waits
// for its group, writeGrouped returns ctx.Err() and fn never runs; once fn
// has started, writeGrouped waits for the group's commit whatever ctx does,
// so a committed write is never reported as failed.
func (db *DB) writeGrouped(ctx context.Context, fn func(ctx context.Context, tx *sqlx.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	g := db.group
	req := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
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
		}
	}
}

// runGroup runs batch in one transaction and answers each request.
func (db *DB) runGroup(batch []*writeReq) {
	results := make([]error, len(batch))
	fail := func(err error) {
		for _, r := range batch {
			r.done <- err
		}
	}
	ctx := context.Background()
	start := time.Now()
	tx, err := db.writer.BeginTxx(ctx, nil)
	if err != nil {
		fail(translate(fmt.Errorf("begin write: %w", err)))
		return
	}
	defer rollback(tx)
	ran := false
	// A write alone in its group needs no savepoint: when it fails, the
	// transaction is rolled back instead of committed.
	solo := len(batch) == 1
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil || !r.state.CompareAndSwap(reqQueued, reqStarted) {
			results[i] = cmp.Or(err, context.Canceled)
			continue
		}
		if !solo {
			if _, err := tx.ExecContext(ctx, `SAVEPOINT grouped`); err != nil {
				fail(translate(fmt.Errorf("begin write: %w", err)))
				return
			}
		}
		if err := callFn(context.WithoutCancel(r.ctx), tx, r); err != nil {
			results[i] = translate(err)
			if solo {
				continue
			}
			if _, err := tx.ExecContext(ctx, `ROLLBACK TO grouped`); err != nil {
				// The transaction is gone (SQLite rolled it back).
				fail(errors.Join(results[i], translate(fmt.Errorf("roll back write: %w", err))))
				return
			}
		} else {
			ran = true
		}
		if !solo {
			if _, err := tx.ExecContext(ctx, `RELEASE grouped`); err != nil {
				fail(translate(fmt.Errorf("end write: %w", err)))
				return
			}
		}
	}
	if ran {
		err := tx.Commit()
		db.observeGroup(len(batch), time.Since(start), err)
		if err != nil {
			fail(translate(fmt.Errorf("commit: %w", err)))
			return
		}
	}
	for i, r := range batch {
		r.done <- results[i]
	}
}

// callFn calls fn; a panic is recorded in r (writeGrouped panics with it
// in the caller's goroutine) and returned as an error so that the group
// rolls fn back and goes on.
func callFn(ctx context.Context, tx *sqlx.Tx, r *writeReq) (err error) {
	defer func() {
		if v := recover(); v != nil {
			r.panicked = v
			err = fmt.Errorf("write panicked: %v", v)
		}
	}()
	return r.fn(ctx, tx)
}
