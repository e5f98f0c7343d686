package graphserver_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/graphtest"
)

// TestCancelStopsStubbornGraph: cancelling a run whose graph ignores its
// context ends the run at once (after Options.CancelGrace), not when the
// graph returns, and what the graph writes after that is discarded: the
// thread keeps the state it had when the run stopped.
func TestCancelStopsStubbornGraph(t *testing.T) {
	t.Parallel()
	for _, action := range []string{graphserver.CancelInterrupt, graphserver.CancelRollback} {
		t.Run(action, func(t *testing.T) {
			t.Parallel()
			stubborn := graphtest.NewStubborn()
			b := setupRuns(t, func(o *graphserver.Options) {
				o.Graphs["stubborn"] = stubborn
				o.CancelGrace = 20 * time.Millisecond
			})
			t.Cleanup(stubborn.Release)
			tid := b.thread(t)
			run, err := b.srv.CreateRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "stubborn", Input: json.RawMessage(`{"a":1}`)})
			require.NoError(t, err)
			select {
			case <-stubborn.Started:
			case <-time.After(10 * time.Second):
				t.Fatal("run did not start")
			}

			require.NoError(t, b.srv.CancelRun(b.ctx, tid, run.RunID, action))
			// The graph is still blocked (it is not released yet): the run
			// ends without it.
			joinCtx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
			defer cancel()
			_, err = b.srv.JoinRun(joinCtx, tid, run.RunID)
			require.NoError(t, err, "the run must end without waiting for its graph")
			select {
			case <-stubborn.Returned:
				t.Fatal("the graph cannot have returned: it was not released")
			default:
			}
			got, err := b.srv.GetRun(b.ctx, tid, run.RunID)
			if action == graphserver.CancelRollback {
				requireCode(t, err, graphserver.ENOTFOUND)
			} else {
				require.NoError(t, err)
				require.Equal(t, graphserver.RunInterrupted, got.Status)
			}
			before, err := b.srv.GetThread(b.ctx, tid)
			require.NoError(t, err)
			require.NotEqual(t, graphserver.ThreadBusy, before.Status)

			// Now the graph goes on and tries to write: refused.
			stubborn.Release()
			select {
			case err := <-stubborn.Returned:
				require.Error(t, err, "a write after the run stopped must be refused")
			case <-time.After(10 * time.Second):
				t.Fatal("graph did not return")
			}
			after, err := b.srv.GetThread(b.ctx, tid)
			require.NoError(t, err)
			require.Equal(t, before.Values, after.Values)
			require.Equal(t, before.Status, after.Status)
			require.NotContains(t, string(after.Values), "late")
			st, err := b.srv.GetThreadState(b.ctx, tid, graphserver.ThreadStateQuery{})
			require.NoError(t, err)
			if action == graphserver.CancelRollback {
				require.Nil(t, st.Checkpoint, "a rollback leaves nothing of the run")
			} else {
				require.Equal(t, map[string]any{"a": float64(1)}, st.Values)
			}

			// The thread takes new runs.
			out, err := b.srv.WaitRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{"b":2}`)})
			require.NoError(t, err)
			require.JSONEq(t, `{"b":2}`, string(out))
		})
	}
}

// TestCloseWithStubbornGraph: Close does not hang on a graph that ignores
// its cancellation: the run is released (back to pending, for the next
// start) after the cancel grace, and Close returns when its context ends.
func TestCloseWithStubbornGraph(t *testing.T) {
	t.Parallel()
	stubborn := graphtest.NewStubborn()
	t.Cleanup(stubborn.Release)
	db := openDB(t)
	srv, err := graphserver.New(graphserver.Options{Storage: db, Graphs: map[string]graphserver.Graph{"stubborn": stubborn}, CancelGrace: 10 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	run, err := srv.CreateRun(t.Context(), "", graphserver.RunCreate{AssistantID: "stubborn", Input: json.RawMessage(`{}`), OnCompletion: graphserver.OnCompletionKeep})
	require.NoError(t, err)
	<-stubborn.Started
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, srv.Close(ctx), context.DeadlineExceeded)
	r, err := db.GetRun(t.Context(), "", run.RunID, nil)
	require.NoError(t, err)
	require.Equal(t, graphserver.RunPending, r.Status, "released for the next start")
	stubborn.Release()
	require.Error(t, <-stubborn.Returned)
}

// TestCancelPendingStatelessDropsThread: a stateless run cancelled before
// it ran applies on_completion delete, as a run that ends normally does:
// its temporary thread goes (it used to stay forever).
func TestCancelPendingStatelessDropsThread(t *testing.T) {
	t.Parallel()
	b := setupRuns(t, nil)
	for _, tc := range []struct {
		onCompletion string
		kept         bool
	}{{"", false}, {graphserver.OnCompletionKeep, true}} {
		run, err := b.srv.CreateRun(b.ctx, "", graphserver.RunCreate{AssistantID: "echo", AfterSeconds: 3600, OnCompletion: tc.onCompletion})
		require.NoError(t, err)
		require.NoError(t, b.srv.CancelRun(b.ctx, run.ThreadID, run.RunID, graphserver.CancelInterrupt))
		_, err = b.srv.GetThread(b.ctx, run.ThreadID)
		if tc.kept {
			require.NoError(t, err)
		} else {
			requireCode(t, err, graphserver.ENOTFOUND)
		}
	}
}

// TestStatelessThreadIsNotSearched: a stateless run's temporary thread
// (on_completion delete) is read by id while it lasts, but thread search
// and count skip it, so that storage need not index a row that lives as
// long as its run; a kept one (on_completion keep) is listed as any thread.
func TestStatelessThreadIsNotSearched(t *testing.T) {
	t.Parallel()
	b := setupRuns(t, nil)
	for _, tc := range []struct {
		onCompletion string
		listed       bool
	}{{"", false}, {graphserver.OnCompletionDelete, false}, {graphserver.OnCompletionKeep, true}} {
		run, err := b.srv.CreateRun(b.ctx, "", graphserver.RunCreate{AssistantID: "echo", AfterSeconds: 3600, OnCompletion: tc.onCompletion,
			Metadata: graphserver.Metadata{"case": tc.onCompletion}})
		require.NoError(t, err)
		th, err := b.srv.GetThread(b.ctx, run.ThreadID)
		require.NoError(t, err)
		require.Equal(t, graphserver.ThreadBusy, th.Status)
		for _, s := range []graphserver.ThreadSearch{{IDs: []string{run.ThreadID}}, {Status: graphserver.ThreadBusy}, {}} {
			page, err := b.srv.SearchThreads(b.ctx, s)
			require.NoError(t, err)
			var ids []string
			for _, th := range page.Items {
				ids = append(ids, th.ThreadID)
			}
			n, err := b.srv.CountThreads(b.ctx, s)
			require.NoError(t, err)
			if tc.listed {
				require.Contains(t, ids, run.ThreadID, "%q: %+v", tc.onCompletion, s)
				require.GreaterOrEqual(t, n, 1)
			} else {
				require.NotContains(t, ids, run.ThreadID, "%q: %+v", tc.onCompletion, s)
			}
		}
		require.NoError(t, b.srv.CancelRun(b.ctx, run.ThreadID, run.RunID, graphserver.CancelInterrupt))
	}
}
