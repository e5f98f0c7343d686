package graphserver_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/graphtest"
	"github.com/graphserver/graphserver/sqlite"
)

// countingDB counts the run reads of followers: GetRun (one run) and
// RunStatuses (the watcher's batch).
type countingDB struct {
	*sqlite.DB
	getRuns, statusReads atomic.Int64
}

func (d *countingDB) GetRun(ctx context.Context, threadID, runID string, filter graphserver.Filter) (*graphserver.Run, error) {
	d.getRuns.Add(1)
	return d.DB.GetRun(ctx, threadID, runID, filter)
}

func (d *countingDB) RunStatuses(ctx context.Context, ids []string) (map[string]string, error) {
	d.statusReads.Add(1)
	return d.DB.RunStatuses(ctx, ids)
}

// TestPendingStreamsShareOneWatch: streams waiting on pending runs do not
// each query storage every poll interval: one watcher reads the statuses of
// all followed runs in one query per interval, and a run starting wakes its
// followers once. 100 streams on 20 pending runs over 25+ poll intervals
// make at most a few GetRun each (they used to make one per interval), and
// every stream still sees its run's events once it starts.
func TestPendingStreamsShareOneWatch(t *testing.T) {
	t.Parallel()
	db := &countingDB{DB: openDB(t)}
	block := graphtest.NewBlocking()
	srv, err := graphserver.New(graphserver.Options{
		Storage:      db,
		Graphs:       map[string]graphserver.Graph{"echo": graphtest.Echo{}, "block": block},
		Workers:      1,
		PollInterval: 5 * time.Millisecond,
	})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(func() {
		block.Release()
		require.NoError(t, srv.Close(context.WithoutCancel(ctx)))
	})

	// The one worker is busy: every run created next stays pending.
	_, err = srv.CreateRun(ctx, "", graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	waitStarted(t, block)

	const runs, joins = 20, 4
	var wg sync.WaitGroup
	var valuesSeen atomic.Int64
	follow := func(st *graphserver.RunStream) {
		wg.Go(func() {
			for ev, err := range st.Events(ctx) {
				if err != nil {
					t.Errorf("stream: %v", err)
					return
				}
				if ev.Event == "values" {
					valuesSeen.Add(1)
				}
			}
		})
	}
	for i := range runs {
		st, err := srv.StreamRun(ctx, "", graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{"i":` + string(rune('0'+i%10)) + `}`)})
		require.NoError(t, err)
		follow(st)
		for range joins {
			js, err := srv.JoinRunStream(ctx, "", st.Run.RunID, graphserver.JoinStreamOptions{})
			require.NoError(t, err)
			follow(js)
		}
	}
	const streams = runs * (1 + joins)

	// Let 25 watcher rounds pass (signalled by the batch reads themselves).
	base := db.statusReads.Load()
	require.Eventually(t, func() bool { return db.statusReads.Load() >= base+25 }, 30*time.Second, time.Millisecond)
	require.LessOrEqual(t, db.getRuns.Load(), int64(3*streams),
		"followers of pending runs query storage themselves instead of sharing the watch")

	block.Release()
	wg.Wait()
	require.Equal(t, int64(streams), valuesSeen.Load(), "every stream sees its run's values")
}

// slowEndCheckDB answers the first GetRun of run `slow` only once that run
// has ended in storage: a stream's storage check that races with the run
// starting, logging its events and ending in this process.
type slowEndCheckDB struct {
	*sqlite.DB
	slow atomic.Value  // run id whose first GetRun is held
	held chan struct{} // closed when that GetRun is held
	once sync.Once
}

func (d *slowEndCheckDB) GetRun(ctx context.Context, threadID, runID string, filter graphserver.Filter) (*graphserver.Run, error) {
	if id, _ := d.slow.Load().(string); id == runID {
		first := false
		d.once.Do(func() { first = true })
		if first {
			close(d.held)
			for {
				r, err := d.DB.GetRun(ctx, threadID, runID, filter)
				if err != nil || (r.Status != graphserver.RunPending && r.Status != graphserver.RunRunning) {
					return r, err
				}
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(time.Millisecond):
				}
			}
		}
	}
	return d.DB.GetRun(ctx, threadID, runID, filter)
}

// TestStreamSeesEventsOfRunEndingDuringCheck: a stream of a pending run
// checks storage when the run's watched status changes; when the run
// starts here, logs its values and ends while that check runs, the stream
// still yields the values from the run's log instead of ending without
// them because storage already says the run ended (seen under load in
// TestPendingStreamsShareOneWatch: 98 of 100 streams got their values).
func TestStreamSeesEventsOfRunEndingDuringCheck(t *testing.T) {
	t.Parallel()
	db := &slowEndCheckDB{DB: openDB(t), held: make(chan struct{})}
	block := graphtest.NewBlocking()
	srv, err := graphserver.New(graphserver.Options{
		Storage:      db,
		Graphs:       map[string]graphserver.Graph{"echo": graphtest.Echo{}, "block": block},
		Workers:      1,
		PollInterval: 5 * time.Millisecond,
	})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(func() {
		block.Release()
		require.NoError(t, srv.Close(context.WithoutCancel(ctx)))
	})
	_, err = srv.CreateRun(ctx, "", graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	waitStarted(t, block)

	st, err := srv.StreamRun(ctx, "", graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{"x":1}`)})
	require.NoError(t, err)
	db.slow.Store(st.Run.RunID)
	type result struct {
		events []string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		for ev, err := range st.Events(ctx) {
			if err != nil {
				r.err = err
				break
			}
			r.events = append(r.events, ev.Event)
		}
		done <- r
	}()
	// The stream checks storage while the run is pending; the run then
	// runs and ends before that check answers.
	select {
	case <-db.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the stream never checked storage")
	}
	block.Release()
	r := <-done
	require.NoError(t, r.err)
	require.Contains(t, r.events, "values", "the stream ends without its run's values: %v", r.events)
}

// TestEventLogBounded: a run's event log keeps at most
// Options.MaxEventLogBytes; the oldest events go first, and a stream that
// needs one of them fails with ErrEventsDropped (503 over HTTP) instead of
// skipping it, while a resume from a recent id gets every event after it.
func TestEventLogBounded(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	const events = 200
	srv, err := graphserver.New(graphserver.Options{
		Storage:          db,
		Graphs:           map[string]graphserver.Graph{"emit": graphtest.Emitter{Events: events, Pad: strings.Repeat("x", 100)}},
		MaxEventLogBytes: 4000, // ~20 events of ~200 bytes
	})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(func() { require.NoError(t, srv.Close(context.WithoutCancel(ctx))) })

	st, err := srv.StreamRun(ctx, "", graphserver.RunCreate{AssistantID: "emit", StreamMode: []string{"custom"}, Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	wantOut, err := st.Wait(ctx)
	require.NoError(t, err)

	// A reader from the start, too late: the first events are gone.
	var got error
	for _, err := range st.Events(ctx) {
		if err != nil {
			got = err
			break
		}
		t.Fatal("no event may be yielded before the dropped ones")
	}
	require.ErrorIs(t, got, graphserver.ErrEventsDropped)
	requireCode(t, got, graphserver.EUNAVAILABLE)
	_, err = srv.JoinRunStream(ctx, "", st.Run.RunID, graphserver.JoinStreamOptions{})
	require.ErrorIs(t, err, graphserver.ErrEventsDropped)
	require.Contains(t, graphserver.ErrorMessage(err), "before id ")
	// A join reads no event: it gets the run's output all the same.
	out, err := srv.JoinRun(ctx, "", st.Run.RunID)
	require.NoError(t, err)
	require.JSONEq(t, string(wantOut), string(out))

	// A resume from a recent id gets every event after it, in order.
	last := events // metadata, then the custom events (the only mode asked for): ids 0..events
	js, err := srv.JoinRunStream(ctx, "", st.Run.RunID, graphserver.JoinStreamOptions{LastEventID: strconv.Itoa(last - 5)})
	require.NoError(t, err)
	var ids []string
	for ev, err := range js.Events(ctx) {
		require.NoError(t, err)
		ids = append(ids, ev.ID)
	}
	require.Equal(t, []string{strconv.Itoa(last - 4), strconv.Itoa(last - 3), strconv.Itoa(last - 2), strconv.Itoa(last - 1), strconv.Itoa(last)}, ids)
}
