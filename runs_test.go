package graphserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/graphtest"
	"github.com/graphserver/graphserver/sqlite"
)

type runBundle struct {
	srv     *graphserver.Server
	db      *sqlite.DB
	block   *graphtest.Blocking
	ctx     context.Context
	options graphserver.Options
}

func setupRuns(t *testing.T, tweak func(*graphserver.Options)) *runBundle {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	block := graphtest.NewBlocking()
	opts := graphserver.Options{
		Storage: db,
		Graphs: map[string]graphserver.Graph{
			"echo": graphtest.Echo{}, "fail": graphtest.Fail{}, "interrupt": graphtest.Interrupt{},
			"parts": graphtest.Parts{}, "block": block,
		},
	}
	if tweak != nil {
		tweak(&opts)
	}
	srv, err := graphserver.New(opts)
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(func() {
		block.Release()
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, srv.Close(c))
	})
	return &runBundle{srv: srv, db: db, block: block, ctx: ctx, options: opts}
}

func (b *runBundle) thread(t *testing.T) string {
	t.Helper()
	th, err := b.srv.CreateThread(b.ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	return th.ThreadID
}

func waitStarted(t *testing.T, b *graphtest.Blocking) string {
	t.Helper()
	select {
	case id := <-b.Started:
		return id
	case <-time.After(10 * time.Second):
		t.Fatal("run did not start")
		return ""
	}
}

func TestWaitRun(t *testing.T) {
	t.Parallel()
	t.Run("Echo", func(t *testing.T) {
		t.Parallel()
		b := setupRuns(t, nil)
		tid := b.thread(t)
		out, err := b.srv.WaitRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{"x":1}`)})
		require.NoError(t, err)
		require.JSONEq(t, `{"x":1}`, string(out))
		th, err := b.srv.GetThread(b.ctx, tid)
		require.NoError(t, err)
		require.Equal(t, graphserver.ThreadIdle, th.Status)
		require.JSONEq(t, `{"x":1}`, string(th.Values))
		require.Equal(t, "echo", th.Metadata["graph_id"])
		runs, err := b.srv.ListRuns(b.ctx, tid, graphserver.RunSearch{})
		require.NoError(t, err)
		require.Len(t, runs, 1)
		require.Equal(t, graphserver.RunSuccess, runs[0].Status)
	})
	t.Run("Fail", func(t *testing.T) {
		t.Parallel()
		b := setupRuns(t, nil)
		tid := b.thread(t)
		out, err := b.srv.WaitRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "fail", Input: json.RawMessage(`{"x":1}`)})
		require.NoError(t, err)
		require.JSONEq(t, `{"__error__":{"error":"ValueError","message":"boom"}}`, string(out))
		th, err := b.srv.GetThread(b.ctx, tid)
		require.NoError(t, err)
		require.Equal(t, graphserver.ThreadError, th.Status)
		require.JSONEq(t, `{"error":"ValueError","message":"boom"}`, string(th.Error))
	})
	t.Run("InterruptThenResume", func(t *testing.T) {
		t.Parallel()
		b := setupRuns(t, nil)
		tid := b.thread(t)
		out, err := b.srv.WaitRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "interrupt", Input: json.RawMessage(`{"q":1}`)})
		require.NoError(t, err)
		require.JSONEq(t, `{"__interrupt__":[{"value":{"question":"approve?"},"id":"interrupt-1"}]}`, string(out))
		th, err := b.srv.GetThread(b.ctx, tid)
		require.NoError(t, err)
		require.Equal(t, graphserver.ThreadInterrupted, th.Status)
		require.Len(t, th.Interrupts, 1)
		out, err = b.srv.WaitRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "interrupt", Command: &graphserver.Command{Resume: json.RawMessage(`"yes"`)}})
		require.NoError(t, err)
		require.JSONEq(t, `{"answer":"yes"}`, string(out))
		th, err = b.srv.GetThread(b.ctx, tid)
		require.NoError(t, err)
		require.Equal(t, graphserver.ThreadIdle, th.Status)
		require.Empty(t, th.Interrupts)
	})
	t.Run("Stateless", func(t *testing.T) {
		t.Parallel()
		b := setupRuns(t, nil)
		out, err := b.srv.WaitRun(b.ctx, "", graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{"s":1}`)})
		require.NoError(t, err)
		require.JSONEq(t, `{"s":1}`, string(out))
		_, err = b.srv.WaitRun(b.ctx, "", graphserver.RunCreate{AssistantID: "echo", Command: &graphserver.Command{Resume: json.RawMessage(`1`)}})
		requireCode(t, err, graphserver.EBADREQUEST)
	})
}

func TestStreamRun(t *testing.T) {
	t.Parallel()
	b := setupRuns(t, nil)
	tid := b.thread(t)
	st, err := b.srv.StreamRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "parts", Input: json.RawMessage(`{"p":1}`),
		StreamMode: graphserver.StreamModes{"custom", "values", "messages-tuple"}, StreamSubgraphs: true})
	require.NoError(t, err)
	var names, ids []string
	for ev, err := range st.Events(b.ctx) {
		require.NoError(t, err)
		names = append(names, ev.Event)
		ids = append(ids, ev.ID)
	}
	require.Equal(t, []string{"metadata", "custom", "custom", "custom", "values|child:1", "messages", "values"}, names)
	require.Equal(t, []string{"0", "1", "2", "3", "4", "5", "6"}, ids)
}

func TestCancelRunning(t *testing.T) {
	t.Parallel()
	for _, action := range []string{graphserver.CancelInterrupt, graphserver.CancelRollback} {
		t.Run(action, func(t *testing.T) {
			t.Parallel()
			b := setupRuns(t, nil)
			tid := b.thread(t)
			run, err := b.srv.CreateRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{"a":1}`)})
			require.NoError(t, err)
			waitStarted(t, b.block)
			require.NoError(t, b.srv.CancelRun(b.ctx, tid, run.RunID, action))
			_, err = b.srv.JoinRun(b.ctx, tid, run.RunID)
			require.NoError(t, err)
			got, err := b.srv.GetRun(b.ctx, tid, run.RunID)
			th, terr := b.srv.GetThread(b.ctx, tid)
			require.NoError(t, terr)
			if action == graphserver.CancelRollback {
				requireCode(t, err, graphserver.ENOTFOUND)
				require.Equal(t, graphserver.ThreadIdle, th.Status)
				require.Equal(t, "null", string(th.Values))
				return
			}
			require.NoError(t, err)
			require.Equal(t, graphserver.RunInterrupted, got.Status)
			require.Equal(t, graphserver.ThreadInterrupted, th.Status)
			require.JSONEq(t, `{"a":1}`, string(th.Values))
		})
	}
}

// TestCloseWhileCreating closes the server while clients create and wait for
// runs: nothing panics or races, Close returns, and every run is finished or
// back in the queue.
func TestCloseWhileCreating(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	srv, err := graphserver.New(graphserver.Options{Storage: db, Graphs: map[string]graphserver.Graph{"echo": graphtest.Echo{}}, Workers: 4})
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))

	ctx := t.Context()
	var ids []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				st, err := srv.StreamRun(ctx, "", graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{}`), OnCompletion: graphserver.OnCompletionKeep})
				if err != nil {
					if graphserver.ErrorCode(err) != graphserver.EUNAVAILABLE {
						t.Errorf("create run while closing: %v", err)
					}
					return
				}
				mu.Lock()
				ids = append(ids, st.Run.ThreadID+"/"+st.Run.RunID)
				mu.Unlock()
				_, _ = st.Wait(ctx)
			}
		})
	}
	closeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	require.NoError(t, srv.Close(closeCtx))
	wg.Wait()
	for _, id := range ids {
		tid, rid, _ := strings.Cut(id, "/")
		r, err := db.GetRun(ctx, tid, rid, nil)
		require.NoError(t, err)
		require.Contains(t, []string{graphserver.RunSuccess, graphserver.RunPending}, r.Status)
	}
}

func TestRunSummaries(t *testing.T) {
	t.Parallel()
	t.Run("InternalErrorHidden", func(t *testing.T) {
		t.Parallel()
		b := setupRuns(t, func(o *graphserver.Options) {
			o.Graphs["leak"] = graphtest.Failing{Err: errors.New("sqlite: disk I/O error at /var/secret/gs.db")}
		})
		tid := b.thread(t)
		out, err := b.srv.WaitRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "leak", Input: json.RawMessage(`{}`)})
		require.NoError(t, err)
		const want = `{"error":"InternalError","message":"Internal error."}`
		require.JSONEq(t, `{"__error__":`+want+`}`, string(out))
		th, err := b.srv.GetThread(b.ctx, tid)
		require.NoError(t, err)
		require.JSONEq(t, want, string(th.Error))

		st, err := b.srv.StreamRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "leak", Input: json.RawMessage(`{}`)})
		require.NoError(t, err)
		var last graphserver.StreamEvent
		for ev, err := range st.Events(b.ctx) {
			require.NoError(t, err)
			last = ev
		}
		require.Equal(t, "error", last.Event)
		require.JSONEq(t, want, string(last.Data))
	})
	t.Run("FinalStateUnreadable", func(t *testing.T) {
		t.Parallel()
		flaky := &graphtest.FlakyState{}
		b := setupRuns(t, func(o *graphserver.Options) { o.Graphs["flaky"] = flaky })
		tid := b.thread(t)
		_, err := b.srv.WaitRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "flaky", Input: json.RawMessage(`{"x":1}`)})
		require.NoError(t, err)
		flaky.FailState.Store(true)
		out, err := b.srv.WaitRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "flaky", Input: json.RawMessage(`{"x":2}`)})
		require.NoError(t, err)
		require.JSONEq(t, `{"x":2}`, string(out))
		th, err := b.srv.GetThread(b.ctx, tid)
		require.NoError(t, err)
		require.Equal(t, graphserver.ThreadIdle, th.Status)
		require.JSONEq(t, `{"x":1}`, string(th.Values), "values kept, not wiped")
	})
	t.Run("DeleteRunRecomputes", func(t *testing.T) {
		t.Parallel()
		b := setupRuns(t, nil)
		tid := b.thread(t)
		_, err := b.srv.WaitRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{"a":1}`)})
		require.NoError(t, err)
		second, err := b.srv.StreamRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "interrupt", Input: json.RawMessage(`{"b":2}`)})
		require.NoError(t, err)
		_, err = second.Wait(b.ctx)
		require.NoError(t, err)
		th, err := b.srv.GetThread(b.ctx, tid)
		require.NoError(t, err)
		require.Equal(t, graphserver.ThreadInterrupted, th.Status)

		require.NoError(t, b.srv.DeleteRun(b.ctx, tid, second.Run.RunID))
		th, err = b.srv.GetThread(b.ctx, tid)
		require.NoError(t, err)
		require.Equal(t, graphserver.ThreadIdle, th.Status)
		require.JSONEq(t, `{"a":1}`, string(th.Values))
		require.Empty(t, th.Interrupts)

		runs, err := b.srv.ListRuns(b.ctx, tid, graphserver.RunSearch{})
		require.NoError(t, err)
		require.Len(t, runs, 1)
		require.NoError(t, b.srv.DeleteRun(b.ctx, tid, runs[0].RunID))
		th, err = b.srv.GetThread(b.ctx, tid)
		require.NoError(t, err)
		require.Equal(t, "null", string(th.Values))
	})
	t.Run("RollbackPastManyCheckpoints", func(t *testing.T) {
		t.Parallel()
		b := setupRuns(t, nil)
		b.block.Checkpoints = 120
		tid := b.thread(t)
		_, err := b.srv.WaitRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{"a":1}`)})
		require.NoError(t, err)
		run, err := b.srv.CreateRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{"b":2}`)})
		require.NoError(t, err)
		waitStarted(t, b.block)
		require.NoError(t, b.srv.CancelRun(b.ctx, tid, run.RunID, graphserver.CancelRollback))
		_, err = b.srv.JoinRun(b.ctx, tid, run.RunID)
		require.NoError(t, err)
		th, err := b.srv.GetThread(b.ctx, tid)
		require.NoError(t, err)
		require.Equal(t, graphserver.ThreadIdle, th.Status)
		require.JSONEq(t, `{"a":1}`, string(th.Values))
	})
}
