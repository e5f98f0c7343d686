//go:build unix

package sqlite_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/sqlite"
)

// TestRecoverRuns: the runs claimed through a DB whose holder is gone (the
// DB closed, or its process died: the kernel drops its lock) are recovered
// at once by another DB on the same file, long before their lease expires;
// the runs of holders still open, and this DB's own, are left alone. The
// Server's sweep rules (tested in package graphserver) get the runs inside
// the transaction; here a sweep puts them back to pending.
func TestRecoverRuns(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gs.db")
	open := func() *sqlite.DB {
		db, err := sqlite.Open(path)
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		return db
	}
	a, b := open(), open()
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	leaseUntil := now.Add(time.Hour) // no lease expires during the test
	for i, id := range []string{"t1", "t2", "t3"} {
		_, err := a.CreateThread(ctx, &graphserver.Thread{ThreadID: id, CreatedAt: now, UpdatedAt: now, StateUpdatedAt: now,
			Status: graphserver.ThreadIdle, Values: json.RawMessage("null")}, graphserver.IfExistsRaise, nil)
		require.NoError(t, err)
		require.NoError(t, a.WithTx(ctx, func(ctx context.Context, tx driver.Tx) error {
			return tx.InsertRun(ctx, &graphserver.Run{RunID: "r" + id, ThreadID: id, AssistantID: "a", CreatedAt: now.Add(time.Duration(i)),
				UpdatedAt: now, Status: graphserver.RunPending, MultitaskStrategy: graphserver.MultitaskEnqueue,
				Kwargs: graphserver.RunKwargs{Input: json.RawMessage("{}")}}, nil)
		}))
	}
	claim := func(db *sqlite.DB, want string) {
		t.Helper()
		q, err := db.ClaimRun(ctx, "owner", now, leaseUntil)
		require.NoError(t, err)
		require.Equal(t, want, q.Run.RunID)
	}
	// recover returns the runs db's RecoverRuns hands over, after putting
	// them back to pending.
	recover := func(db *sqlite.DB) []driver.RunRef {
		t.Helper()
		var got []driver.RunRef
		require.NoError(t, db.RecoverRuns(ctx, func(ctx context.Context, tx driver.Tx, runs []driver.RunRef) error {
			got = runs
			for _, r := range runs {
				if err := tx.SetRunStatus(ctx, r.RunID, graphserver.RunPending, now); err != nil {
					return err
				}
			}
			return nil
		}))
		return got
	}
	claim(a, "rt1")
	claim(b, "rt2")
	c := open()
	claim(c, "rt3")

	require.Empty(t, recover(b), "a and c are open: their runs have live workers")

	require.NoError(t, a.Close())
	require.Equal(t, []driver.RunRef{{RunID: "rt1", ThreadID: "t1", Status: graphserver.RunRunning, Attempt: 1}}, recover(b))
	r, err := b.GetRun(ctx, "", "rt1", nil)
	require.NoError(t, err)
	require.Equal(t, graphserver.RunPending, r.Status)
	require.Empty(t, recover(b), "recovered once")

	// The holder files of closed DBs are cleaned up; open ones stay.
	entries, err := os.ReadDir(path + "-holders")
	require.NoError(t, err)
	require.Len(t, entries, 2, "b and c")

	require.NoError(t, c.Close())
	require.Equal(t, []driver.RunRef{{RunID: "rt3", ThreadID: "t3", Status: graphserver.RunRunning, Attempt: 1}}, recover(b))
	r, err = b.GetRun(ctx, "", "rt2", nil)
	require.NoError(t, err)
	require.Equal(t, graphserver.RunRunning, r.Status, "b's own run is left alone")
}
