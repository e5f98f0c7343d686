package graphserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/sqlite"
)

// plainGraph hides the StateRunner of the graph it wraps: the Server runs
// it with Run and reads its final state back from storage.
type plainGraph struct{ graphserver.Graph }

// TestRunEndSavesLastCheckpoint checks that a run's last checkpoint, which
// the engine hands to the run's end (driver.CheckpointDeferrer) to be
// saved in the transaction that records it, is saved in every durability
// mode, also when the Server reads the final state back from storage (a
// graph run with Run, not RunState, whose deferred checkpoints are saved
// before that read): the thread's values, its state and its history agree
// after each run. Upstream, a completed run's checkpoints are all saved
// before the run's status is set (langgraph-api's worker sets it after
// the graph's stream ends; Pregel's _loop.py saves the last checkpoint on
// exit in every durability mode).
func TestRunEndSavesLastCheckpoint(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		plain      bool
		durability string
		perRun     int // checkpoints a run saves
	}{
		{"async", false, "", 3},
		{"sync", false, graphserver.DurabilitySync, 3},
		{"exit", false, graphserver.DurabilityExit, 1},
		{"async/read-back", true, "", 3},
		{"exit/read-back", true, graphserver.DurabilityExit, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			g := counterGraph(t)
			if c.plain {
				g = plainGraph{g}
			}
			db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, db.Close()) })
			srv, err := graphserver.New(graphserver.Options{Storage: db, Graphs: map[string]graphserver.Graph{"counter": g}})
			require.NoError(t, err)
			require.NoError(t, srv.Start(ctx))
			t.Cleanup(func() { require.NoError(t, srv.Close(context.WithoutCancel(ctx))) })

			th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{})
			require.NoError(t, err)
			for n := 1; n <= 3; n++ {
				out, err := srv.WaitRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "counter",
					Input: json.RawMessage(`{}`), Durability: c.durability})
				require.NoError(t, err)
				want := `{"count":` + string(rune('0'+n)) + `}`
				require.JSONEq(t, want, string(out), "run %d's output", n)

				got, err := srv.GetThread(ctx, th.ThreadID)
				require.NoError(t, err)
				require.Equal(t, graphserver.ThreadIdle, got.Status)
				require.JSONEq(t, want, string(mustMarshal(t, got.Values)), "the thread's values after run %d", n)
				st, err := srv.GetThreadState(ctx, th.ThreadID, graphserver.ThreadStateQuery{})
				require.NoError(t, err)
				require.JSONEq(t, want, string(mustMarshal(t, st.Values)), "the state after run %d", n)
				require.Empty(t, st.Next)
				hist, err := srv.GetThreadHistory(ctx, th.ThreadID, graphserver.ThreadHistoryQuery{Limit: 100})
				require.NoError(t, err)
				require.Len(t, hist, n*c.perRun, "the history after run %d", n)
				require.Equal(t, *st.Checkpoint.CheckpointID, *hist[0].Checkpoint.CheckpointID, "state and history agree")
			}
		})
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// firstSaveHeld is a Storage whose first run checkpoint save is held: in
// mode "waiting" it waits, not started, until its ctx ends (as a grouped
// SQLite write waits for its group) and then writes nothing; in mode
// "started" it is written at once, but answered only when its ctx ends or
// after a while. Every other save goes straight to the database.
type firstSaveHeld struct {
	*sqlite.DB
	mode  string
	first atomic.Bool
}

func (s *firstSaveHeld) PutRunCheckpoints(ctx context.Context, runID, owner string, cps []*driver.CheckpointRecord) error {
	if !s.first.CompareAndSwap(false, true) {
		return s.DB.PutRunCheckpoints(ctx, runID, owner, cps)
	}
	var err error
	if s.mode == "started" {
		err = s.DB.PutRunCheckpoints(context.WithoutCancel(ctx), runID, owner, cps)
	}
	select {
	case <-ctx.Done():
		if s.mode == "waiting" {
			return ctx.Err()
		}
	case <-time.After(2 * time.Second):
		if s.mode == "waiting" {
			return errors.New("the held save was never taken back")
		}
	}
	return err
}

// TestRunEndTakesBackWaitingSave: the checkpoints a run's graph saves
// before its last node runs (its input and first step, in the background
// while the node runs) are still waiting for storage when the node is
// done, under load: the run's end takes that save back and saves them
// with the last checkpoint, in the transaction that records the run's end,
// instead of in one of their own. A save that had started is not saved
// twice. Either way, the thread's state and history are those of the
// runs, checkpoint after checkpoint.
func TestRunEndTakesBackWaitingSave(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"waiting", "started"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, db.Close()) })
			st := &firstSaveHeld{DB: db, mode: mode}
			srv, err := graphserver.New(graphserver.Options{Storage: st, Graphs: map[string]graphserver.Graph{"counter": counterGraph(t)}})
			require.NoError(t, err)
			require.NoError(t, srv.Start(ctx))
			t.Cleanup(func() { require.NoError(t, srv.Close(context.WithoutCancel(ctx))) })

			th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{})
			require.NoError(t, err)
			for n := 1; n <= 2; n++ {
				start := time.Now()
				out, err := srv.WaitRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "counter", Input: json.RawMessage(`{}`)})
				require.NoError(t, err)
				require.Less(t, time.Since(start), time.Second, "the held save was taken back at once, not waited for")
				want := fmt.Sprintf(`{"count":%d}`, n)
				require.JSONEq(t, want, string(out))
				state, err := srv.GetThreadState(ctx, th.ThreadID, graphserver.ThreadStateQuery{})
				require.NoError(t, err)
				require.JSONEq(t, want, string(mustMarshal(t, state.Values)))
				hist, err := srv.GetThreadHistory(ctx, th.ThreadID, graphserver.ThreadHistoryQuery{Limit: 100})
				require.NoError(t, err)
				require.Len(t, hist, 3*n, "three checkpoints a run, none twice")
				require.Equal(t, *state.Checkpoint.CheckpointID, *hist[0].Checkpoint.CheckpointID, "state and history agree")
				for i := range len(hist) - 1 {
					require.Equal(t, *hist[i+1].Checkpoint.CheckpointID, *hist[i].ParentCheckpoint.CheckpointID, "checkpoint %d's parent", i)
				}
			}
		})
	}
}
