package graphserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/graphtest"
	"github.com/graphserver/graphserver/sqlite"
)

// testClock is a clock a test sets by hand; the Servers under test read it
// as Options.Now, so crons fire when the test says, without sleeping.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock(t time.Time) *testClock { return &testClock{t: t} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// cronServer opens a started Server on the SQLite file path (a new one
// when path is ""), reading clock, with graph "echo" registered and no
// background scheduler: the test fires crons with FireDueCrons.
func cronServer(t *testing.T, path string, clock *testClock) *graphserver.Server {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "gs.db")
	}
	db, err := sqlite.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	srv, err := graphserver.New(graphserver.Options{
		Storage:      db,
		Graphs:       map[string]graphserver.Graph{"echo": graphtest.Echo{}},
		Now:          clock.Now,
		CronInterval: -1,
	})
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, srv.Close(context.WithoutCancel(t.Context()))) })
	return srv
}

// day is the base time of the cron tests: Monday 2025-01-06 10:00 UTC.
var day = time.Date(2025, 1, 6, 10, 0, 0, 0, time.UTC)

// clockAt returns day plus h hours and m minutes.
func clockAt(h, m int) time.Time {
	return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
}

// echoCron is a cron body running graph echo with input {"n": 1}.
func echoCron(schedule string) graphserver.CronCreate {
	return graphserver.CronCreate{
		RunCreate: graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{"n":1}`)},
		Schedule:  schedule,
	}
}

// fire calls FireDueCrons and returns how many runs it created.
func fire(t *testing.T, srv *graphserver.Server) int {
	t.Helper()
	n, err := srv.FireDueCrons(t.Context())
	require.NoError(t, err)
	return n
}

// nextRun returns the cron's stored next_run_date (nil when it has none).
func nextRun(t *testing.T, srv *graphserver.Server, id string) *time.Time {
	t.Helper()
	c, err := srv.GetCron(t.Context(), id)
	require.NoError(t, err)
	return c.NextRunDate
}

// threadRuns waits for the runs of a thread to end and returns them,
// oldest first.
func threadRuns(t *testing.T, srv *graphserver.Server, threadID string) []*graphserver.Run {
	t.Helper()
	runs, err := srv.ListRuns(t.Context(), threadID, graphserver.RunSearch{Limit: 100})
	require.NoError(t, err)
	out := make([]*graphserver.Run, len(runs))
	for i, r := range runs {
		_, err := srv.JoinRun(t.Context(), threadID, r.RunID)
		require.NoError(t, err)
		out[len(runs)-1-i] = r
	}
	return out
}

// countMarked counts the threads whose metadata has cron=mark.
func countMarked(t *testing.T, srv *graphserver.Server, mark string) int {
	t.Helper()
	n, err := srv.CountThreads(t.Context(), graphserver.ThreadSearch{Metadata: graphserver.Metadata{"cron": mark}})
	require.NoError(t, err)
	return n
}

// TestCronSchedules: schedules are parsed by robfig/cron/v3's standard
// parser (5 fields, descriptors); a bad one is EINVALID with the parser's
// own message; the next firing is the schedule's first time after now, in
// the cron's time zone.
func TestCronSchedules(t *testing.T) {
	t.Parallel()
	clock := newTestClock(clockAt(0, 0))
	srv := cronServer(t, "", clock)
	ctx := t.Context()

	t.Run("ParserErrors", func(t *testing.T) {
		parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
		for _, spec := range []string{"* *", "61 * * * *", "* * * * * *", "@fortnightly", "@every soon", "0 0 * * mon-xyz"} {
			_, perr := parser.Parse(spec)
			require.Error(t, perr, spec)
			_, err := srv.CreateCron(ctx, "", echoCron(spec))
			requireCode(t, err, graphserver.EINVALID)
			require.Contains(t, graphserver.ErrorMessage(err), perr.Error(), spec)
		}
		for spec, want := range map[string]string{
			"":                       "schedule is required",
			"   ":                    "schedule is required",
			"TZ=UTC * * * * *":       "timezone field",
			"CRON_TZ=Europe/Paris 0": "timezone field",
			"0 0 30 2 *":             "never fires",
		} {
			_, err := srv.CreateCron(ctx, "", echoCron(spec))
			requireCode(t, err, graphserver.EINVALID)
			require.Contains(t, graphserver.ErrorMessage(err), want, spec)
		}
		for _, tz := range []string{"Mars/Olympus", "Local", "../../etc/passwd", "utc+1"} {
			c := echoCron("@hourly")
			c.Timezone = tz
			_, err := srv.CreateCron(ctx, "", c)
			requireCode(t, err, graphserver.EINVALID)
			require.Contains(t, graphserver.ErrorMessage(err), "IANA", tz)
		}
		n, err := srv.CountCrons(ctx, graphserver.CronSearch{})
		require.NoError(t, err)
		require.Zero(t, n, "refused crons are not stored")
	})

	t.Run("Descriptors", func(t *testing.T) {
		// now is Monday 2025-01-06 10:00 UTC.
		for spec, want := range map[string]time.Time{
			"@hourly":          clockAt(1, 0),
			"@daily":           time.Date(2025, 1, 7, 0, 0, 0, 0, time.UTC),
			"@midnight":        time.Date(2025, 1, 7, 0, 0, 0, 0, time.UTC),
			"@weekly":          time.Date(2025, 1, 12, 0, 0, 0, 0, time.UTC), // Sunday
			"@monthly":         time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC),
			"@yearly":          time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			"@annually":        time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			"@every 90s":       clockAt(0, 1).Add(30 * time.Second),
			"*/15 * * * *":     clockAt(0, 15),
			" 0 9 * * 1-5 ":    time.Date(2025, 1, 7, 9, 0, 0, 0, time.UTC),
			"30 10 * * MON":    clockAt(0, 30),
			"0 0 1,15 * *":     time.Date(2025, 1, 15, 0, 0, 0, 0, time.UTC),
			"0 12 * JAN,FEB *": time.Date(2025, 1, 6, 12, 0, 0, 0, time.UTC),
		} {
			c, err := srv.CreateCron(ctx, "", echoCron(spec))
			require.NoError(t, err, spec)
			require.NotNil(t, c.NextRunDate, spec)
			require.Equal(t, want, *c.NextRunDate, spec)
			require.True(t, c.Enabled)
			require.Empty(t, c.Timezone)
		}
	})

	t.Run("TimeZone", func(t *testing.T) {
		c := echoCron("0 9 * * *")
		c.Timezone = "Asia/Tokyo" // UTC+9: 09:00 is 00:00 UTC
		got, err := srv.CreateCron(ctx, "", c)
		require.NoError(t, err)
		require.Equal(t, "Asia/Tokyo", got.Timezone)
		require.Equal(t, time.Date(2025, 1, 7, 0, 0, 0, 0, time.UTC), *got.NextRunDate)
		c.Timezone = "UTC"
		got, err = srv.CreateCron(ctx, "", c)
		require.NoError(t, err)
		require.Equal(t, time.Date(2025, 1, 7, 9, 0, 0, 0, time.UTC), *got.NextRunDate)
	})
}

// TestCronDST: in a time zone with daylight saving time, a daily schedule
// keeps its local time across the change, so its UTC time moves by an hour;
// on the day clocks spring forward a local time that does not exist is
// skipped, and on the day they fall back a local time that happens twice
// fires twice (robfig/cron/v3's SpecSchedule.Next).
func TestCronDST(t *testing.T) {
	t.Parallel()
	clock := newTestClock(time.Date(2025, 3, 8, 12, 0, 0, 0, time.UTC)) // Saturday; DST starts Sunday 2025-03-09 02:00 in New York
	srv := cronServer(t, "", clock)
	ctx := t.Context()
	create := func(schedule string) *graphserver.Cron {
		t.Helper()
		c := echoCron(schedule)
		c.Timezone = "America/New_York"
		c.OnRunCompleted = graphserver.OnCompletionKeep
		got, err := srv.CreateCron(ctx, "", c)
		require.NoError(t, err)
		return got
	}
	// follow fires c at each of its next firings and returns them.
	follow := func(c *graphserver.Cron, n int) []time.Time {
		t.Helper()
		var out []time.Time
		for range n {
			next := nextRun(t, srv, c.CronID)
			require.NotNil(t, next)
			out = append(out, *next)
			clock.Set(*next)
			require.Positive(t, fire(t, srv))
		}
		return out
	}
	nine := create("0 9 * * *")
	early := create("30 2 * * *")
	require.Equal(t, []time.Time{
		time.Date(2025, 3, 8, 14, 0, 0, 0, time.UTC), // 09:00 EST (UTC-5)
		time.Date(2025, 3, 9, 13, 0, 0, 0, time.UTC), // 09:00 EDT (UTC-4)
		time.Date(2025, 3, 10, 13, 0, 0, 0, time.UTC),
	}, follow(nine, 3))
	// 02:30 does not exist on 2025-03-09 (02:00 jumps to 03:00).
	require.Equal(t, time.Date(2025, 3, 11, 6, 30, 0, 0, time.UTC), *nextRun(t, srv, early.CronID),
		"02:30 EDT on the 10th fired already (at the nine o'clock firings' now)")

	clock.Set(time.Date(2025, 11, 1, 12, 0, 0, 0, time.UTC)) // DST ends Sunday 2025-11-02 02:00
	once := create("30 1 * * *")
	require.Equal(t, []time.Time{
		time.Date(2025, 11, 2, 5, 30, 0, 0, time.UTC), // 01:30 EDT
		time.Date(2025, 11, 2, 6, 30, 0, 0, time.UTC), // 01:30 EST, an hour later
		time.Date(2025, 11, 3, 6, 30, 0, 0, time.UTC),
	}, follow(once, 3))
}

// TestCronEndTime: a cron fires until its end time; its next_run_date is
// null once the next firing would come after it; a due cron whose end time
// has passed does not fire; clearing the end time (end_time: null) makes an
// ended cron fire again from now.
func TestCronEndTime(t *testing.T) {
	t.Parallel()
	clock := newTestClock(clockAt(0, 0))
	srv := cronServer(t, "", clock)
	ctx := t.Context()
	th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)

	c := echoCron("@hourly")
	c.EndTime = ptr(clockAt(2, 30))
	cr, err := srv.CreateCron(ctx, th.ThreadID, c)
	require.NoError(t, err)
	require.Equal(t, clockAt(2, 30), *cr.EndTime)
	clock.Set(clockAt(1, 0))
	require.Equal(t, 1, fire(t, srv))
	require.Equal(t, clockAt(2, 0), *nextRun(t, srv, cr.CronID))
	clock.Set(clockAt(2, 0))
	require.Equal(t, 1, fire(t, srv))
	require.Nil(t, nextRun(t, srv, cr.CronID), "03:00 is after the end time")
	clock.Set(clockAt(5, 0))
	require.Zero(t, fire(t, srv))
	require.Len(t, threadRuns(t, srv, th.ThreadID), 2)

	// Clearing the end time schedules the ended cron again, from now.
	got, err := srv.UpdateCron(ctx, cr.CronID, graphserver.CronPatch{ClearEndTime: true})
	require.NoError(t, err)
	require.Nil(t, got.EndTime)
	require.Equal(t, clockAt(6, 0), *got.NextRunDate)
	clock.Set(clockAt(6, 0))
	require.Equal(t, 1, fire(t, srv))

	// An end time before the next firing ends the cron at once; moving it
	// later schedules the cron again from now.
	got, err = srv.UpdateCron(ctx, cr.CronID, graphserver.CronPatch{EndTime: ptr(clockAt(6, 30))})
	require.NoError(t, err)
	require.Nil(t, got.NextRunDate)
	clock.Set(clockAt(6, 10))
	got, err = srv.UpdateCron(ctx, cr.CronID, graphserver.CronPatch{EndTime: ptr(clockAt(9, 30))})
	require.NoError(t, err)
	require.Equal(t, clockAt(7, 0), *got.NextRunDate)

	// An end time that passes while the cron is due stops it: no late run.
	clock.Set(clockAt(10, 0))
	require.Zero(t, fire(t, srv))
	require.Len(t, threadRuns(t, srv, th.ThreadID), 3)

	// A cron created with an end time already passed never fires.
	c.EndTime = ptr(clockAt(0, 0))
	ended, err := srv.CreateCron(ctx, th.ThreadID, c)
	require.NoError(t, err)
	require.Nil(t, ended.NextRunDate)
}

// TestCronEnabled: a disabled cron does not fire; re-enabling it schedules
// its next firing from the time it is re-enabled, not from the firings it
// missed.
func TestCronEnabled(t *testing.T) {
	t.Parallel()
	clock := newTestClock(clockAt(0, 0))
	srv := cronServer(t, "", clock)
	ctx := t.Context()
	th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)

	c := echoCron("*/10 * * * *")
	c.Enabled = ptr(false)
	cr, err := srv.CreateCron(ctx, th.ThreadID, c)
	require.NoError(t, err)
	require.False(t, cr.Enabled)
	clock.Set(clockAt(0, 10))
	require.Zero(t, fire(t, srv))

	clock.Set(clockAt(1, 33))
	got, err := srv.UpdateCron(ctx, cr.CronID, graphserver.CronPatch{Enabled: ptr(true)})
	require.NoError(t, err)
	require.True(t, got.Enabled)
	require.Equal(t, clockAt(1, 40), *got.NextRunDate)
	require.Zero(t, fire(t, srv), "the firings missed while disabled are not made up")
	clock.Set(clockAt(1, 40))
	require.Equal(t, 1, fire(t, srv))

	got, err = srv.UpdateCron(ctx, cr.CronID, graphserver.CronPatch{Enabled: ptr(false)})
	require.NoError(t, err)
	require.False(t, got.Enabled)
	clock.Set(clockAt(1, 50))
	require.Zero(t, fire(t, srv))
	require.Len(t, threadRuns(t, srv, th.ThreadID), 1)
	enabled, err := srv.CountCrons(ctx, graphserver.CronSearch{Enabled: ptr(true)})
	require.NoError(t, err)
	require.Zero(t, enabled)
}

// TestCronThread: a thread cron creates its runs on its thread, through the
// normal run path, with the payload's fields and multitask strategy; the
// runs carry the cron id in their configuration; a firing the thread
// refuses (multitask reject on a busy thread) is skipped, not retried.
func TestCronThread(t *testing.T) {
	t.Parallel()
	clock := newTestClock(clockAt(0, 0))
	srv := cronServer(t, "", clock)
	ctx := t.Context()
	th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{Metadata: graphserver.Metadata{"owner": "ann"}})
	require.NoError(t, err)

	c := echoCron("@hourly")
	c.Metadata = graphserver.Metadata{"from": "cron"}
	c.Config = graphserver.Object{"configurable": map[string]any{"model": "m"}}
	c.StreamMode = graphserver.StreamModes{"updates"}
	c.OnRunCompleted = graphserver.OnCompletionKeep // ignored on a thread cron
	cr, err := srv.CreateCron(ctx, th.ThreadID, c)
	require.NoError(t, err)
	require.Equal(t, th.ThreadID, cr.ThreadID)
	require.Empty(t, cr.OnRunCompleted)
	require.Equal(t, graphserver.SystemAssistantID("echo"), cr.AssistantID, "graph id resolved")
	require.Equal(t, graphserver.SystemAssistantID("echo"), cr.Payload.AssistantID)
	require.Equal(t, graphserver.Metadata{"from": "cron"}, cr.Metadata)
	require.Equal(t, graphserver.Object{"configurable": map[string]any{"model": "m", "cron_id": cr.CronID}}, cr.Payload.Config)

	clock.Set(clockAt(1, 0))
	require.Equal(t, 1, fire(t, srv))
	runs := threadRuns(t, srv, th.ThreadID)
	require.Len(t, runs, 1)
	run, err := srv.GetRun(ctx, th.ThreadID, runs[0].RunID)
	require.NoError(t, err)
	require.Equal(t, graphserver.RunSuccess, run.Status)
	require.Equal(t, "cron", run.Metadata["from"])
	require.Equal(t, []string{"updates"}, run.Kwargs.StreamMode)
	configurable := run.Kwargs.Config["configurable"].(map[string]any)
	require.Equal(t, cr.CronID, configurable["cron_id"])
	require.Equal(t, "m", configurable["model"])
	require.Equal(t, graphserver.MultitaskEnqueue, run.MultitaskStrategy, "the server's default strategy")
	st, err := srv.GetThread(ctx, th.ThreadID)
	require.NoError(t, err)
	require.JSONEq(t, `{"n":1}`, string(st.Values))

	// A pending run (delayed a month) keeps the thread busy: a reject cron
	// skips its firing, an enqueue cron adds its run.
	delayed, err := srv.CreateRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "echo", AfterSeconds: 30 * 24 * 3600})
	require.NoError(t, err)
	reject := echoCron("@hourly")
	reject.MultitaskStrategy = graphserver.MultitaskReject
	rj, err := srv.CreateCron(ctx, th.ThreadID, reject)
	require.NoError(t, err)
	clock.Set(clockAt(2, 0))
	require.Equal(t, 1, fire(t, srv), "the enqueue cron fires, the reject cron does not")
	require.Equal(t, clockAt(3, 0), *nextRun(t, srv, rj.CronID), "the refused firing is skipped, not retried")
	require.Zero(t, fire(t, srv))
	list, err := srv.ListRuns(ctx, th.ThreadID, graphserver.RunSearch{})
	require.NoError(t, err)
	require.Len(t, list, 3)
	require.Equal(t, delayed.RunID, list[0].RunID, "newest first: the delayed run is created a month ahead")
	require.Equal(t, graphserver.RunPending, list[0].Status)
	require.Equal(t, rj.Payload.Config["configurable"], map[string]any{"cron_id": rj.CronID})
	require.NotEqual(t, rj.CronID, list[1].Kwargs.Config["configurable"].(map[string]any)["cron_id"], "the run is the enqueue cron's")

	// A cron goes with its thread.
	require.NoError(t, srv.DeleteThread(ctx, th.ThreadID))
	_, err = srv.GetCron(ctx, cr.CronID)
	requireCode(t, err, graphserver.ENOTFOUND)
}

// TestCronStateless: a stateless cron runs on a new thread at each firing;
// on_run_completed delete (the default) deletes the thread after the run,
// keep leaves it.
func TestCronStateless(t *testing.T) {
	t.Parallel()
	clock := newTestClock(clockAt(0, 0))
	srv := cronServer(t, "", clock)
	ctx := t.Context()

	keep := echoCron("@hourly")
	keep.Metadata = graphserver.Metadata{"cron": "keep"}
	keep.OnRunCompleted = graphserver.OnCompletionKeep
	kc, err := srv.CreateCron(ctx, "", keep)
	require.NoError(t, err)
	require.Empty(t, kc.ThreadID)
	require.Equal(t, graphserver.OnCompletionKeep, kc.OnRunCompleted)
	del := echoCron("@hourly")
	del.Metadata = graphserver.Metadata{"cron": "delete"}
	dc, err := srv.CreateCron(ctx, "", del)
	require.NoError(t, err)
	require.Equal(t, graphserver.OnCompletionDelete, dc.OnRunCompleted, "the default")

	for h := 1; h <= 2; h++ {
		clock.Set(clockAt(h, 0))
		require.Equal(t, 2, fire(t, srv))
		require.Eventually(t, func() bool { return countMarked(t, srv, "delete") == 0 }, 10*time.Second, 5*time.Millisecond,
			"the thread of a delete cron's run goes when the run ends")
	}
	page, err := srv.SearchThreads(ctx, graphserver.ThreadSearch{Metadata: graphserver.Metadata{"cron": "keep"}})
	require.NoError(t, err)
	require.Len(t, page.Items, 2, "one new thread per firing, kept")
	for _, th := range page.Items {
		runs := threadRuns(t, srv, th.ThreadID)
		require.Len(t, runs, 1)
		require.Equal(t, kc.AssistantID, runs[0].AssistantID)
		got, err := srv.GetThread(ctx, th.ThreadID)
		require.NoError(t, err)
		require.JSONEq(t, `{"n":1}`, string(got.Values))
	}

	// on_run_completed can be changed; it is refused on bad values.
	got, err := srv.UpdateCron(ctx, kc.CronID, graphserver.CronPatch{OnRunCompleted: ptr(graphserver.OnCompletionDelete)})
	require.NoError(t, err)
	require.Equal(t, graphserver.OnCompletionDelete, got.OnRunCompleted)
	_, err = srv.UpdateCron(ctx, kc.CronID, graphserver.CronPatch{OnRunCompleted: ptr("archive")})
	requireCode(t, err, graphserver.EINVALID)
}

// TestCronDowntime: a cron whose firings were missed while no server ran
// fires once, then follows its schedule from now: no burst of catch-up runs.
func TestCronDowntime(t *testing.T) {
	t.Parallel()
	clock := newTestClock(clockAt(0, 0))
	srv := cronServer(t, "", clock)
	ctx := t.Context()
	th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	cr, err := srv.CreateCron(ctx, th.ThreadID, echoCron("*/5 * * * *"))
	require.NoError(t, err)
	require.Equal(t, clockAt(0, 5), *cr.NextRunDate)

	clock.Set(clockAt(3, 2)) // 36 firings missed
	require.Equal(t, 1, fire(t, srv))
	require.Zero(t, fire(t, srv))
	require.Equal(t, clockAt(3, 5), *nextRun(t, srv, cr.CronID))
	clock.Set(clockAt(3, 5))
	require.Equal(t, 1, fire(t, srv))
	require.Len(t, threadRuns(t, srv, th.ThreadID), 2)
}

// TestCronExactlyOnce: two Servers on one SQLite file (as two processes)
// fire each due firing once, however many FireDueCrons calls race on both.
func TestCronExactlyOnce(t *testing.T) {
	t.Parallel()
	clock := newTestClock(clockAt(0, 0))
	path := filepath.Join(t.TempDir(), "gs.db")
	a := cronServer(t, path, clock)
	b := cronServer(t, path, clock)
	ctx := t.Context()
	th, err := a.CreateThread(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	_, err = a.CreateCron(ctx, th.ThreadID, echoCron("* * * * *"))
	require.NoError(t, err)
	stateless := echoCron("* * * * *")
	stateless.Metadata = graphserver.Metadata{"cron": "once"}
	stateless.OnRunCompleted = graphserver.OnCompletionKeep
	_, err = b.CreateCron(ctx, "", stateless)
	require.NoError(t, err)

	const ticks = 3
	for minute := 1; minute <= ticks; minute++ {
		clock.Set(clockAt(0, minute))
		var wg sync.WaitGroup
		var mu sync.Mutex
		fired := 0
		for i := range 8 {
			srv := a
			if i%2 == 1 {
				srv = b
			}
			wg.Go(func() {
				n, err := srv.FireDueCrons(ctx)
				if err != nil {
					t.Errorf("fire: %v", err)
				}
				mu.Lock()
				fired += n
				mu.Unlock()
			})
		}
		wg.Wait()
		require.Equal(t, 2, fired, "minute %d: one run per cron", minute)
	}
	require.Len(t, threadRuns(t, a, th.ThreadID), ticks)
	require.Equal(t, ticks, countMarked(t, b, "once"))
	crons, err := b.SearchCrons(ctx, graphserver.CronSearch{})
	require.NoError(t, err)
	for _, c := range crons.Items {
		require.Equal(t, clockAt(0, ticks+1), *c.NextRunDate)
	}
}

// TestCronDowntimeRestart: the process stops, missing three hours of a
// five-minute schedule, and a new one starts on the same database file; its
// own scheduler fires the cron once, then follows the schedule from now (no
// burst of catch-up runs). This reproduces langgraph_api's cron_scheduler:
// it takes the crons whose next_run_date has passed, creates one run for
// each, and sets next_run_date to next_cron_date(schedule, now, timezone).
func TestCronDowntimeRestart(t *testing.T) {
	t.Parallel()
	clock := newTestClock(clockAt(0, 0))
	path := filepath.Join(t.TempDir(), "gs.db")

	// The first process: a thread and a cron, then it stops.
	db, err := sqlite.Open(path)
	require.NoError(t, err)
	first, err := graphserver.New(graphserver.Options{
		Storage: db, Graphs: map[string]graphserver.Graph{"echo": graphtest.Echo{}}, Now: clock.Now, CronInterval: -1,
	})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, first.Start(ctx))
	th, err := first.CreateThread(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	cr, err := first.CreateCron(ctx, th.ThreadID, echoCron("*/5 * * * *"))
	require.NoError(t, err)
	require.NoError(t, first.Close(ctx))
	require.NoError(t, db.Close())

	// Three hours later (36 missed firings) a second process starts, with
	// its scheduler ticking every millisecond.
	clock.Set(clockAt(3, 2))
	db, err = sqlite.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	second, err := graphserver.New(graphserver.Options{
		Storage: db, Graphs: map[string]graphserver.Graph{"echo": graphtest.Echo{}}, Now: clock.Now, CronInterval: time.Millisecond,
	})
	require.NoError(t, err)
	require.NoError(t, second.Start(ctx))
	t.Cleanup(func() { require.NoError(t, second.Close(context.WithoutCancel(ctx))) })
	require.Eventually(t, func() bool {
		n := nextRun(t, second, cr.CronID)
		return n != nil && n.Equal(clockAt(3, 5))
	}, 10*time.Second, time.Millisecond, "the restarted scheduler fires the missed cron")
	n, err := second.FireDueCrons(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing more is due before 03:05")
	require.Len(t, threadRuns(t, second, th.ThreadID), 1, "one firing for the 36 missed")

	clock.Set(clockAt(3, 5))
	require.Eventually(t, func() bool {
		n := nextRun(t, second, cr.CronID)
		return n != nil && n.Equal(clockAt(3, 10))
	}, 10*time.Second, time.Millisecond, "then the schedule goes on")
	require.Len(t, threadRuns(t, second, th.ThreadID), 2)
}

// TestCronExactlyOnceSchedulers: two started Servers on one SQLite file
// (two processes), each with its own scheduler ticking every millisecond,
// so their ticks race for every firing: each firing of a thread cron and of
// a stateless cron still creates exactly one run.
func TestCronExactlyOnceSchedulers(t *testing.T) {
	t.Parallel()
	clock := newTestClock(clockAt(0, 0))
	path := filepath.Join(t.TempDir(), "gs.db")
	open := func() *graphserver.Server {
		db, err := sqlite.Open(path)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, db.Close()) })
		srv, err := graphserver.New(graphserver.Options{
			Storage: db, Graphs: map[string]graphserver.Graph{"echo": graphtest.Echo{}}, Now: clock.Now, CronInterval: time.Millisecond,
		})
		require.NoError(t, err)
		require.NoError(t, srv.Start(t.Context()))
		t.Cleanup(func() { require.NoError(t, srv.Close(context.WithoutCancel(t.Context()))) })
		return srv
	}
	a, b := open(), open()
	ctx := t.Context()
	th, err := a.CreateThread(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	onThread, err := a.CreateCron(ctx, th.ThreadID, echoCron("* * * * *"))
	require.NoError(t, err)
	stateless := echoCron("* * * * *")
	stateless.Metadata = graphserver.Metadata{"cron": "sched-once"}
	stateless.OnRunCompleted = graphserver.OnCompletionKeep
	sl, err := b.CreateCron(ctx, "", stateless)
	require.NoError(t, err)

	const minutes = 3
	for m := 1; m <= minutes; m++ {
		clock.Set(clockAt(0, m))
		want := clockAt(0, m+1)
		require.Eventually(t, func() bool {
			x, y := nextRun(t, b, onThread.CronID), nextRun(t, a, sl.CronID)
			return x != nil && y != nil && x.Equal(want) && y.Equal(want)
		}, 10*time.Second, time.Millisecond, "minute %d fired", m)
		// The run is created in the transaction that claims the firing: it
		// is there as soon as next_run_date moved.
		runs, err := b.ListRuns(ctx, th.ThreadID, graphserver.RunSearch{Limit: 100})
		require.NoError(t, err)
		require.Len(t, runs, m, "minute %d: one run of the thread cron per firing", m)
		require.Equal(t, m, countMarked(t, a, "sched-once"), "minute %d: one thread of the stateless cron per firing", m)
	}
	require.Len(t, threadRuns(t, a, th.ThreadID), minutes)
}

// TestCronScheduler: a started Server fires due crons by itself, every
// CronInterval; Close stops the scheduler, and FireDueCrons is refused
// after it.
func TestCronScheduler(t *testing.T) {
	t.Parallel()
	clock := newTestClock(clockAt(0, 0))
	srv, err := graphserver.New(graphserver.Options{
		Storage:      openDB(t),
		Graphs:       map[string]graphserver.Graph{"echo": graphtest.Echo{}},
		Now:          clock.Now,
		CronInterval: 5 * time.Millisecond,
	})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, srv.Start(ctx))
	th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	cr, err := srv.CreateCron(ctx, th.ThreadID, echoCron("@hourly"))
	require.NoError(t, err)

	clock.Set(clockAt(1, 0))
	require.Eventually(t, func() bool {
		n := nextRun(t, srv, cr.CronID)
		return n != nil && n.Equal(clockAt(2, 0))
	}, 10*time.Second, 5*time.Millisecond, "the scheduler fires the due cron")
	require.Len(t, threadRuns(t, srv, th.ThreadID), 1)

	require.NoError(t, srv.Close(context.WithoutCancel(ctx)))
	_, err = srv.FireDueCrons(ctx)
	requireCode(t, err, graphserver.EUNAVAILABLE)
}

// TestCronCRUD covers creation checks, update, delete, search (filters,
// sort, select, pages) and count.
func TestCronCRUD(t *testing.T) {
	t.Parallel()
	clock := newTestClock(clockAt(0, 0))
	srv := cronServer(t, "", clock)
	ctx := t.Context()
	th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)

	t.Run("CreateErrors", func(t *testing.T) {
		for name, tc := range map[string]struct {
			thread string
			mod    func(c *graphserver.CronCreate)
			code   string
		}{
			"NoAssistant":       {"", func(c *graphserver.CronCreate) { c.AssistantID = "" }, graphserver.EINVALID},
			"UnknownAssistant":  {"", func(c *graphserver.CronCreate) { c.AssistantID = "nope" }, graphserver.ENOTFOUND},
			"MissingAssistant":  {"", func(c *graphserver.CronCreate) { c.AssistantID = "00000000-0000-4000-8000-000000000001" }, graphserver.ENOTFOUND},
			"BadThread":         {"x", func(c *graphserver.CronCreate) {}, graphserver.EINVALID},
			"MissingThread":     {"00000000-0000-4000-8000-000000000002", func(c *graphserver.CronCreate) {}, graphserver.ENOTFOUND},
			"BadOnRunCompleted": {"", func(c *graphserver.CronCreate) { c.OnRunCompleted = "archive" }, graphserver.EINVALID},
			"BadMultitask":      {th.ThreadID, func(c *graphserver.CronCreate) { c.MultitaskStrategy = "first" }, graphserver.EINVALID},
			"BadDurability":     {"", func(c *graphserver.CronCreate) { c.Durability = "forever" }, graphserver.EINVALID},
			"BadStreamMode":     {"", func(c *graphserver.CronCreate) { c.StreamMode = graphserver.StreamModes{"x"} }, graphserver.EINVALID},
			"ConfigAndContext": {"", func(c *graphserver.CronCreate) {
				c.Config = graphserver.Object{"configurable": map[string]any{"a": 1}}
				c.Context = graphserver.Object{"b": 2}
			}, graphserver.EBADREQUEST},
		} {
			t.Run(name, func(t *testing.T) {
				c := echoCron("@hourly")
				tc.mod(&c)
				_, err := srv.CreateCron(ctx, tc.thread, c)
				requireCode(t, err, tc.code)
			})
		}
		n, err := srv.CountCrons(ctx, graphserver.CronSearch{})
		require.NoError(t, err)
		require.Zero(t, n)
	})

	t.Run("WireShape", func(t *testing.T) {
		c := echoCron("@daily")
		c.Context = graphserver.Object{"user": "ann"}
		cr, err := srv.CreateCron(ctx, "", c)
		require.NoError(t, err)
		b, err := json.Marshal(cr)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		require.Nil(t, m["thread_id"])
		require.Nil(t, m["end_time"])
		require.Nil(t, m["timezone"])
		require.Nil(t, m["user_id"])
		require.NotContains(t, m, "now")
		require.Equal(t, "delete", m["on_run_completed"])
		require.Equal(t, true, m["enabled"])
		require.Equal(t, map[string]any{}, m["metadata"])
		require.Equal(t, "2025-01-07T00:00:00Z", m["next_run_date"])
		require.Equal(t, map[string]any{"assistant_id": graphserver.SystemAssistantID("echo"), "input": map[string]any{"n": float64(1)},
			"context": map[string]any{"user": "ann", "cron_id": cr.CronID}}, m["payload"], "cron_id goes in the context when there is one")
		require.NoError(t, srv.DeleteCron(ctx, cr.CronID))
	})

	t.Run("Update", func(t *testing.T) {
		c := echoCron("@hourly")
		c.Metadata = graphserver.Metadata{"a": "1"}
		cr, err := srv.CreateCron(ctx, th.ThreadID, c)
		require.NoError(t, err)
		clock.Set(clockAt(0, 20))
		got, err := srv.UpdateCron(ctx, cr.CronID, graphserver.CronPatch{
			Schedule: ptr("0 */2 * * *"), Timezone: ptr("Europe/Paris"), Metadata: graphserver.Metadata{"b": "2"},
			Input: json.RawMessage(`{"n":2}`), InterruptBefore: graphserver.Breakpoints{"*"}, StreamResumable: ptr(true),
			Durability: ptr("exit"),
		})
		require.NoError(t, err)
		require.Equal(t, "0 */2 * * *", got.Schedule)
		require.Equal(t, "Europe/Paris", got.Timezone)
		require.Equal(t, clockAt(1, 0), *got.NextRunDate, "12:00 in Paris (UTC+1) is 11:00 UTC")
		require.Equal(t, graphserver.Metadata{"a": "1", "b": "2"}, got.Metadata)
		require.Equal(t, graphserver.Metadata{"a": "1", "b": "2"}, got.Payload.Metadata)
		require.JSONEq(t, `{"n":2}`, string(got.Payload.Input))
		require.Equal(t, graphserver.Breakpoints{"*"}, got.Payload.InterruptBefore)
		require.True(t, got.Payload.StreamResumable)
		require.Equal(t, "exit", got.Payload.Durability)
		require.Equal(t, cr.CronID, got.Payload.Config["configurable"].(map[string]any)["cron_id"])
		require.Equal(t, clockAt(0, 20), got.UpdatedAt)
		require.Equal(t, cr.CreatedAt, got.CreatedAt)

		// Replacing the config keeps the cron id; a context moves it there.
		got, err = srv.UpdateCron(ctx, cr.CronID, graphserver.CronPatch{Context: graphserver.Object{"k": "v"}})
		require.NoError(t, err)
		require.Equal(t, graphserver.Object{"k": "v", "cron_id": cr.CronID}, got.Payload.Context)
		require.Nil(t, got.Payload.Config, "the config only held the cron id")

		// A bad patch changes nothing.
		for _, p := range []graphserver.CronPatch{
			{Schedule: ptr("nope")}, {Timezone: ptr("Nowhere/Else")}, {Durability: ptr("x")},
			{StreamMode: graphserver.StreamModes{"nope"}}, {Config: graphserver.Object{"configurable": map[string]any{"a": 1}}},
		} {
			_, err := srv.UpdateCron(ctx, cr.CronID, p)
			require.Error(t, err)
		}
		again, err := srv.GetCron(ctx, cr.CronID)
		require.NoError(t, err)
		require.Equal(t, got, again)

		_, err = srv.UpdateCron(ctx, "x", graphserver.CronPatch{})
		requireCode(t, err, graphserver.EINVALID)
		_, err = srv.UpdateCron(ctx, "00000000-0000-4000-8000-000000000003", graphserver.CronPatch{})
		requireCode(t, err, graphserver.ENOTFOUND)
		require.NoError(t, srv.DeleteCron(ctx, cr.CronID))
		requireCode(t, srv.DeleteCron(ctx, cr.CronID), graphserver.ENOTFOUND)
		requireCode(t, srv.DeleteCron(ctx, "x"), graphserver.EINVALID)
		_, err = srv.GetCron(ctx, "x")
		requireCode(t, err, graphserver.EINVALID)
	})

	t.Run("Search", func(t *testing.T) {
		ids := make([]string, 0, 5)
		for i := range 5 {
			clock.Set(clockAt(1, i))
			c := echoCron("@hourly")
			c.Metadata = graphserver.Metadata{"group": "s", "i": i}
			thread := ""
			if i%2 == 0 {
				thread = th.ThreadID
			}
			if i == 4 {
				c.Enabled = ptr(false)
			}
			cr, err := srv.CreateCron(ctx, thread, c)
			require.NoError(t, err)
			ids = append(ids, cr.CronID)
		}
		mine := graphserver.Metadata{"group": "s"}
		page, err := srv.SearchCrons(ctx, graphserver.CronSearch{Metadata: mine, Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []string{ids[4], ids[3]}, []string{page.Items[0].CronID, page.Items[1].CronID}, "newest first")
		require.Equal(t, 2, *page.Next)
		require.Equal(t, 3, page.Total)
		page, err = srv.SearchCrons(ctx, graphserver.CronSearch{Metadata: mine, Limit: 2, Offset: 4, SortOrder: "DESC"})
		require.NoError(t, err)
		require.Len(t, page.Items, 1)
		require.Nil(t, page.Next)
		require.Equal(t, 5, page.Total)

		page, err = srv.SearchCrons(ctx, graphserver.CronSearch{Metadata: mine, ThreadID: th.ThreadID, SortBy: "created_at", SortOrder: "asc"})
		require.NoError(t, err)
		require.Equal(t, []string{ids[0], ids[2], ids[4]}, cronIDsOf(page.Items))
		page, err = srv.SearchCrons(ctx, graphserver.CronSearch{Metadata: mine, AssistantID: "echo", Enabled: ptr(false)})
		require.NoError(t, err)
		require.Equal(t, []string{ids[4]}, cronIDsOf(page.Items), "a graph id stands for its system assistant")

		page, err = srv.SearchCrons(ctx, graphserver.CronSearch{Metadata: graphserver.Metadata{"i": 1}, Select: []string{"cron_id", "now", "enabled"}})
		require.NoError(t, err)
		b, err := json.Marshal(page)
		require.NoError(t, err)
		require.JSONEq(t, fmt.Sprintf(`[{"cron_id":%q,"now":%q,"enabled":true}]`, ids[1], clock.Now().Format(time.RFC3339)), string(b))

		for q, want := range map[*graphserver.CronSearch]int{
			{Metadata: mine}:                            5,
			{Metadata: mine, ThreadID: th.ThreadID}:     3,
			{Metadata: mine, Enabled: ptr(true)}:        4,
			{Metadata: graphserver.Metadata{"i": 3}}:    1,
			{Metadata: mine, AssistantID: "echo"}:       5,
			{Metadata: mine, Limit: 1, SortBy: "bogus"}: 5, // count ignores paging and sort
		} {
			n, err := srv.CountCrons(ctx, *q)
			require.NoError(t, err)
			require.Equal(t, want, n, "%+v", *q)
		}

		for _, q := range []graphserver.CronSearch{
			{Limit: 1001}, {Offset: -1}, {SortBy: "schedule"}, {SortOrder: "up"}, {Select: []string{"kwargs"}},
			{ThreadID: "x"}, {AssistantID: "not-a-graph"},
		} {
			_, err := srv.SearchCrons(ctx, q)
			requireCode(t, err, graphserver.EINVALID)
		}
		_, err = srv.CountCrons(ctx, graphserver.CronSearch{ThreadID: "x"})
		requireCode(t, err, graphserver.EINVALID)
	})
}

func cronIDsOf(cs []*graphserver.Cron) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.CronID)
	}
	return out
}

// TestCronJSON: the request bodies decode as both SDKs send them: end_time
// with or without a zone; an explicit "end_time": null clears it on update,
// an absent one leaves it.
func TestCronJSON(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Time{
		`"2025-03-01T10:00:00Z"`:             time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC),
		`"2025-03-01T10:00:00.123456+01:00"`: time.Date(2025, 3, 1, 9, 0, 0, 123456000, time.UTC),
		`"2025-03-01T10:00:00.5"`:            time.Date(2025, 3, 1, 10, 0, 0, 500000000, time.UTC), // Python isoformat(), naive: UTC
		`"2025-03-01"`:                       time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC),
	} {
		var c graphserver.CronCreate
		require.NoError(t, json.Unmarshal([]byte(`{"schedule":"@daily","assistant_id":"a","input":{"x":1},"end_time":`+in+`}`), &c), in)
		require.Equal(t, want, *c.EndTime, in)
		require.Equal(t, "@daily", c.Schedule)
		require.Equal(t, "a", c.AssistantID, "run fields decode too")
		require.JSONEq(t, `{"x":1}`, string(c.Input))
	}
	var c graphserver.CronCreate
	err := json.Unmarshal([]byte(`{"schedule":"@daily","end_time":"tomorrow"}`), &c)
	requireCode(t, err, graphserver.EINVALID)

	var p graphserver.CronPatch
	require.NoError(t, json.Unmarshal([]byte(`{"end_time":null,"enabled":false}`), &p))
	require.True(t, p.ClearEndTime)
	require.Nil(t, p.EndTime)
	require.False(t, *p.Enabled)
	p = graphserver.CronPatch{}
	require.NoError(t, json.Unmarshal([]byte(`{"schedule":"@daily"}`), &p))
	require.False(t, p.ClearEndTime)
	require.Nil(t, p.EndTime)
	p = graphserver.CronPatch{}
	require.NoError(t, json.Unmarshal([]byte(`{"end_time":"2025-03-01T10:00:00Z"}`), &p))
	require.False(t, p.ClearEndTime)
	require.Equal(t, time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC), *p.EndTime)
}

func ptr[T any](v T) *T { return &v }
