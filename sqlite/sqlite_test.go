package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/sqlite"
)

// openDB opens a fresh temp-file database closed at cleanup.
func openDB(t testing.TB) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

func TestOpen(t *testing.T) {
	t.Parallel()

	t.Run("ReopenIsNoOp", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "gs.db")
		db, err := sqlite.Open(path)
		require.NoError(t, err)
		ctx := t.Context()
		_, err = db.CreateAssistant(ctx, &graphserver.Assistant{AssistantID: "a1", GraphID: "g"}, "", nil)
		require.NoError(t, err)
		before := migrationRows(t, db)
		require.NotEmpty(t, before)
		require.NoError(t, db.Close())

		db, err = sqlite.Open(path)
		require.NoError(t, err)
		defer db.Close()
		require.Equal(t, before, migrationRows(t, db))
		a, err := db.GetAssistant(ctx, "a1", nil)
		require.NoError(t, err)
		require.Equal(t, "g", a.GraphID)
	})

	t.Run("InvalidPath", func(t *testing.T) {
		t.Parallel()
		for _, p := range []string{"", ":memory:", "x.db?mode=memory"} {
			_, err := sqlite.Open(p)
			require.Equal(t, graphserver.EINVALID, graphserver.ErrorCode(err), p)
		}
	})

	t.Run("PragmasOnEveryConnection", func(t *testing.T) {
		t.Parallel()
		db := openDB(t)
		got, err := db.ConnPragmas(t.Context(), 4)
		require.NoError(t, err)
		require.Len(t, got, 5)
		for _, p := range got {
			require.Equal(t, [3]string{"wal", "1", "10000"}, p)
		}
		require.Error(t, db.WriteThroughReader(t.Context()), "reader connections are query-only")
	})

	t.Run("Exclusive", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "gs.db")
		db, err := sqlite.OpenWith(path, sqlite.OpenOptions{Exclusive: true})
		require.NoError(t, err)
		defer db.Close()
		// Another DB in this process shares the file.
		db2, err := sqlite.OpenWith(path, sqlite.OpenOptions{Exclusive: true})
		require.NoError(t, err)
		_, err = db2.CreateAssistant(t.Context(), &graphserver.Assistant{AssistantID: "a1", GraphID: "g"}, "", nil)
		require.NoError(t, err)
		require.NoError(t, db2.Close())
		_, err = db.GetAssistant(t.Context(), "a1", nil)
		require.NoError(t, err)
		// Another process cannot open it (an exclusive Open says so at once;
		// a shared one would wait for the busy timeout first).
		require.Equal(t, graphserver.EUNAVAILABLE, openInChild(t, path, true))
		require.NoError(t, db.Close())
		require.Equal(t, "ok", openInChild(t, path, true))
	})

	t.Run("Shared", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "gs.db")
		db, err := sqlite.Open(path)
		require.NoError(t, err)
		defer db.Close()
		require.Equal(t, "ok", openInChild(t, path, false))
		require.Equal(t, graphserver.EUNAVAILABLE, openInChild(t, path, true), "shared with another process: not exclusive")
		_, err = db.CreateAssistant(t.Context(), &graphserver.Assistant{AssistantID: "a1", GraphID: "g"}, "", nil)
		require.NoError(t, err)
	})

	t.Run("Ping", func(t *testing.T) {
		t.Parallel()
		db := openDB(t)
		require.NoError(t, db.Ping(t.Context()))
		require.NoError(t, db.Optimize(t.Context()))
	})
}

// openInChild opens path in a child process (this test binary running
// TestOpenChild) and returns "ok" or the error code it got.
func openInChild(t *testing.T, path string, exclusive bool) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestOpenChild$")
	cmd.Env = append(os.Environ(), "GS_OPEN_CHILD="+path, "GS_OPEN_CHILD_EXCLUSIVE="+strconv.FormatBool(exclusive))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	m := regexp.MustCompile(`open: (\S+)`).FindSubmatch(out)
	require.NotNil(t, m, "%s", out)
	return string(m[1])
}

// TestOpenChild is the child process of openInChild.
func TestOpenChild(t *testing.T) {
	path := os.Getenv("GS_OPEN_CHILD")
	if path == "" {
		t.Skip("the child process of openInChild")
	}
	db, err := sqlite.OpenWith(path, sqlite.OpenOptions{Exclusive: os.Getenv("GS_OPEN_CHILD_EXCLUSIVE") == "true"})
	if err != nil {
		fmt.Printf("open: %s\n", graphserver.ErrorCode(err))
		return
	}
	fmt.Println("open: ok")
	require.NoError(t, db.Close())
}

// openTwoHandles opens two DBs on one new file, as two processes sharing
// it would, or, exclusive, as two DBs of one process (the second through a
// symbolic link, so that only the file's identity tells them apart).
func openTwoHandles(t *testing.T, exclusive bool) (a, b *sqlite.DB) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "gs.db")
	a, err := sqlite.OpenWith(path, sqlite.OpenOptions{Exclusive: exclusive})
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	other := path
	if exclusive {
		other = filepath.Join(dir, "link.db")
		require.NoError(t, os.Symlink(path, other))
	}
	b, err = sqlite.OpenWith(other, sqlite.OpenOptions{Exclusive: exclusive})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return a, b
}

// TestAssistantChangesAcrossHandles: two DBs on one file (as two processes
// sharing it, or, Exclusive, two DBs of one process, the second opened
// through a symbolic link): an assistant one of them keeps decoded is read
// again once the other changes it.
func TestAssistantChangesAcrossHandles(t *testing.T) {
	t.Parallel()
	for _, exclusive := range []bool{false, true} {
		t.Run(fmt.Sprintf("Exclusive=%v", exclusive), func(t *testing.T) {
			t.Parallel()
			a, b := openTwoHandles(t, exclusive)
			ctx := t.Context()
			_, err := a.CreateAssistant(ctx, &graphserver.Assistant{AssistantID: "a1", GraphID: "g", Name: "v1"}, "", nil)
			require.NoError(t, err)
			for range 2 {
				got, err := a.GetAssistant(ctx, "a1", nil)
				require.NoError(t, err)
				require.Equal(t, "v1", got.Name)
			}
			_, err = b.UpdateAssistant(ctx, "a1", &graphserver.AssistantPatch{Name: ptr("v2")}, time.Now(), nil)
			require.NoError(t, err)
			got, err := a.GetAssistant(ctx, "a1", nil)
			require.NoError(t, err)
			require.Equal(t, "v2", got.Name)
			_, err = b.SetAssistantVersion(ctx, "a1", 1, time.Now(), nil)
			require.NoError(t, err)
			got, err = a.GetAssistant(ctx, "a1", nil)
			require.NoError(t, err)
			require.Equal(t, "v1", got.Name)
			require.NoError(t, b.DeleteAssistant(ctx, "a1", false, nil))
			_, err = a.GetAssistant(ctx, "a1", nil)
			require.Equal(t, graphserver.ENOTFOUND, graphserver.ErrorCode(err))
		})
	}
}

// TestItemChangesAcrossHandles reads store items through one DB while
// another DB of the process, open on the same file, writes them: every
// read sees the last write (Exclusive DBs keep the items they read,
// itemCache), and a kept item still expires on the reader's clock.
func TestItemChangesAcrossHandles(t *testing.T) {
	t.Parallel()
	for _, exclusive := range []bool{false, true} {
		t.Run(fmt.Sprintf("Exclusive=%v", exclusive), func(t *testing.T) {
			t.Parallel()
			a, b := openTwoHandles(t, exclusive)
			ctx := t.Context()
			ns := []string{"users", "u1"}
			t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
			put := func(db *sqlite.DB, key string, v float64, ttl time.Duration) {
				t.Helper()
				require.NoError(t, db.PutItem(ctx, &driver.ItemWrite{Namespace: ns, Key: key, Value: graphserver.Object{"v": v}, Now: t0, TTL: ttl}))
			}
			get := func(key string, at time.Time, refresh bool) graphserver.Object {
				t.Helper()
				it, err := a.GetItem(ctx, ns, key, at, refresh)
				if graphserver.ErrorCode(err) == graphserver.ENOTFOUND {
					return nil
				}
				require.NoError(t, err)
				require.Equal(t, ns, it.Namespace)
				require.Equal(t, key, it.Key)
				return it.Value
			}

			put(a, "k", 1, 0)
			for range 2 {
				require.Equal(t, graphserver.Object{"v": 1.0}, get("k", t0, true))
			}
			got := get("k", t0, true)
			got["v"] = "changed by the caller"
			require.Equal(t, graphserver.Object{"v": 1.0}, get("k", t0, true), "callers get values of their own")
			put(b, "k", 2, 0)
			require.Equal(t, graphserver.Object{"v": 2.0}, get("k", t0, true))
			require.NoError(t, b.DeleteItem(ctx, ns, "k"))
			require.Nil(t, get("k", t0, true))
			put(b, "k", 3, 0)
			require.Equal(t, graphserver.Object{"v": 3.0}, get("k", t0, true))
			require.NoError(t, b.Truncate(ctx, driver.TruncateOptions{Store: true}))
			require.Nil(t, get("k", t0, true))

			// A TTL of 10 minutes: read without refreshing (nothing
			// written), the item is there until it expires.
			put(b, "short", 4, 10*time.Minute)
			require.Equal(t, graphserver.Object{"v": 4.0}, get("short", t0.Add(9*time.Minute), false))
			require.Nil(t, get("short", t0.Add(10*time.Minute), false))
			// Refreshed by b at 9 minutes: a sees the new expiry.
			_, err := b.GetItem(ctx, ns, "short", t0.Add(9*time.Minute), true)
			require.NoError(t, err)
			require.Equal(t, graphserver.Object{"v": 4.0}, get("short", t0.Add(18*time.Minute), false))
			n, err := b.DeleteExpiredItems(ctx, t0.Add(20*time.Minute))
			require.NoError(t, err)
			require.Equal(t, 1, n)
			require.Nil(t, get("short", t0.Add(18*time.Minute), false), "deleted")
		})
	}
}

// TestItemReadsNeverStale writes items through two DBs of one file opened
// Exclusive while readers read them through the first: a read that starts
// after a write returned sees that write or a later one, though reads of
// an item race the writes of it and of the others (itemCache keeps the
// rows of items not written since they were read).
func TestItemReadsNeverStale(t *testing.T) {
	t.Parallel()
	a, b := openTwoHandles(t, true)
	ctx := t.Context()
	ns := []string{"race"}
	const keys, writes = 4, 150
	var written [keys]atomic.Int64
	var wg sync.WaitGroup
	for k := range keys {
		wg.Go(func() {
			for i := 1; i <= writes; i++ {
				db := a
				if i%2 == 0 {
					db = b
				}
				if err := db.PutItem(ctx, &driver.ItemWrite{Namespace: ns, Key: strconv.Itoa(k), Value: graphserver.Object{"i": float64(i)}, Now: time.Now()}); err != nil {
					t.Error(err)
					return
				}
				written[k].Store(int64(i))
			}
		})
	}
	done := make(chan struct{})
	var readers sync.WaitGroup
	var reads atomic.Int64
	for range 2 {
		readers.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-done:
					return
				default:
				}
				k := n % keys
				want := written[k].Load()
				it, err := a.GetItem(ctx, ns, strconv.Itoa(k), time.Now(), false)
				if want == 0 && graphserver.ErrorCode(err) == graphserver.ENOTFOUND {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				if got := int64(it.Value["i"].(float64)); got < want {
					t.Errorf("item %d: read %d after write %d returned", k, got, want)
					return
				}
				reads.Add(1)
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()
	require.Positive(t, reads.Load())
}

func ptr[T any](v T) *T { return &v }

func migrationRows(t *testing.T, db *sqlite.DB) []string {
	t.Helper()
	rows, err := db.Migrations(context.Background())
	require.NoError(t, err)
	return rows
}

func TestDeleteRunCheckpoints(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	ctx := t.Context()
	_, err := db.CreateThread(ctx, &graphserver.Thread{ThreadID: "t1"}, "", nil)
	require.NoError(t, err)
	put := func(ns, id, parent, run string, versions map[string]string, blobs ...driver.ChannelBlob) {
		t.Helper()
		require.NoError(t, db.PutCheckpoint(ctx, &driver.CheckpointRecord{
			ThreadID: "t1", NS: ns, CheckpointID: id, ParentCheckpointID: parent, RunID: run,
			ChannelVersions: versions, NewBlobs: blobs,
		}))
	}
	blob := func(ch, v, base, data string) driver.ChannelBlob {
		return driver.ChannelBlob{Channel: ch, Version: v, Base: base, Data: json.RawMessage(data)}
	}
	put("", "c1", "", "r1", map[string]string{"m": "1"}, blob("m", "1", "", `["a"]`))
	put("", "c2", "c1", "r1", map[string]string{"m": "2", "n": "1"}, blob("m", "2", "1", `["b"]`), blob("n", "1", "", `1`))
	put("", "c3", "c2", "r2", map[string]string{"m": "3", "n": "2"}, blob("m", "3", "2", `["c"]`), blob("n", "2", "", `2`))
	put("", "c4", "c3", "r2", map[string]string{"m": "4", "n": "2"}, blob("m", "4", "3", `["d"]`))
	put("sub:1", "s1", "", "r2", map[string]string{"x": "1"}, blob("x", "1", "", `0`))
	require.NoError(t, db.PutWrites(ctx, "t1", "", "c4", "task", []driver.PendingWrite{{Channel: "m", Value: json.RawMessage(`1`)}}))

	require.NoError(t, db.DeleteRunCheckpoints(ctx, "t1", "r2"))
	cp, err := db.GetCheckpoint(ctx, "t1", "", "")
	require.NoError(t, err)
	require.Equal(t, "c2", cp.CheckpointID)
	require.JSONEq(t, `["a","b"]`, string(cp.Values["m"]))
	_, err = db.GetCheckpoint(ctx, "t1", "sub:1", "")
	require.Equal(t, graphserver.ENOTFOUND, graphserver.ErrorCode(err))
	blobs, err := db.BlobRows(ctx, "t1")
	require.NoError(t, err)
	require.Equal(t, []string{"/m#0.0", "/m#0.1", "/n#0.0"}, blobs, "blobs only the deleted checkpoints used are collected")

	// A checkpoint id reused later starts without the old writes; the
	// chain's collected tail is appended to again.
	put("", "c4", "c2", "r3", map[string]string{"m": "3b", "n": "1"}, blob("m", "3b", "2", `["e"]`))
	cp, err = db.GetCheckpoint(ctx, "t1", "", "c4")
	require.NoError(t, err)
	require.Empty(t, cp.PendingWrites)
	require.JSONEq(t, `["a","b","e"]`, string(cp.Values["m"]))
	blobs, err = db.BlobRows(ctx, "t1")
	require.NoError(t, err)
	require.Equal(t, []string{"/m#0.0", "/m#0.1", "/m#0.2", "/n#0.0"}, blobs)

	require.NoError(t, db.DeleteRunCheckpoints(ctx, "t1", "nothing"))
	require.Equal(t, graphserver.EINVALID, graphserver.ErrorCode(db.DeleteRunCheckpoints(ctx, "t1", "")))
}

// TestDeleteRunCheckpointsKeepsLinkedRows checks that collecting a deleted
// run's blobs keeps the rows a fork's link still needs and trims the rest.
func TestDeleteRunCheckpointsKeepsLinkedRows(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	ctx := t.Context()
	_, err := db.CreateThread(ctx, &graphserver.Thread{ThreadID: "t1"}, "", nil)
	require.NoError(t, err)
	put := func(id, parent, run, v, base, data string) {
		t.Helper()
		require.NoError(t, db.PutCheckpoint(ctx, &driver.CheckpointRecord{
			ThreadID: "t1", CheckpointID: id, ParentCheckpointID: parent, RunID: run,
			ChannelVersions: map[string]string{"m": v},
			NewBlobs:        []driver.ChannelBlob{{Channel: "m", Version: v, Base: base, Data: json.RawMessage(data)}},
		}))
	}
	rows := func() []string {
		t.Helper()
		out, err := db.BlobRows(ctx, "t1")
		require.NoError(t, err)
		return out
	}
	put("c1", "", "r1", "1", "", `["a"]`)
	put("c2", "c1", "r1", "2", "1", `["b"]`)
	put("c3", "c2", "r2", "3", "2", `["c"]`)
	put("c4", "c3", "r2", "4", "3", `["d"]`)
	put("c5", "c3", "r3", "5", "3", `["e"]`) // 3 is not the tip: a fork
	require.Equal(t, []string{"/m#0.0", "/m#0.1", "/m#0.2", "/m#0.3", "/m#1.0<-0.2"}, rows())

	require.NoError(t, db.DeleteRunCheckpoints(ctx, "t1", "r2"))
	require.Equal(t, []string{"/m#0.0", "/m#0.1", "/m#0.2", "/m#1.0<-0.2"}, rows(), "the fork still needs row 2")
	cp, err := db.GetCheckpoint(ctx, "t1", "", "")
	require.NoError(t, err)
	require.Equal(t, "c5", cp.CheckpointID)
	require.JSONEq(t, `["a","b","c","e"]`, string(cp.Values["m"]))

	require.NoError(t, db.DeleteRunCheckpoints(ctx, "t1", "r3"))
	require.Equal(t, []string{"/m#0.0", "/m#0.1"}, rows())
	put("c6", "c2", "r4", "6", "2", `["f"]`) // the tip again: appended
	require.Equal(t, []string{"/m#0.0", "/m#0.1", "/m#0.2"}, rows())
	cp, err = db.GetCheckpoint(ctx, "t1", "", "c6")
	require.NoError(t, err)
	require.JSONEq(t, `["a","b","f"]`, string(cp.Values["m"]))
}
