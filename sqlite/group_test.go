package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
)

// openGroupDB opens a fresh DB with a scratch table g(x INTEGER PRIMARY KEY).
func openGroupDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	_, err = db.writer.Exec(`CREATE TABLE g (x INTEGER PRIMARY KEY)`)
	require.NoError(t, err)
	return db
}

func insertG(x int) func(ctx context.Context, tx *connTx) error {
	return func(ctx context.Context, tx *connTx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO g (x) VALUES (?)`, x)
		return err
	}
}

func groupRows(t *testing.T, db *DB) []int {
	t.Helper()
	var xs []int
	require.NoError(t, db.reader.Select(&xs, `SELECT x FROM g ORDER BY x`))
	return xs
}

func TestGroupWriter(t *testing.T) {
	t.Parallel()

	t.Run("SavepointPerWrite", func(t *testing.T) {
		t.Parallel()
		db := openGroupDB(t)
		boom := errors.New("boom")
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		req := func(ctx context.Context, fn func(ctx context.Context, tx *connTx) error) *writeReq {
			return &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
		}
		bg := context.Background()
		batch := []*writeReq{
			req(bg, insertG(1)),
			req(bg, func(ctx context.Context, tx *connTx) error { // rolled back alone
				require.NoError(t, insertG(2)(ctx, tx))
				return boom
			}),
			req(bg, insertG(1)), // constraint violation: ECONFLICT
			req(cancelled, insertG(4)),
			req(bg, insertG(3)),
		}
		db.runGroup(batch)
		var errs []error
		for _, r := range batch {
			errs = append(errs, <-r.done)
		}
		require.NoError(t, errs[0])
		require.ErrorIs(t, errs[1], boom)
		require.Equal(t, graphserver.ECONFLICT, codeOf(errs[2]))
		require.ErrorIs(t, errs[3], context.Canceled)
		require.NoError(t, errs[4])
		require.Equal(t, []int{1, 3}, groupRows(t, db))
	})

	t.Run("RetriedWithSavepointsAfterAFailure", func(t *testing.T) {
		t.Parallel()
		db := openGroupDB(t)
		boom := errors.New("boom")
		var calls [3]atomic.Int32
		counted := func(i int, fn func(ctx context.Context, tx *connTx) error) func(ctx context.Context, tx *connTx) error {
			return func(ctx context.Context, tx *connTx) error {
				calls[i].Add(1)
				return fn(ctx, tx)
			}
		}
		run := func(fns ...func(ctx context.Context, tx *connTx) error) []error {
			var batch []*writeReq
			for _, fn := range fns {
				batch = append(batch, &writeReq{ctx: context.Background(), fn: fn, done: make(chan error, 1)})
			}
			db.runGroup(batch)
			var errs []error
			for _, r := range batch {
				errs = append(errs, <-r.done)
			}
			return errs
		}
		// All succeed: each runs once, without savepoints.
		require.Equal(t, []error{nil, nil}, run(counted(0, insertG(1)), counted(1, insertG(2))))
		require.Equal(t, []int32{1, 1}, []int32{calls[0].Load(), calls[1].Load()})
		// One fails: the group runs again, each write in its savepoint.
		calls[0].Store(0)
		calls[1].Store(0)
		errs := run(counted(0, insertG(3)), counted(1, func(ctx context.Context, tx *connTx) error {
			require.NoError(t, insertG(4)(ctx, tx))
			return boom
		}), counted(2, insertG(5)))
		require.NoError(t, errs[0])
		require.ErrorIs(t, errs[1], boom)
		require.NoError(t, errs[2])
		require.Equal(t, []int32{2, 2, 1}, []int32{calls[0].Load(), calls[1].Load(), calls[2].Load()},
			"the first two ran in the optimistic pass and again; the third only in the second pass")
		require.Equal(t, []int{1, 2, 3, 5}, groupRows(t, db))
	})

	t.Run("AloneWithoutSavepoint", func(t *testing.T) {
		t.Parallel()
		db := openGroupDB(t)
		boom := errors.New("boom")
		one := func(fn func(ctx context.Context, tx *connTx) error) error {
			r := &writeReq{ctx: context.Background(), fn: fn, done: make(chan error, 1)}
			db.runGroup([]*writeReq{r})
			return <-r.done
		}
		require.ErrorIs(t, one(func(ctx context.Context, tx *connTx) error {
			require.NoError(t, insertG(5)(ctx, tx))
			return boom
		}), boom)
		require.Empty(t, groupRows(t, db), "a failed write alone in its group is rolled back")
		require.NoError(t, one(insertG(6)))
		require.Equal(t, graphserver.ECONFLICT, codeOf(one(insertG(6))))
		require.Equal(t, []int{6}, groupRows(t, db))
	})

	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		db := openGroupDB(t)
		var wg sync.WaitGroup
		errs := make([]error, 40)
		for i := range errs {
			wg.Go(func() {
				x := i / 2 // every x twice: one of each pair conflicts
				errs[i] = db.writeGrouped(context.Background(), insertG(x))
			})
		}
		wg.Wait()
		failed := 0
		for _, err := range errs {
			if err != nil {
				require.Equal(t, graphserver.ECONFLICT, codeOf(err))
				failed++
			}
		}
		require.Equal(t, 20, failed)
		require.Len(t, groupRows(t, db), 20)
	})

	t.Run("PanicReachesCaller", func(t *testing.T) {
		t.Parallel()
		db := openGroupDB(t)
		require.PanicsWithValue(t, "bad write", func() {
			_ = db.writeGrouped(context.Background(), func(ctx context.Context, tx *connTx) error {
				require.NoError(t, insertG(7)(ctx, tx))
				panic("bad write")
			})
		})
		require.NoError(t, db.writeGrouped(context.Background(), insertG(8)))
		require.Equal(t, []int{8}, groupRows(t, db))
	})

	// A group's event reports how long its oldest write queued for it: a
	// write queued behind a group held 50 ms waited at least that long.
	t.Run("WaitReported", func(t *testing.T) {
		t.Parallel()
		db := openGroupDB(t)
		var mu sync.Mutex
		var evs []graphserver.StorageWriteEvent
		db.AddObserver(observerFunc(func(ev graphserver.Event) {
			if w, ok := ev.(graphserver.StorageWriteEvent); ok {
				mu.Lock()
				evs = append(evs, w)
				mu.Unlock()
			}
		}))
		release := make(chan struct{})
		held := make(chan struct{})
		first := make(chan error, 1)
		go func() {
			first <- db.writeGrouped(context.Background(), func(ctx context.Context, tx *connTx) error {
				close(held)
				<-release
				return insertG(1)(ctx, tx)
			})
		}()
		<-held
		second := make(chan error, 1)
		go func() { second <- db.writeGrouped(context.Background(), insertG(2)) }()
		require.Eventually(t, func() bool {
			db.group.mu.Lock()
			defer db.group.mu.Unlock()
			return len(db.group.queue) == 1
		}, 5*time.Second, time.Millisecond, "the second write queues behind the held group")
		const hold = 50 * time.Millisecond
		time.Sleep(hold)
		close(release)
		require.NoError(t, <-first)
		require.NoError(t, <-second)
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, evs, 2)
		require.Less(t, evs[0].Wait, hold, "the first write found the writer idle")
		require.GreaterOrEqual(t, evs[1].Wait, hold, "the second waited for the held group to commit")
		require.Equal(t, 1, evs[1].Size)
	})

	// A caller that gives up while its write waits is answered at once,
	// and its write never runs: while the write is queued, and once the
	// group loop has taken it and waits for the connection, which a long
	// write outside the group holds.
	for _, c := range []struct {
		name string
		wait func(t *testing.T, db *DB, ctx *checkedCtx)
	}{
		{"CallerGivesUpWhileQueued", func(t *testing.T, db *DB, ctx *checkedCtx) {
			<-ctx.checked // past writeGrouped's first check: it waits for its group now
		}},
		{"CallerGivesUpWhileItsGroupWaits", func(t *testing.T, db *DB, ctx *checkedCtx) {
			require.Eventually(t, func() bool {
				db.group.mu.Lock()
				defer db.group.mu.Unlock()
				return len(db.group.queue) == 0
			}, 10*time.Second, time.Millisecond, "the group loop takes the write")
			time.Sleep(10 * time.Millisecond) // into BeginTx, which waits
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := openGroupDB(t)
			holding, release := make(chan struct{}), make(chan struct{})
			held := make(chan error, 1)
			go func() {
				held <- db.write(context.Background(), func(tx *connTx) error {
					close(holding)
					<-release
					_, err := tx.ExecContext(context.Background(), `INSERT INTO g (x) VALUES (1)`)
					return err
				})
			}()
			<-holding
			base, cancel := context.WithCancel(context.Background())
			ctx := &checkedCtx{Context: base, checked: make(chan struct{})}
			res := make(chan error, 1)
			go func() { res <- db.writeGrouped(ctx, insertG(2)) }()
			c.wait(t, db, ctx)
			cancel()
			select {
			case err := <-res:
				require.ErrorIs(t, err, context.Canceled)
			case <-time.After(10 * time.Second):
				close(release)
				t.Fatal("writeGrouped kept waiting after its context ended")
			}
			close(release)
			require.NoError(t, <-held)
			// The abandoned write never ran; later writes go on.
			require.NoError(t, db.writeGrouped(context.Background(), insertG(3)))
			require.Equal(t, []int{1, 3}, groupRows(t, db))
		})
	}

	t.Run("StartedWriteIsAwaited", func(t *testing.T) {
		t.Parallel()
		db := openGroupDB(t)
		ctx, cancel := context.WithCancel(context.Background())
		err := db.writeGrouped(ctx, func(ctx context.Context, tx *connTx) error {
			cancel() // the caller's context ends while fn runs
			return insertG(5)(ctx, tx)
		})
		require.NoError(t, err, "a started write reports its own result")
		require.Equal(t, []int{5}, groupRows(t, db))
	})

	t.Run("CloseUnderLoad", func(t *testing.T) {
		t.Parallel()
		db, err := Open(filepath.Join(t.TempDir(), "gs.db"))
		require.NoError(t, err)
		_, err = db.writer.Exec(`CREATE TABLE g (x INTEGER PRIMARY KEY)`)
		require.NoError(t, err)
		g := db.group
		// Writers keep queueing; each write waits a little for another one
		// to be queued (or writes to be refused), so the queue is rarely
		// empty between groups while the load lasts.
		var wg sync.WaitGroup
		var mu sync.Mutex
		next := 0
		loaded := make(chan struct{})
		var once sync.Once
		var giveUp atomic.Bool // the test failed: end the load
		for range 8 {
			wg.Go(func() {
				for {
					mu.Lock()
					next++
					n := next
					mu.Unlock()
					if n == 200 {
						once.Do(func() { close(loaded) })
					}
					err := db.writeGrouped(context.Background(), func(ctx context.Context, tx *connTx) error {
						// Wait (briefly: when every writer is in this group,
						// nobody can queue) for another write to be queued.
						for range 1000 {
							g.mu.Lock()
							busy := len(g.queue) > 0 || g.closed || giveUp.Load()
							g.mu.Unlock()
							if busy {
								break
							}
							runtime.Gosched()
						}
						return insertG(n)(ctx, tx)
					})
					if err != nil || giveUp.Load() {
						return
					}
				}
			})
		}
		<-loaded
		closed := make(chan error, 1)
		go func() { closed <- db.Close() }()
		select {
		case err := <-closed:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			giveUp.Store(true)
			wg.Wait()
			<-closed
			t.Fatal("Close did not return while writes kept coming")
		}
		wg.Wait()
	})

	t.Run("Closed", func(t *testing.T) {
		t.Parallel()
		db, err := Open(filepath.Join(t.TempDir(), "gs.db"))
		require.NoError(t, err)
		require.NoError(t, db.Close())
		require.Error(t, db.writeGrouped(context.Background(), insertG(1)))
		require.NoError(t, db.Close())
	})
}

// checkedCtx closes checked the first time Err is called.
type checkedCtx struct {
	context.Context
	once    sync.Once
	checked chan struct{}
}

func (c *checkedCtx) Err() error {
	c.once.Do(func() { close(c.checked) })
	return c.Context.Err()
}

func codeOf(err error) string { return graphserver.ErrorCode(err) }

// observerFunc adapts a function to graphserver.Observer.
type observerFunc func(graphserver.Event)

func (f observerFunc) Observe(ev graphserver.Event) { f(ev) }
