package sqlite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/sqlite"
)

// TestWALStaysBounded writes many times the log's restart length, from
// several writers with a reader alongside, and checks that the write-ahead
// log restarts: the writer runs no checkpoint of its own accord, the
// background checkpointer copies the log, and the writer checkpoints
// itself when the log is due to restart, so the log's file stays well
// under the bytes written. Every write is read back after the DB is opened
// again.
func TestWALStaysBounded(t *testing.T) {
	t.Parallel()
	for _, exclusive := range []bool{false, true} {
		t.Run(fmt.Sprintf("Exclusive=%v", exclusive), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			path := filepath.Join(t.TempDir(), "gs.db")
			db, err := sqlite.OpenWith(path, sqlite.OpenOptions{Exclusive: exclusive})
			require.NoError(t, err)
			const restartFrames = 64
			db.SetWALCheckpointing(4, restartFrames)

			// 2 KiB values: 12,000 of them fill 24 MiB of pages, a hundred
			// times the restart length.
			const writers, perWriter = 4, 3000
			text := strings.Repeat("x", 2048)
			ns := []string{"wal"}
			now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
			var maxWAL int64
			var wg sync.WaitGroup
			stop := make(chan struct{})
			var watch sync.WaitGroup
			watch.Go(func() {
				for {
					if fi, err := os.Stat(path + "-wal"); err == nil {
						maxWAL = max(maxWAL, fi.Size())
					}
					// A reader alongside, whose snapshots may hold the log.
					_, _ = db.GetItem(ctx, ns, "w0-0", now, false)
					select {
					case <-stop:
						return
					case <-time.After(time.Millisecond):
					}
				}
			})
			for w := range writers {
				wg.Go(func() {
					for i := range perWriter {
						key := fmt.Sprintf("w%d-%d", w, i)
						if err := db.PutItem(ctx, &driver.ItemWrite{Namespace: ns, Key: key, Value: graphserver.Object{"text": text, "i": float64(i)}, Now: now}); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			close(stop)
			watch.Wait()
			require.Positive(t, db.WALCheckpoints(), "the background checkpointer ran")
			require.Positive(t, db.WALRestarts(), "the writer checkpointed for the log to restart")
			// The log passes the restart length by what is written while
			// a background checkpoint runs (its fsyncs, which other tests'
			// I/O can make last long enough for a third of the values),
			// and then by a group; never restarted, it would hold every
			// page written: more than the values' bytes alone.
			written := int64(writers * perWriter * len(text))
			require.Less(t, maxWAL, written, "the log restarts")
			require.NoError(t, db.Close())

			db, err = sqlite.OpenWith(path, sqlite.OpenOptions{Exclusive: exclusive})
			require.NoError(t, err)
			defer func() { require.NoError(t, db.Close()) }()
			for w := range writers {
				for i := range perWriter {
					it, err := db.GetItem(ctx, ns, fmt.Sprintf("w%d-%d", w, i), now, false)
					require.NoError(t, err)
					require.Equal(t, float64(i), it.Value["i"])
				}
			}
		})
	}
}
