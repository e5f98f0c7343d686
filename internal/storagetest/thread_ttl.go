package storagetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// exerciseThreadTTL checks SweepExpiredThreads.
func exerciseThreadTTL(t *testing.T, open func(t *testing.T) driver.Storage) {
	t.Helper()

	// withTTL creates a thread whose TTL expires at expires.
	withTTL := func(t *testing.T, st driver.Storage, id, strategy, status string, expires time.Time) {
		t.Helper()
		_, err := st.CreateThread(t.Context(), &graphserver.Thread{
			ThreadID: id, CreatedAt: t0, UpdatedAt: t0, StateUpdatedAt: t0, Status: status,
			TTL: &graphserver.ThreadTTLInfo{Strategy: strategy, TTLMinutes: 1, ExpiresAt: &expires},
		}, graphserver.IfExistsRaise, nil)
		require.NoError(t, err)
	}

	t.Run("DeleteExpiredOnly", func(t *testing.T) {
		t.Parallel()
		st := open(t)
		withTTL(t, st, "old", graphserver.PruneDelete, graphserver.ThreadIdle, at(10))
		withTTL(t, st, "young", graphserver.PruneDelete, graphserver.ThreadIdle, at(100))
		withTTL(t, st, "running", graphserver.PruneDelete, graphserver.ThreadBusy, at(10))
		createThread(t, st, threadOpts{ID: "forever"})
		putCheckpoint(t, st, "old", checkpointOpts{ID: "c1", Versions: map[string]string{"x": "1"}, Blobs: []driver.ChannelBlob{blob("x", "1", "", `1`)}})

		n, err := st.SweepExpiredThreads(t.Context(), at(50), 100)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		_, err = st.GetThread(t.Context(), "old", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = st.GetCheckpoint(t.Context(), "old", "", "")
		requireCode(t, err, graphserver.ENOTFOUND)
		for _, id := range []string{"young", "running", "forever"} {
			_, err := st.GetThread(t.Context(), id, nil)
			require.NoError(t, err, id)
		}

		n, err = st.SweepExpiredThreads(t.Context(), at(50), 100)
		require.NoError(t, err)
		require.Zero(t, n, "a second sweep finds nothing")
	})

	t.Run("KeepLatest", func(t *testing.T) {
		t.Parallel()
		st := open(t)
		withTTL(t, st, "t1", graphserver.PruneKeepLatest, graphserver.ThreadIdle, at(10))
		putCheckpoint(t, st, "t1", checkpointOpts{ID: "c1", Versions: map[string]string{"x": "1"}, Blobs: []driver.ChannelBlob{blob("x", "1", "", `[1]`)}})
		putCheckpoint(t, st, "t1", checkpointOpts{ID: "c2", Parent: "c1", Versions: map[string]string{"x": "2"}, Blobs: []driver.ChannelBlob{blob("x", "2", "1", `[2]`)}})

		n, err := st.SweepExpiredThreads(t.Context(), at(50), 100)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		th, err := st.GetThread(t.Context(), "t1", nil)
		require.NoError(t, err)
		require.True(t, th.TTL == nil || th.TTL.ExpiresAt == nil, "the TTL is disarmed until the thread is next active")
		cps, err := st.ListCheckpoints(t.Context(), "t1", driver.CheckpointListOptions{})
		require.NoError(t, err)
		require.Equal(t, []string{"c2"}, checkpointIDs(cps))
		requireValues(t, map[string]string{"x": `[1,2]`}, cps[0].Values)

		n, err = st.SweepExpiredThreads(t.Context(), at(500), 100)
		require.NoError(t, err)
		require.Zero(t, n)
	})

	t.Run("Limit", func(t *testing.T) {
		t.Parallel()
		st := open(t)
		for _, id := range []string{"a", "b", "c"} {
			withTTL(t, st, id, graphserver.PruneDelete, graphserver.ThreadIdle, at(10))
		}
		n, err := st.SweepExpiredThreads(t.Context(), at(50), 2)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		n, err = st.SweepExpiredThreads(t.Context(), at(50), 2)
		require.NoError(t, err)
		require.Equal(t, 1, n)
	})
}
