package graphserver_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
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
		var failed *graphserver.RunFailedError
		require.ErrorAs(t, err, &failed)
		require.Equal(t, "ValueError", failed.Name)
		require.Equal(t, "boom", failed.Message)
		require.Equal(t, tid, failed.ThreadID)
		require.Equal(t, "ValueError", graphserver.ErrorName(err))
		require.Equal(t, "run "+failed.RunID+" failed: ValueError: boom", err.Error())
		// the output is still the one /wait answers over HTTP
		require.JSONEq(t, `{"__error__":{"error":"ValueError","message":"boom"}}`, string(out))
		th, err := b.srv.GetThread(b.ctx, tid)
		require.NoError(t, err)
		require.Equal(t, graphserver.ThreadError, th.Status)
		require.JSONEq(t, `{"error":"ValueError","message":"boom"}`, string(th.Error))
		runs, err := b.srv.ListRuns(b.ctx, tid, graphserver.RunSearch{})
		require.NoError(t, err)
		require.Len(t, runs, 1)
		require.Equal(t, runs[0].RunID, failed.RunID)
		require.Equal(t, graphserver.RunError, runs[0].Status)

		// joining the ended run reads the same failure back from storage
		_, err = b.srv.JoinRun(b.ctx, tid, failed.RunID)
		var joined *graphserver.RunFailedError
		require.ErrorAs(t, err, &joined)
		require.Equal(t, *failed, *joined)
	})
	t.Run("FailJoined", func(t *testing.T) {
		t.Parallel()
		b := setupRuns(t, nil)
		tid := b.thread(t)
		run, err := b.srv.CreateRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "fail", Input: json.RawMessage(`{}`)})
		require.NoError(t, err)
		_, err = b.srv.JoinRun(b.ctx, tid, run.RunID)
		var failed *graphserver.RunFailedError
		require.ErrorAs(t, err, &failed)
		require.Equal(t, graphserver.RunFailedError{RunID: run.RunID, ThreadID: tid, Name: "ValueError", Message: "boom"}, *failed)
	})
	t.Run("FailStateless", func(t *testing.T) {
		t.Parallel()
		b := setupRuns(t, nil)
		_, err := b.srv.WaitRun(b.ctx, "", graphserver.RunCreate{AssistantID: "fail", Input: json.RawMessage(`{}`)})
		var failed *graphserver.RunFailedError
		require.ErrorAs(t, err, &failed)
		require.Equal(t, "ValueError", failed.Name)
		require.Equal(t, "boom", failed.Message)
		require.NotEmpty(t, failed.RunID)
	})
	t.Run("Timeout", func(t *testing.T) {
		t.Parallel()
		b := setupRuns(t, func(o *graphserver.Options) { o.MaxRunTime = 50 * time.Millisecond })
		tid := b.thread(t)
		_, err := b.srv.WaitRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{}`)})
		var failed *graphserver.RunFailedError
		require.ErrorAs(t, err, &failed)
		require.Equal(t, "TimeoutError", failed.Name)
		runs, err := b.srv.ListRuns(b.ctx, tid, graphserver.RunSearch{})
		require.NoError(t, err)
		require.Equal(t, graphserver.RunTimeout, runs[0].Status)
	})
	t.Run("SuccessIsNoError", func(t *testing.T) {
		t.Parallel()
		b := setupRuns(t, nil)
		// a graph whose values merely contain an __error__ key besides
		// others did not fail
		out, err := b.srv.WaitRun(b.ctx, "", graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{"__error__":{"error":"X","message":"y"},"a":1}`)})
		require.NoError(t, err)
		require.JSONEq(t, `{"__error__":{"error":"X","message":"y"},"a":1}`, string(out))
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
		out, err = b.srv.WaitRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "interrupt", Command: &graphserver.RunCommand{Resume: json.RawMessage(`"yes"`)}})
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
		_, err = b.srv.WaitRun(b.ctx, "", graphserver.RunCreate{AssistantID: "echo", Command: &graphserver.RunCommand{Resume: json.RawMessage(`1`)}})
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
		var failed *graphserver.RunFailedError
		require.ErrorAs(t, err, &failed)
		require.Equal(t, "InternalError", failed.Name)
		require.Equal(t, "Internal error.", failed.Message)
		require.NotContains(t, err.Error(), "secret")
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

// flakyRenew fails the lease renewals of the first claim it sees while fail
// is set, as a storage hiccup would, or with err when set (ENOTFOUND: the
// lease is lost).
type flakyRenew struct {
	*sqlite.DB
	mu        sync.Mutex
	fail      bool
	failOwner string
	err       error
}

func (f *flakyRenew) RenewRunLease(ctx context.Context, runID, owner string, until time.Time) (string, error) {
	f.mu.Lock()
	if f.failOwner == "" {
		f.failOwner = owner
	}
	failing := f.fail && owner == f.failOwner
	f.mu.Unlock()
	if failing {
		return "", cmp.Or(f.err, errors.New("database is locked"))
	}
	return f.DB.RenewRunLease(ctx, runID, owner, until)
}

// TestLeasePerClaim: a run whose lease lapsed is claimed again by the same
// process; the stale execution of the first attempt loses the run (its lease
// token no longer matches) and the stream carries on with the second
// attempt's events, ids still growing.
func TestLeasePerClaim(t *testing.T) {
	t.Parallel()
	var flaky *flakyRenew
	b := setupRuns(t, func(o *graphserver.Options) {
		flaky = &flakyRenew{DB: o.Storage.(*sqlite.DB), fail: true}
		o.Storage = flaky
		o.LeaseDuration = 2 * time.Second
	})
	tid := b.thread(t)
	st, err := b.srv.StreamRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{"a":1}`)})
	require.NoError(t, err)
	runID := st.Run.RunID
	require.Equal(t, runID, waitStarted(t, b.block))
	require.Equal(t, runID, waitStarted(t, b.block), "claimed again after its lease lapsed")
	flaky.mu.Lock()
	flaky.fail = false
	flaky.mu.Unlock()
	select {
	case id := <-b.block.Stopped:
		require.Equal(t, runID, id)
	case <-time.After(10 * time.Second):
		t.Fatal("the stale first attempt kept running")
	}
	b.block.Release()

	var names, ids []string
	var attempts []float64
	for ev, err := range st.Events(b.ctx) {
		require.NoError(t, err)
		names = append(names, ev.Event)
		ids = append(ids, ev.ID)
		if ev.Event == "metadata" {
			var m map[string]any
			require.NoError(t, json.Unmarshal(ev.Data, &m))
			attempts = append(attempts, m["attempt"].(float64))
		}
	}
	require.Equal(t, []string{"metadata", "values", "metadata", "values", "values"}, names)
	require.Equal(t, []string{"0", "1", "2", "3", "4"}, ids)
	require.Equal(t, []float64{1, 2}, attempts)
	out, err := b.srv.JoinRun(b.ctx, tid, runID)
	require.NoError(t, err)
	require.JSONEq(t, `{"done":true}`, string(out))
	run, err := b.srv.GetRun(b.ctx, tid, runID)
	require.NoError(t, err)
	require.Equal(t, graphserver.RunSuccess, run.Status)
}

// lostThenRerun is storage in which the first claim of a run loses its
// lease at its first renewal, and in which the wait for that run reads it
// from storage only once the run's next attempt has ended (and, the run
// being stateless, been deleted with its thread): the next claim waits
// for that read to start, the read for proceed.
type lostThenRerun struct {
	*flakyRenew               // fail, with ENOTFOUND
	parked      chan struct{} // closed when the wait's read of the run starts
	proceed     chan struct{} // closed by the test: the read goes on
}

func (s *lostThenRerun) ClaimRun(ctx context.Context, owner string, now, leaseUntil time.Time) (*driver.QueuedRun, error) {
	select {
	case <-s.parked:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.DB.ClaimRun(ctx, owner, now, leaseUntil)
}

func (s *lostThenRerun) GetRun(ctx context.Context, threadID, runID string, filter graphserver.Filter) (*graphserver.Run, error) {
	if threadID != "" { // the wait's read (the lost execution's reads name no thread)
		select {
		case <-s.parked:
		default:
			close(s.parked)
			<-s.proceed
		}
	}
	return s.DB.GetRun(ctx, threadID, runID, filter)
}

// TestWaitFollowsTheNextAttempt: a stateless run's first execution loses
// its lease; the wait then reads the run from storage, and the next
// attempt runs, ends and deletes the run with its thread while that read
// is on its way. The wait answers the next attempt's output, which its log
// holds, not the {} of a run it can no longer find.
func TestWaitFollowsTheNextAttempt(t *testing.T) {
	t.Parallel()
	var st *lostThenRerun
	b := setupRuns(t, func(o *graphserver.Options) {
		lost := &flakyRenew{DB: o.Storage.(*sqlite.DB), fail: true, err: graphserver.Errorf(graphserver.ENOTFOUND, "Run not found.")}
		st = &lostThenRerun{flakyRenew: lost, parked: make(chan struct{}), proceed: make(chan struct{})}
		o.Storage = st
		o.LeaseDuration = 300 * time.Millisecond
	})
	type result struct {
		out json.RawMessage
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := b.srv.WaitRun(b.ctx, "", graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{"a":1}`)})
		done <- result{out, err}
	}()
	runID := waitStarted(t, b.block)
	select {
	case <-b.block.Stopped: // the first execution lost its lease
	case <-time.After(10 * time.Second):
		t.Fatal("the first execution kept running")
	}
	select {
	case <-st.parked:
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not read the run from storage")
	}
	require.Equal(t, runID, waitStarted(t, b.block), "claimed again once its lease lapsed")
	b.block.Release()
	require.Eventually(t, func() bool {
		_, err := st.DB.GetRun(b.ctx, "", runID, nil)
		return graphserver.ErrorCode(err) == graphserver.ENOTFOUND
	}, 10*time.Second, 5*time.Millisecond, "the second attempt ends and deletes the stateless run")
	close(st.proceed)
	select {
	case r := <-done:
		require.NoError(t, r.err)
		require.JSONEq(t, `{"done":true}`, string(r.out))
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not return")
	}
}

// deleteOnEnd deletes an assistant with its threads (DeleteAssistant with
// deleteThreads) when the first run ends, before the run's waiters are
// released: observers hear of a run's end between the commit that ended it
// and its log's end.
type deleteOnEnd struct {
	srv         *graphserver.Server
	assistantID string
	once        sync.Once
	err         chan error
}

func (d *deleteOnEnd) Observe(ev graphserver.Event) {
	if re, ok := ev.(graphserver.RunEvent); !ok || re.Status != graphserver.RunSuccess {
		return
	}
	d.once.Do(func() {
		done := make(chan error, 1)
		go func() { done <- d.srv.DeleteAssistant(context.Background(), d.assistantID, true) }()
		select {
		case err := <-done:
			d.err <- err
		case <-time.After(10 * time.Second):
			d.err <- errors.New("DeleteAssistant did not return")
		}
	})
}

// TestDeleteAssistantSparesEndingRuns: deleting an assistant with its
// threads ends the logs of the runs whose threads went with it. A
// stateless run of another assistant, whose end had just deleted its
// temporary thread, is not one of them: its wait answers its output, not
// the {} of a run cut short.
func TestDeleteAssistantSparesEndingRuns(t *testing.T) {
	t.Parallel()
	b := setupRuns(t, nil)
	other, err := b.srv.CreateAssistant(b.ctx, graphserver.AssistantCreate{GraphID: "echo"})
	require.NoError(t, err)
	obs := &deleteOnEnd{srv: b.srv, assistantID: other.AssistantID, err: make(chan error, 1)}
	b.srv.AddObserver(obs)
	out, err := b.srv.WaitRun(b.ctx, "", graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{"ok":1}`)})
	require.NoError(t, err)
	require.NoError(t, <-obs.err, "the assistant was deleted while the run ended")
	require.JSONEq(t, `{"ok":1}`, string(out))
}

// TestStatelessRunOutOfAttempts: a stateless run whose execution here
// stopped renewing its lease runs out of attempts in the sweep, which
// deletes its temporary thread with it. Its stream ends with the error
// event and its wait answers the error, as for a run that failed as it ran,
// though storage no longer has the thread that records the error.
func TestStatelessRunOutOfAttempts(t *testing.T) {
	t.Parallel()
	b := setupRuns(t, func(o *graphserver.Options) {
		o.Storage = &flakyRenew{DB: o.Storage.(*sqlite.DB), fail: true}
		o.LeaseDuration = 200 * time.Millisecond
		o.MaxAttempts = 1
	})
	st, err := b.srv.StreamRun(b.ctx, "", graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{"a":1}`)})
	require.NoError(t, err)
	waitStarted(t, b.block)
	var last graphserver.StreamEvent
	for ev, err := range st.Events(b.ctx) {
		require.NoError(t, err)
		last = ev
	}
	require.Equal(t, "error", last.Event)
	require.JSONEq(t, `{"error":"MaxAttemptsExceeded","message":"`+graphserver.RunMaxAttemptsMessage+`"}`, string(last.Data))
	out, err := st.Wait(b.ctx)
	require.NoError(t, err)
	require.JSONEq(t, `{"__error__":{"error":"MaxAttemptsExceeded","message":"`+graphserver.RunMaxAttemptsMessage+`"}}`, string(out))
}

// TestSweepCancelledRecomputes: a run cancelled while its worker was gone is
// ended by the sweep, and the thread's status comes from its checkpoint.
func TestSweepCancelledRecomputes(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	opts := graphserver.Options{Storage: db, Graphs: map[string]graphserver.Graph{"interrupt": graphtest.Interrupt{}}}
	seed, err := graphserver.New(opts)
	require.NoError(t, err)
	require.NoError(t, seed.Start(t.Context()))
	require.NoError(t, seed.Close(t.Context()))

	srv, err := graphserver.New(opts)
	require.NoError(t, err)
	ctx := t.Context()
	th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	run, err := srv.CreateRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "interrupt", Input: json.RawMessage(`{"q":1}`)})
	require.NoError(t, err)
	now := time.Now()
	_, err = db.ClaimRun(ctx, "dead-worker", now.Add(time.Second), now.Add(-time.Second))
	require.NoError(t, err)
	// The dead worker got as far as an interrupt checkpoint.
	require.NoError(t, graphtest.Interrupt{}.Run(ctx, &graphserver.GraphRun{RunID: run.RunID, ThreadID: th.ThreadID,
		Input: json.RawMessage(`{"q":1}`), Checkpointer: db}, func(graphserver.StreamPart) {}))
	require.NoError(t, srv.CancelRun(ctx, th.ThreadID, run.RunID, graphserver.CancelInterrupt))

	require.NoError(t, srv.Start(ctx))
	t.Cleanup(func() { require.NoError(t, srv.Close(context.WithoutCancel(ctx))) })
	out, err := srv.JoinRun(ctx, th.ThreadID, run.RunID)
	require.NoError(t, err)
	require.NotEmpty(t, out)
	require.Eventually(t, func() bool {
		got, err := srv.GetThread(ctx, th.ThreadID)
		return err == nil && got.Status == graphserver.ThreadInterrupted
	}, 10*time.Second, 5*time.Millisecond)
	got, err := srv.GetThread(ctx, th.ThreadID)
	require.NoError(t, err)
	require.JSONEq(t, `{"q":1}`, string(got.Values))
	require.Len(t, got.Interrupts, 1)
	r, err := srv.GetRun(ctx, th.ThreadID, run.RunID)
	require.NoError(t, err)
	require.Equal(t, graphserver.RunInterrupted, r.Status)
}

// TestLeaseLostToOtherProcess: a run whose lease lapsed is taken over by
// another process; the stale execution here stops, and its stream ends with
// ErrRunReleased so that the consumer joins again.
func TestLeaseLostToOtherProcess(t *testing.T) {
	t.Parallel()
	var flaky *flakyRenew
	a := setupRuns(t, func(o *graphserver.Options) {
		flaky = &flakyRenew{DB: o.Storage.(*sqlite.DB), fail: true}
		o.Storage = flaky
		o.LeaseDuration = 2 * time.Second
		o.Workers = 1 // the stale execution holds the only slot: the other process claims the run
	})
	tid := a.thread(t)
	st, err := a.srv.StreamRun(a.ctx, tid, graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{"a":1}`)})
	require.NoError(t, err)
	require.Equal(t, st.Run.RunID, waitStarted(t, a.block))

	bBlock := graphtest.NewBlocking()
	b, err := graphserver.New(graphserver.Options{Storage: a.db, PollInterval: 20 * time.Millisecond,
		Graphs: map[string]graphserver.Graph{"block": bBlock}})
	require.NoError(t, err)
	require.NoError(t, b.Start(a.ctx))
	t.Cleanup(func() {
		bBlock.Release()
		require.NoError(t, b.Close(context.WithoutCancel(a.ctx)))
	})
	require.Equal(t, st.Run.RunID, waitStarted(t, bBlock), "the other process claimed the run")
	flaky.mu.Lock()
	flaky.fail = false
	flaky.mu.Unlock()

	var last error
	var names []string
	for ev, err := range st.Events(a.ctx) {
		if err != nil {
			last = err
			break
		}
		names = append(names, ev.Event)
	}
	require.ErrorIs(t, last, graphserver.ErrRunReleased)
	require.Equal(t, []string{"metadata", "values"}, names)

	// Joined again, the run is followed through storage until the other
	// process finishes it.
	joined, err := a.srv.JoinRunStream(a.ctx, tid, st.Run.RunID, graphserver.JoinStreamOptions{})
	require.NoError(t, err)
	bBlock.Release()
	out, err := joined.Wait(a.ctx)
	require.NoError(t, err)
	require.JSONEq(t, `{"done":true}`, string(out))
}

// TestPendingRunStream: a run waiting in the queue streams its metadata
// event at once on every driver, and a run cancelled while pending replays
// that event and nothing else. On PostgreSQL, where streams read the stored
// event log, the event was kept only in the creating process's memory
// until a worker started the run: its streams began empty and a run
// cancelled while pending replayed nothing (found by internal/soaktest).
func TestPendingRunStream(t *testing.T) {
	t.Parallel()
	drivers := []struct {
		name string
		open func(testing.TB) driver.Storage
	}{{"SQLite", openSQLite}, {"PostgreSQL", openPostgres}}
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			srv, err := graphserver.New(graphserver.Options{Storage: d.open(t), Logger: slog.New(slog.DiscardHandler),
				Graphs: map[string]graphserver.Graph{"echo": graphtest.Echo{}}})
			require.NoError(t, err)
			require.NoError(t, srv.Start(t.Context()))
			t.Cleanup(func() { require.NoError(t, srv.Close(context.WithoutCancel(t.Context()))) })
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a guard: the events come at once
			defer cancel()
			th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{})
			require.NoError(t, err)
			st, err := srv.StreamRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{}`),
				AfterSeconds: 3600, StreamResumable: true})
			require.NoError(t, err)
			want := []graphserver.StreamEvent{{ID: "0", Event: "metadata", Data: json.RawMessage(`{"attempt":1,"run_id":"` + st.Run.RunID + `"}`)}}
			var got []graphserver.StreamEvent
			for ev, err := range st.Events(ctx) {
				require.NoError(t, err)
				got = append(got, ev)
				if len(got) == 1 {
					require.NoError(t, srv.CancelRun(ctx, th.ThreadID, st.Run.RunID, graphserver.CancelInterrupt))
				}
			}
			require.Equal(t, want, got)

			replay, err := srv.JoinRunStream(ctx, th.ThreadID, st.Run.RunID, graphserver.JoinStreamOptions{LastEventID: "-1"})
			require.NoError(t, err)
			got = nil
			for ev, err := range replay.Events(ctx) {
				require.NoError(t, err)
				got = append(got, ev)
			}
			require.Equal(t, want, got)
			run, err := srv.GetRun(ctx, th.ThreadID, st.Run.RunID)
			require.NoError(t, err)
			require.Equal(t, graphserver.RunInterrupted, run.Status)
		})
	}
}

// TestQueuedRunStartsWhenSlotFrees checks that a run left in the queue
// starts as soon as the run ahead of it ends, without waiting for the
// dispatcher's poll (an hour here): one enqueued behind a run of its
// thread (multitask enqueue), and one queued because the only worker was
// busy. A run that ends wakes the dispatcher only when a run may be
// waiting, so both must still be woken for.
func TestQueuedRunStartsWhenSlotFrees(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		workers int
		sameThr bool
	}{{"EnqueuedOnThread", 4, true}, {"NoFreeWorker", 1, false}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setupRuns(t, func(o *graphserver.Options) { o.PollInterval, o.Workers = time.Hour, c.workers })
			tid := b.thread(t)
			_, err := b.srv.CreateRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{"a":1}`)})
			require.NoError(t, err)
			waitStarted(t, b.block)
			second := tid
			if !c.sameThr {
				second = b.thread(t)
			}
			run, err := b.srv.CreateRun(b.ctx, second, graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{"b":2}`),
				MultitaskStrategy: graphserver.MultitaskEnqueue})
			require.NoError(t, err)
			got, err := b.srv.GetRun(b.ctx, second, run.RunID)
			require.NoError(t, err)
			require.Equal(t, graphserver.RunPending, got.Status)
			// Time for the dispatcher, woken by the creation, to find
			// nothing it can claim yet: then only the first run's end can
			// wake it again.
			time.Sleep(100 * time.Millisecond)
			b.block.Release()
			ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
			defer cancel()
			out, err := b.srv.JoinRun(ctx, second, run.RunID)
			require.NoError(t, err, "the queued run did not start when the run ahead of it ended")
			require.JSONEq(t, `{"b":2}`, string(out))
			// And a run that finds nothing queued behind it leaves the
			// next one free to start at once.
			out, err = b.srv.WaitRun(ctx, "", graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{"c":3}`)})
			require.NoError(t, err)
			require.JSONEq(t, `{"c":3}`, string(out))
		})
	}
}

// TestRunTakesThreadSettings: a thread run's metadata and config merge its
// thread's (read in the run's insertion), and the run's config and graph
// are written back on the thread only when they change it.
func TestRunTakesThreadSettings(t *testing.T) {
	t.Parallel()
	b := setupRuns(t, nil)
	th, err := b.srv.CreateThread(b.ctx, graphserver.ThreadCreate{Metadata: graphserver.Metadata{"team": "a"}, GraphID: "other"})
	require.NoError(t, err)
	tid := th.ThreadID
	run := func(cfg graphserver.Object) (*graphserver.Run, *graphserver.Thread) {
		t.Helper()
		st, err := b.srv.StreamRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{}`), Config: cfg})
		require.NoError(t, err)
		_, err = st.Wait(b.ctx)
		require.NoError(t, err)
		r, err := b.srv.GetRun(b.ctx, tid, st.Run.RunID)
		require.NoError(t, err)
		th, err := b.srv.GetThread(b.ctx, tid)
		require.NoError(t, err)
		return r, th
	}
	configurable := func(o graphserver.Object) map[string]any {
		t.Helper()
		c, ok := o["configurable"].(map[string]any)
		require.True(t, ok, "configurable in %v", o)
		return c
	}

	r, th := run(graphserver.Object{"configurable": map[string]any{"k": "v1"}})
	require.Equal(t, "a", r.Metadata["team"], "the thread's metadata")
	require.Equal(t, "echo", r.Metadata["graph_id"])
	require.Equal(t, graphserver.Metadata{"team": "a", "graph_id": "echo", "assistant_id": r.AssistantID}, th.Metadata)
	require.Equal(t, "v1", configurable(th.Config)["k"])

	r, th = run(nil) // the thread's config, unchanged
	require.Equal(t, "v1", configurable(r.Kwargs.Config)["k"], "the thread's config")
	require.Equal(t, "a", r.Metadata["team"])
	require.Equal(t, "v1", configurable(th.Config)["k"])

	_, th = run(graphserver.Object{"configurable": map[string]any{"k": "v2"}})
	require.Equal(t, "v2", configurable(th.Config)["k"], "a changed config is stored")

	_, err = b.srv.CreateRun(b.ctx, "00000000-0000-4000-8000-000000000000", graphserver.RunCreate{AssistantID: "echo"})
	requireCode(t, err, graphserver.ENOTFOUND)
	require.Equal(t, "Thread or assistant not found.", graphserver.ErrorMessage(err))
}
