package main

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver/internal/cmdtest"
)

// start runs the example on a free port with the given database and
// schedule.
func start(t *testing.T, db, schedule string) *cmdtest.Server {
	t.Helper()
	runIt := func(ctx context.Context, args []string, stdout io.Writer) error {
		return run(ctx, args, stdout, io.Discard)
	}
	return cmdtest.Start(t, runIt, "-addr", "127.0.0.1:0", "-db", db, "-schedule", schedule)
}

// TestCronExample: the example's cron fires on its own and its runs append
// to the thread; a restart keeps the one cron and applies a new schedule.
func TestCronExample(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "crons.db")
	s := start(t, db, "@every 1s")

	var crons []map[string]any
	require.Equal(t, 200, cmdtest.Do(t, "POST", s.URL+"/runs/crons/search", `{}`, &crons))
	require.Len(t, crons, 1)
	require.Equal(t, logThreadID, crons[0]["thread_id"])
	require.Equal(t, "@every 1s", crons[0]["schedule"])
	beats := func() int {
		var state struct {
			Values struct {
				Beats []string `json:"beats"`
			} `json:"values"`
		}
		require.Equal(t, 200, cmdtest.Do(t, "GET", s.URL+"/threads/"+logThreadID+"/state", "", &state))
		for _, b := range state.Values.Beats {
			_, err := time.Parse(time.RFC3339, b)
			require.NoError(t, err, b)
		}
		return len(state.Values.Beats)
	}
	require.Eventually(t, func() bool { return beats() >= 2 }, 20*time.Second, 50*time.Millisecond, "the cron fires every second")
	var runs []map[string]any
	require.Equal(t, 200, cmdtest.Do(t, "GET", s.URL+"/threads/"+logThreadID+"/runs?limit=100", "", &runs))
	require.GreaterOrEqual(t, len(runs), 2)
	require.Equal(t, "examples/crons", runs[0]["metadata"].(map[string]any)["source"])

	require.NoError(t, s.Stop())
	s = start(t, db, "0 9 * * *")
	var again []map[string]any
	require.Equal(t, 200, cmdtest.Do(t, "POST", s.URL+"/runs/crons/search", `{}`, &again))
	require.Len(t, again, 1, "a restart keeps the one cron")
	require.Equal(t, crons[0]["cron_id"], again[0]["cron_id"])
	require.Equal(t, "0 9 * * *", again[0]["schedule"])
	next, err := time.Parse(time.RFC3339, again[0]["next_run_date"].(string))
	require.NoError(t, err)
	require.Equal(t, 9, next.Hour())
	require.Zero(t, next.Minute())
}
