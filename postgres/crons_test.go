package postgres_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/graphtest"
)

// TestCronFiresOnceAcrossProcesses: three servers on one database fire
// due crons at once, four times each per minute of their (shared, fake)
// clock; each firing creates one run, whichever server claims it (the
// compare-and-set on next_run_date, in the run's transaction). As the
// root's TestCronExactlyOnce does on one SQLite file.
func TestCronFiresOnceAcrossProcesses(t *testing.T) {
	t.Parallel()
	requireURL(t)
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	var now atomic.Pointer[time.Time]
	now.Store(&day)
	clock := func() time.Time { return *now.Load() }
	var srvs []*graphserver.Server
	for _, db := range openShared(t, 3) {
		srv, err := graphserver.New(graphserver.Options{
			Storage:      db,
			Graphs:       map[string]graphserver.Graph{"echo": graphtest.Echo{}},
			Now:          clock,
			CronInterval: -1, // fired by hand below
			Logger:       slog.New(slog.DiscardHandler),
		})
		require.NoError(t, err)
		require.NoError(t, srv.Start(t.Context())) // creates the system assistants
		t.Cleanup(func() { _ = srv.Close(context.WithoutCancel(t.Context())) })
		srvs = append(srvs, srv)
	}
	ctx := t.Context()
	th, err := srvs[0].CreateThread(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	_, err = srvs[1].CreateCron(ctx, th.ThreadID, graphserver.CronCreate{
		RunCreate: graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{"n":1}`)},
		Schedule:  "* * * * *",
	})
	require.NoError(t, err)

	const minutes = 3
	for m := 1; m <= minutes; m++ {
		at := day.Add(time.Duration(m) * time.Minute)
		now.Store(&at)
		var fired atomic.Int64
		var wg sync.WaitGroup
		for i := range 12 {
			wg.Go(func() {
				n, err := srvs[i%3].FireDueCrons(ctx)
				if err != nil {
					t.Errorf("fire: %v", err)
				}
				fired.Add(int64(n))
			})
		}
		wg.Wait()
		require.EqualValues(t, 1, fired.Load(), "minute %d: one run", m)
	}
	runs, err := srvs[2].ListRuns(ctx, th.ThreadID, graphserver.RunSearch{Limit: 100})
	require.NoError(t, err)
	require.Len(t, runs, minutes)
}
