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
	_, err = st.Wait(ctx)
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
