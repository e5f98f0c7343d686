package graphserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/sqlite"
)

// threadEvents reads a thread stream in the background; next returns its
// next event (failing the test after a while).
type threadEvents struct {
	ch     chan graphserver.StreamEvent
	cancel context.CancelFunc
}

func followThread(t *testing.T, st *graphserver.ThreadStream) *threadEvents {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	te := &threadEvents{ch: make(chan graphserver.StreamEvent, 100), cancel: cancel}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range st.Events(ctx) {
			if err != nil {
				return
			}
			te.ch <- ev
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return te
}

func (te *threadEvents) next(t *testing.T) graphserver.StreamEvent {
	t.Helper()
	select {
	case ev := <-te.ch:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no thread stream event")
		return graphserver.StreamEvent{}
	}
}

// untilRunDone collects events up to and including the run_done marker of
// runID.
func (te *threadEvents) untilRunDone(t *testing.T, runID string) []graphserver.StreamEvent {
	t.Helper()
	var out []graphserver.StreamEvent
	for {
		ev := te.next(t)
		out = append(out, ev)
		if ev.Event == "metadata" && string(ev.Data) == `{"run_id":"`+runID+`","status":"run_done"}` {
			return out
		}
	}
}

func eventNames(evs []graphserver.StreamEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Event
	}
	return out
}

// TestJoinThreadStream reproduces langgraph-api's thread stream
// (Threads.Stream.join: run events of every run on the thread, the
// control "done" of each run mapped to metadata {"status": "run_done"},
// filtered by run_modes / lifecycle / state_update).
func TestJoinThreadStream(t *testing.T) {
	t.Parallel()

	t.Run("RunModesCarryEveryRun", func(t *testing.T) {
		t.Parallel()
		b := setupRuns(t, nil)
		tid := b.thread(t)
		st, err := b.srv.JoinThreadStream(b.ctx, tid, graphserver.ThreadStreamOptions{})
		require.NoError(t, err)
		te := followThread(t, st)

		run1, err := b.srv.CreateRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{"n":1}`), StreamMode: []string{"values", "updates"}})
		require.NoError(t, err)
		evs := te.untilRunDone(t, run1.RunID)
		require.Equal(t, []string{"metadata", "updates", "values", "metadata"}, eventNames(evs))
		require.JSONEq(t, `{"run_id":"`+run1.RunID+`","attempt":1}`, string(evs[0].Data))
		require.JSONEq(t, `{"n":1}`, string(evs[2].Data))

		// A failing run's error event passes too; a second run follows on
		// the same stream.
		run2, err := b.srv.CreateRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "fail", Input: json.RawMessage(`{"n":2}`)})
		require.NoError(t, err)
		evs2 := te.untilRunDone(t, run2.RunID)
		require.Equal(t, []string{"metadata", "values", "error", "metadata"}, eventNames(evs2))
		require.JSONEq(t, `{"error":"ValueError","message":"boom"}`, string(evs2[2].Data))

		// Ids grow along the thread, across runs.
		all := append(evs, evs2...)
		for i := 1; i < len(all); i++ {
			require.True(t, idLess(t, all[i-1].ID, all[i].ID), "%s !< %s", all[i-1].ID, all[i].ID)
		}
	})

	t.Run("LifecycleOnlyMetadata", func(t *testing.T) {
		t.Parallel()
		b := setupRuns(t, nil)
		tid := b.thread(t)
		st, err := b.srv.JoinThreadStream(b.ctx, tid, graphserver.ThreadStreamOptions{StreamModes: []string{"lifecycle"}})
		require.NoError(t, err)
		te := followThread(t, st)
		run, err := b.srv.CreateRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "fail", Input: json.RawMessage(`{}`), StreamMode: []string{"values", "updates"}})
		require.NoError(t, err)
		evs := te.untilRunDone(t, run.RunID)
		require.Equal(t, []string{"metadata", "metadata"}, eventNames(evs))
	})

	t.Run("ReplayAndResume", func(t *testing.T) {
		t.Parallel()
		b := setupRuns(t, nil)
		tid := b.thread(t)
		out, err := b.srv.WaitRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{"n":1}`), StreamResumable: true})
		require.NoError(t, err)
		require.JSONEq(t, `{"n":1}`, string(out))

		// "-" replays the finished run.
		st, err := b.srv.JoinThreadStream(b.ctx, tid, graphserver.ThreadStreamOptions{LastEventID: "-"})
		require.NoError(t, err)
		te := followThread(t, st)
		first := te.next(t)
		require.Equal(t, "metadata", first.Event)
		second := te.next(t)
		require.Equal(t, "values", second.Event)

		// Resuming after the first event starts at the second.
		st2, err := b.srv.JoinThreadStream(b.ctx, tid, graphserver.ThreadStreamOptions{LastEventID: first.ID})
		require.NoError(t, err)
		require.Equal(t, second, followThread(t, st2).next(t))

		// Live only (no id) sees none of it, only what comes next.
		st3, err := b.srv.JoinThreadStream(b.ctx, tid, graphserver.ThreadStreamOptions{})
		require.NoError(t, err)
		te3 := followThread(t, st3)
		run2, err := b.srv.CreateRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{"n":2}`)})
		require.NoError(t, err)
		ev := te3.next(t)
		require.Equal(t, "metadata", ev.Event)
		require.JSONEq(t, `{"run_id":"`+run2.RunID+`","attempt":1}`, string(ev.Data))
	})

	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		b := setupRuns(t, nil)
		tid := b.thread(t)
		_, err := b.srv.JoinThreadStream(b.ctx, tid, graphserver.ThreadStreamOptions{StreamModes: []string{"values"}})
		requireCode(t, err, graphserver.EINVALID)
		for _, id := range []string{"abc", "1-x", "-5", "1--2", "+1-2"} {
			_, err = b.srv.JoinThreadStream(b.ctx, tid, graphserver.ThreadStreamOptions{LastEventID: id})
			requireCode(t, err, graphserver.EINVALID)
		}
		_, err = b.srv.JoinThreadStream(b.ctx, "not-a-uuid", graphserver.ThreadStreamOptions{})
		requireCode(t, err, graphserver.EINVALID)
		_, err = b.srv.JoinThreadStream(b.ctx, "00000000-0000-4000-8000-000000000000", graphserver.ThreadStreamOptions{})
		requireCode(t, err, graphserver.ENOTFOUND)
		for _, id := range []string{"-", "-1", "0", "1700000000000", "1700000000000-3"} {
			_, err = b.srv.JoinThreadStream(b.ctx, tid, graphserver.ThreadStreamOptions{LastEventID: id})
			require.NoError(t, err, id)
		}
	})

	t.Run("EndsWithContextAndServer", func(t *testing.T) {
		t.Parallel()
		b := setupRuns(t, nil)
		tid := b.thread(t)
		st, err := b.srv.JoinThreadStream(b.ctx, tid, graphserver.ThreadStreamOptions{})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(b.ctx)
		cancel()
		for _, err := range st.Events(ctx) {
			require.ErrorIs(t, err, context.Canceled)
		}
		done := make(chan error, 1)
		go func() {
			for _, err := range st.Events(context.Background()) {
				done <- err
			}
			close(done)
		}()
		require.NoError(t, b.srv.Close(context.Background()))
		require.ErrorIs(t, <-done, graphserver.ErrServerClosed)
	})
}

// idLess compares two "<ms>-<seq>" thread event ids.
func idLess(t *testing.T, a, b string) bool {
	t.Helper()
	var am, as, bm, bs int64
	_, err := fmt.Sscanf(a, "%d-%d", &am, &as)
	require.NoError(t, err)
	_, err = fmt.Sscanf(b, "%d-%d", &bm, &bs)
	require.NoError(t, err)
	return am < bm || (am == bm && as < bs)
}

// counterGraph is a one-channel engine graph ("count", last value) whose
// node "inc" adds one.
func counterGraph(t *testing.T) graphserver.Graph {
	t.Helper()
	g := graph.New(graph.Channels{"count": graph.LastValue()})
	g.AddNode("inc", func(ctx context.Context, s graph.State) (any, error) {
		n, _ := s["count"].(float64)
		return graph.Update{"count": n + 1}, nil
	})
	g.AddEdge(graph.Start, "inc")
	c, err := g.Compile(graph.CompileOptions{Name: "counter"})
	require.NoError(t, err)
	return c
}

func counterServer(t *testing.T) *graphserver.Server {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	srv, err := graphserver.New(graphserver.Options{Storage: db, Graphs: map[string]graphserver.Graph{"counter": counterGraph(t)}})
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, srv.Close(context.WithoutCancel(t.Context()))) })
	return srv
}

// TestThreadStreamStateUpdates reproduces langgraph-api's Threads.State.post
// and Threads.State.bulk, which publish {"state", "thread_id"} as a
// state_update event on the thread stream after the update.
func TestThreadStreamStateUpdates(t *testing.T) {
	t.Parallel()
	srv := counterServer(t)
	ctx := t.Context()

	th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{
		Metadata:   graphserver.Metadata{"graph_id": "counter"},
		Supersteps: []graphserver.Superstep{{Updates: []graphserver.StateUpdate{{Values: json.RawMessage(`{"count":5}`), AsNode: "inc"}}}},
	})
	require.NoError(t, err)

	// The supersteps' update is retained for replay.
	st, err := srv.JoinThreadStream(ctx, th.ThreadID, graphserver.ThreadStreamOptions{LastEventID: "-", StreamModes: []string{"state_update"}})
	require.NoError(t, err)
	te := followThread(t, st)
	ev := te.next(t)
	require.Equal(t, "state_update", ev.Event)
	var su struct {
		State    graphserver.ThreadState `json:"state"`
		ThreadID string                  `json:"thread_id"`
	}
	require.NoError(t, json.Unmarshal(ev.Data, &su))
	require.Equal(t, th.ThreadID, su.ThreadID)
	require.Equal(t, map[string]any{"count": float64(5)}, su.State.Values)

	_, err = srv.UpdateThreadState(ctx, th.ThreadID, graphserver.ThreadStateUpdate{Values: json.RawMessage(`{"count":9}`), AsNode: "inc"})
	require.NoError(t, err)
	ev = te.next(t)
	require.Equal(t, "state_update", ev.Event)
	require.NoError(t, json.Unmarshal(ev.Data, &su))
	require.Equal(t, map[string]any{"count": float64(9)}, su.State.Values)
	require.NotNil(t, su.State.Checkpoint)

	// run_modes does not carry state updates, and state_update no run events.
	runModes, err := srv.JoinThreadStream(ctx, th.ThreadID, graphserver.ThreadStreamOptions{LastEventID: "-"})
	require.NoError(t, err)
	rte := followThread(t, runModes)
	out, err := srv.WaitRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "counter", Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.JSONEq(t, `{"count":10}`, string(out))
	require.Equal(t, "metadata", rte.next(t).Event)
	require.Equal(t, "values", rte.next(t).Event)
	select {
	case ev := <-te.ch:
		t.Fatalf("state_update stream got %s", ev.Event)
	default:
	}
}

// TestPatchThreadState: PATCH /threads/{id}/state (sent by the JS SDK's
// threads.patchState) merges metadata into the latest checkpoint.
func TestPatchThreadState(t *testing.T) {
	t.Parallel()
	srv := counterServer(t)
	ctx := t.Context()

	th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{Metadata: graphserver.Metadata{"graph_id": "counter"}})
	require.NoError(t, err)
	err = srv.PatchThreadState(ctx, th.ThreadID, graphserver.ThreadStatePatch{Metadata: graphserver.Metadata{"a": 1}})
	requireCode(t, err, graphserver.ENOTFOUND) // no checkpoint yet

	_, err = srv.WaitRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "counter", Input: json.RawMessage(`{"count":1}`)})
	require.NoError(t, err)
	before, err := srv.GetThreadState(ctx, th.ThreadID, graphserver.ThreadStateQuery{})
	require.NoError(t, err)

	require.NoError(t, srv.PatchThreadState(ctx, th.ThreadID, graphserver.ThreadStatePatch{Metadata: graphserver.Metadata{"reviewed": true, "step": 99}}))
	after, err := srv.GetThreadState(ctx, th.ThreadID, graphserver.ThreadStateQuery{})
	require.NoError(t, err)
	require.Equal(t, before.Checkpoint, after.Checkpoint)
	require.Equal(t, before.Values, after.Values)
	require.Equal(t, true, after.Metadata["reviewed"])
	require.EqualValues(t, 99, after.Metadata["step"])
	require.Equal(t, before.Metadata["source"], after.Metadata["source"])
	require.Equal(t, before.Metadata["run_id"], after.Metadata["run_id"])

	// The history's metadata filter finds the patched checkpoint.
	hist, err := srv.GetThreadHistory(ctx, th.ThreadID, graphserver.ThreadHistoryQuery{Metadata: graphserver.Metadata{"reviewed": true}})
	require.NoError(t, err)
	require.Len(t, hist, 1)
	require.Equal(t, after.Checkpoint, hist[0].Checkpoint)

	err = srv.PatchThreadState(ctx, th.ThreadID, graphserver.ThreadStatePatch{})
	requireCode(t, err, graphserver.EINVALID)
	err = srv.PatchThreadState(ctx, "nope", graphserver.ThreadStatePatch{Metadata: graphserver.Metadata{}})
	requireCode(t, err, graphserver.EINVALID)
	err = srv.PatchThreadState(ctx, "00000000-0000-4000-8000-000000000000", graphserver.ThreadStatePatch{Metadata: graphserver.Metadata{}})
	requireCode(t, err, graphserver.ENOTFOUND)
}

// endGate is an Observer that holds the end of run first (after storage
// ended it, before its end reaches its streams) until run second ended:
// the interleaving of a run queued behind another that executes and ends
// at once, while the end of the run before it is on its way.
type endGate struct {
	mu            sync.Mutex
	first, second string
	secondEnded   chan struct{}
	forced        atomic.Bool // second ended while first's end was held
}

func (g *endGate) Observe(ev graphserver.Event) {
	re, ok := ev.(graphserver.RunEvent)
	if !ok || re.Status == graphserver.RunPending || re.Status == graphserver.RunRunning {
		return
	}
	g.mu.Lock()
	first, second := g.first, g.second
	g.mu.Unlock()
	switch re.RunID {
	case second:
		close(g.secondEnded)
	case first:
		select {
		case <-g.secondEnded:
			g.forced.Store(true)
		case <-time.After(30 * time.Second):
		}
	}
}

// TestThreadStreamRunsInOrder: a run queued behind another (multitask
// enqueue, as input.inject queues one) that starts and ends while the end
// of the run before it is still on its way to the thread's streams (storage
// ended that run, which let the queued one start) goes on the thread
// streams after that end, as langgraph-api's thread stream delivers every
// run of the thread, one after the other. It was lost on the protocol-v2
// stream (its lifecycle never came) and cut into the run before it on the
// classic thread stream.
func TestThreadStreamRunsInOrder(t *testing.T) {
	t.Parallel()
	b := setupRuns(t, func(o *graphserver.Options) { o.PollInterval = 10 * time.Millisecond })
	gate := &endGate{secondEnded: make(chan struct{})}
	b.srv.AddObserver(gate)
	tid := b.thread(t)

	st, err := b.srv.JoinThreadStream(b.ctx, tid, graphserver.ThreadStreamOptions{})
	require.NoError(t, err)
	te := followThread(t, st)
	v2, err := b.srv.SubscribeThreadEvents(b.ctx, tid, graphserver.ThreadEventsRequest{Channels: []string{graphserver.ChannelLifecycle}})
	require.NoError(t, err)
	lifecycle := make(chan graphserver.ThreadEvent, 100)
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	go func() {
		for ev, err := range v2.Events(ctx) {
			if err != nil {
				return
			}
			lifecycle <- ev
		}
	}()

	run1, err := b.srv.CreateRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)
	gate.mu.Lock()
	gate.first = run1.RunID
	gate.mu.Unlock()
	waitStarted(t, b.block)
	run2, err := b.srv.CreateRun(b.ctx, tid, graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{"n":2}`), MultitaskStrategy: graphserver.MultitaskEnqueue})
	require.NoError(t, err)
	gate.mu.Lock()
	gate.second = run2.RunID
	gate.mu.Unlock()
	b.block.Release()

	// Classic: every event of run 2 after the end of run 1, save the
	// metadata event of its creation.
	evs := te.untilRunDone(t, run2.RunID)
	isDone1 := func(ev graphserver.StreamEvent) bool {
		return string(ev.Data) == `{"run_id":"`+run1.RunID+`","status":"run_done"}`
	}
	done1 := slices.IndexFunc(evs, isDone1)
	if done1 == -1 {
		evs = append(evs, te.untilRunDone(t, run1.RunID)...)
	}
	// Once the end of run 1 is out, the gate has let it go.
	require.True(t, gate.forced.Load(), "run 2 did not end while the end of run 1 was held")
	require.NotEqual(t, -1, done1, "the end of run 1 comes before the end of run 2: %v", eventNames(evs))
	values2 := slices.IndexFunc(evs, func(ev graphserver.StreamEvent) bool {
		return ev.Event == "values" && string(ev.Data) == `{"n":2}`
	})
	require.Greater(t, values2, done1, "run 2's events come after the end of run 1")

	// Protocol v2: both runs' lifecycles, in order.
	var got []string
	for len(got) < 4 {
		select {
		case ev := <-lifecycle:
			var d struct {
				Event string `json:"event"`
				RunID string `json:"run_id"`
			}
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			got = append(got, d.Event+" "+d.RunID)
		case <-time.After(10 * time.Second):
			t.Fatalf("lifecycle events so far: %v", got)
		}
	}
	require.Equal(t, []string{"running " + run1.RunID, "completed " + run1.RunID, "running " + run2.RunID, "completed " + run2.RunID}, got)
}
