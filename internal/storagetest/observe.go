package storagetest

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// exerciseObserve checks the optional capabilities behind Server.Stats and
// Server.AddObserver: RunQueueCounter counts ready, delayed and running
// runs; an ObservableStorage reports committed writes. A driver without
// them is skipped.
func exerciseObserve(t *testing.T, open func(t *testing.T) driver.Storage) {
	t.Run("CountRunQueue", func(t *testing.T) {
		t.Parallel()
		st := open(t)
		qc, ok := rulesOf(st).Storage.(driver.RunQueueCounter)
		rs := st
		if !ok {
			t.Skip("storage does not implement RunQueueCounter")
		}
		c, err := qc.CountRunQueue(t.Context(), at(0))
		require.NoError(t, err)
		require.Equal(t, graphserver.RunQueueCount{}, c)

		for _, id := range []string{"t1", "t2", "t3"} {
			createThread(t, st, threadOpts{ID: id})
		}
		insertRun(t, rs, runOpts{ID: "r1", ThreadID: "t1"})
		insertRun(t, rs, runOpts{ID: "r2", ThreadID: "t1", CreatedAt: at(1)})  // behind r1 on its thread: still ready
		insertRun(t, rs, runOpts{ID: "r3", ThreadID: "t2", CreatedAt: at(60)}) // after_seconds
		insertRun(t, rs, runOpts{ID: "r4", ThreadID: "t3"})
		c, err = qc.CountRunQueue(t.Context(), at(10))
		require.NoError(t, err)
		require.Equal(t, graphserver.RunQueueCount{Ready: 3, Delayed: 1}, c)

		qr, err := rs.ClaimRun(t.Context(), "w1", at(10), at(40))
		require.NoError(t, err)
		require.NotNil(t, qr)
		c, err = qc.CountRunQueue(t.Context(), at(10))
		require.NoError(t, err)
		require.Equal(t, graphserver.RunQueueCount{Ready: 2, Delayed: 1, Running: 1}, c)
		c, err = qc.CountRunQueue(t.Context(), at(61)) // r3's time has come
		require.NoError(t, err)
		require.Equal(t, graphserver.RunQueueCount{Ready: 3, Running: 1}, c)
	})

	t.Run("ObserveWrites", func(t *testing.T) {
		t.Parallel()
		st := open(t)
		os, ok := rulesOf(st).Storage.(driver.ObservableStorage)
		rs := st
		if !ok {
			t.Skip("storage does not implement ObservableStorage")
		}
		rec := &recorder{}
		os.AddObserver(rec)
		createThread(t, st, threadOpts{ID: "t1"})
		insertRun(t, rs, runOpts{ID: "r1", ThreadID: "t1"})
		qr, err := rs.ClaimRun(t.Context(), "w1", at(1), at(30))
		require.NoError(t, err)
		require.NotNil(t, qr)
		writes := rec.writes()
		require.NotEmpty(t, writes, "a thread and a run created, the run claimed: at least one write reported")
		total := 0
		for _, w := range writes {
			require.NoError(t, w.Err)
			require.Positive(t, w.Size)
			require.Positive(t, w.Duration)
			total += w.Size
		}
		// Three writes at most (the thread, the run, the claim), each
		// reported once, whichever of them the driver groups.
		require.LessOrEqual(t, total, 3, "each write is reported once")
	})
}

// recorder is an Observer keeping the StorageWriteEvents it sees.
type recorder struct {
	mu  sync.Mutex
	evs []graphserver.StorageWriteEvent
}

func (r *recorder) Observe(ev graphserver.Event) {
	if w, ok := ev.(graphserver.StorageWriteEvent); ok {
		r.mu.Lock()
		r.evs = append(r.evs, w)
		r.mu.Unlock()
	}
}

func (r *recorder) writes() []graphserver.StorageWriteEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]graphserver.StorageWriteEvent(nil), r.evs...)
}
