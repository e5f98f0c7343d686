package storagetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// cronOpts overrides cron fixture fields; zero fields keep the defaults.
type cronOpts struct {
	ID             string
	AssistantID    string // default "a1"
	ThreadID       string // default none: a stateless cron
	Metadata       graphserver.Metadata
	Schedule       string // default "*/5 * * * *"
	Timezone       string
	OnRunCompleted string
	EndTime        *time.Time
	NextRunDate    *time.Time // default at(60)
	Disabled       bool
	CreatedAt      time.Time // default t0; UpdatedAt is the same
}

func newCron(o cronOpts) *graphserver.Cron {
	c := &graphserver.Cron{
		CronID: o.ID, AssistantID: o.AssistantID, ThreadID: o.ThreadID, Metadata: o.Metadata,
		Schedule: o.Schedule, Timezone: o.Timezone, OnRunCompleted: o.OnRunCompleted, EndTime: o.EndTime,
		NextRunDate: o.NextRunDate, Enabled: !o.Disabled, CreatedAt: o.CreatedAt, UpdatedAt: o.CreatedAt,
		Payload: graphserver.RunCreate{AssistantID: o.AssistantID, Input: json.RawMessage(`{"x":1}`)},
	}
	if c.AssistantID == "" {
		c.AssistantID, c.Payload.AssistantID = "a1", "a1"
	}
	if c.Schedule == "" {
		c.Schedule = "*/5 * * * *"
	}
	if c.NextRunDate == nil {
		c.NextRunDate = ptr(at(60))
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt, c.UpdatedAt = t0, t0
	}
	if c.Metadata == nil {
		c.Metadata = graphserver.Metadata{}
	}
	return c
}

// createCron inserts a cron and returns what the storage returned.
func createCron(t *testing.T, st driver.CronStorage, o cronOpts) *graphserver.Cron {
	t.Helper()
	out, err := st.CreateCron(t.Context(), newCron(o), nil)
	require.NoError(t, err)
	return out
}

// cronIDs returns the cron ids in order.
func cronIDs(cs []*graphserver.Cron) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.CronID)
	}
	return out
}

func exerciseCrons(t *testing.T, open func(t *testing.T) driver.Storage) {
	type bundle struct {
		st driver.Storage
	}
	// setup opens a storage with assistants a1 and a2, and threads t1
	// (owner ann) and t2 (owner bob).
	setup := func(t *testing.T) *bundle {
		t.Helper()
		st := open(t)
		createAssistant(t, st, assistantOpts{ID: "a1"})
		createAssistant(t, st, assistantOpts{ID: "a2"})
		createThread(t, st, threadOpts{ID: "t1", Metadata: graphserver.Metadata{"owner": "ann"}})
		createThread(t, st, threadOpts{ID: "t2", Metadata: graphserver.Metadata{"owner": "bob"}})
		return &bundle{st: st}
	}
	getCron := func(t *testing.T, b *bundle, id string) *graphserver.Cron {
		t.Helper()
		c, err := b.st.GetCron(t.Context(), id, nil, nil)
		require.NoError(t, err)
		return c
	}
	countCrons := func(t *testing.T, b *bundle, s graphserver.CronSearch) int {
		t.Helper()
		n, err := b.st.CountCrons(t.Context(), &s)
		require.NoError(t, err)
		return n
	}

	t.Run("CreateGet", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		end := at(3600)
		c := newCron(cronOpts{ID: "c1", ThreadID: "t1", Metadata: graphserver.Metadata{"k": "v"}, Schedule: "0 9 * * 1-5",
			Timezone: "Europe/Paris", EndTime: &end})
		c.UserID = "ann"
		c.Payload = graphserver.RunCreate{
			AssistantID: "a1", Input: json.RawMessage(`{"messages":[{"role":"user","content":"hi"}]}`),
			Metadata:        graphserver.Metadata{"run": "meta"},
			Config:          graphserver.Object{"configurable": map[string]any{"cron_id": "c1", "n": float64(2)}},
			Context:         graphserver.Object{"c": true},
			InterruptBefore: graphserver.Breakpoints{"*"}, InterruptAfter: graphserver.Breakpoints{"a", "b"},
			StreamMode: graphserver.StreamModes{"values", "updates"}, StreamSubgraphs: true, StreamResumable: true,
			Webhook: "https://example.com/hook", MultitaskStrategy: graphserver.MultitaskInterrupt, Durability: "sync",
		}
		created, err := b.st.CreateCron(t.Context(), c, nil)
		require.NoError(t, err)
		require.Equal(t, c, created)
		require.Equal(t, c, getCron(t, b, "c1"))

		stateless := createCron(t, b.st, cronOpts{ID: "c2", OnRunCompleted: graphserver.OnCompletionKeep, Disabled: true})
		got := getCron(t, b, "c2")
		require.Equal(t, stateless, got)
		require.Empty(t, got.ThreadID)
		require.Nil(t, got.EndTime)
		require.False(t, got.Enabled)
		require.Equal(t, graphserver.OnCompletionKeep, got.OnRunCompleted)

		_, err = b.st.GetCron(t.Context(), "missing", nil, nil)
		requireCode(t, err, graphserver.ENOTFOUND)
	})

	t.Run("CreateErrors", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createCron(t, b.st, cronOpts{ID: "c1"})
		_, err := b.st.CreateCron(t.Context(), newCron(cronOpts{ID: "c1"}), nil)
		requireCode(t, err, graphserver.ECONFLICT)
		_, err = b.st.CreateCron(t.Context(), newCron(cronOpts{ID: "c2", AssistantID: "missing"}), nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.CreateCron(t.Context(), newCron(cronOpts{ID: "c3", ThreadID: "missing"}), nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.CreateCron(t.Context(), newCron(cronOpts{ID: "c4", ThreadID: "t2"}), graphserver.Filter{"owner": "ann"})
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.CreateCron(t.Context(), newCron(cronOpts{ID: "c5", ThreadID: "t1"}), graphserver.Filter{"owner": "ann"})
		require.NoError(t, err)
		require.Equal(t, 2, countCrons(t, b, graphserver.CronSearch{}), "failed creates insert nothing")
	})

	t.Run("AccessFilters", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createCron(t, b.st, cronOpts{ID: "c1", ThreadID: "t1", Metadata: graphserver.Metadata{"team": "x", "tags": []any{"a", "b"}}})
		createCron(t, b.st, cronOpts{ID: "c2", Metadata: graphserver.Metadata{"team": "x"}})
		ctx := t.Context()
		for _, f := range []graphserver.Filter{{"team": "x"}, {"team": map[string]any{"$eq": "x"}}, {"tags": map[string]any{"$contains": "a"}}} {
			_, err := b.st.GetCron(ctx, "c1", f, nil)
			require.NoError(t, err, "filter %v", f)
		}
		_, err := b.st.GetCron(ctx, "c1", graphserver.Filter{"team": "y"}, nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.GetCron(ctx, "c1", nil, graphserver.Filter{"owner": "ann"})
		require.NoError(t, err)
		_, err = b.st.GetCron(ctx, "c1", nil, graphserver.Filter{"owner": "bob"})
		requireCode(t, err, graphserver.ENOTFOUND) // a thread cron is hidden with its thread
		_, err = b.st.GetCron(ctx, "c2", nil, graphserver.Filter{"owner": "bob"})
		require.NoError(t, err, "a thread filter does not hide stateless crons")
		_, err = b.st.GetCron(ctx, "c1", graphserver.Filter{"team": "x"}, graphserver.Filter{"owner": map[string]any{"$eq": "bob"}})
		requireCode(t, err, graphserver.ENOTFOUND)

		_, err = b.st.UpdateCron(ctx, "c1", &driver.CronUpdate{Schedule: ptr("@daily"), UpdatedAt: at(5)}, nil, graphserver.Filter{"owner": "bob"})
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.UpdateCron(ctx, "c1", &driver.CronUpdate{Schedule: ptr("@daily"), UpdatedAt: at(5)}, graphserver.Filter{"team": "y"}, nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		require.Equal(t, "*/5 * * * *", getCron(t, b, "c1").Schedule, "a hidden cron is not updated")
		requireCode(t, b.st.DeleteCron(ctx, "c1", nil, graphserver.Filter{"owner": "bob"}), graphserver.ENOTFOUND)
		requireCode(t, b.st.DeleteCron(ctx, "c1", graphserver.Filter{"team": "y"}, nil), graphserver.ENOTFOUND)
		getCron(t, b, "c1")
	})

	t.Run("Update", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		end := at(7200)
		createCron(t, b.st, cronOpts{ID: "c1", Metadata: graphserver.Metadata{"a": "1", "b": "2"}, EndTime: &end, OnRunCompleted: "delete"})
		ctx := t.Context()

		// An empty update only bumps updated_at.
		before := getCron(t, b, "c1")
		got, err := b.st.UpdateCron(ctx, "c1", &driver.CronUpdate{UpdatedAt: at(1)}, nil, nil)
		require.NoError(t, err)
		want := *before
		want.UpdatedAt = at(1)
		require.Equal(t, &want, got)

		payload := graphserver.RunCreate{AssistantID: "a1", Input: json.RawMessage(`{"y":2}`), StreamMode: graphserver.StreamModes{"updates"}}
		next := at(900)
		got, err = b.st.UpdateCron(ctx, "c1", &driver.CronUpdate{
			Schedule: ptr("@hourly"), Timezone: ptr("America/New_York"), EndTime: ptr(at(9000)), Enabled: ptr(false),
			OnRunCompleted: ptr("keep"), Payload: &payload, Metadata: graphserver.Metadata{"b": "3", "c": "4"},
			NextRunDate: &next, UpdatedAt: at(2),
		}, nil, nil)
		require.NoError(t, err)
		want.Schedule, want.Timezone, want.EndTime, want.Enabled = "@hourly", "America/New_York", ptr(at(9000)), false
		want.OnRunCompleted, want.Payload, want.NextRunDate, want.UpdatedAt = "keep", payload, &next, at(2)
		want.Metadata = graphserver.Metadata{"a": "1", "b": "3", "c": "4"}
		require.Equal(t, &want, got)
		require.Equal(t, &want, getCron(t, b, "c1"))

		got, err = b.st.UpdateCron(ctx, "c1", &driver.CronUpdate{ClearEndTime: true, ClearNextRunDate: true,
			Timezone: ptr(""), UpdatedAt: at(3)}, nil, nil)
		require.NoError(t, err)
		require.Nil(t, got.EndTime)
		require.Nil(t, got.NextRunDate)
		require.Empty(t, got.Timezone)
		require.Equal(t, "@hourly", got.Schedule, "unset fields stay")

		_, err = b.st.UpdateCron(ctx, "missing", &driver.CronUpdate{UpdatedAt: at(3)}, nil, nil)
		requireCode(t, err, graphserver.ENOTFOUND)
	})

	t.Run("Delete", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createCron(t, b.st, cronOpts{ID: "c1", ThreadID: "t1"})
		createCron(t, b.st, cronOpts{ID: "c2"})
		require.NoError(t, b.st.DeleteCron(t.Context(), "c1", nil, nil))
		_, err := b.st.GetCron(t.Context(), "c1", nil, nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		requireCode(t, b.st.DeleteCron(t.Context(), "c1", nil, nil), graphserver.ENOTFOUND)
		getCron(t, b, "c2")
		_, err = b.st.GetThread(t.Context(), "t1", nil)
		require.NoError(t, err, "deleting a cron keeps its thread")
	})

	t.Run("DeletedWithThreadAndAssistant", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		createCron(t, b.st, cronOpts{ID: "c1", ThreadID: "t1"})
		createCron(t, b.st, cronOpts{ID: "c2", ThreadID: "t2"})
		createCron(t, b.st, cronOpts{ID: "c3", AssistantID: "a2"})
		createCron(t, b.st, cronOpts{ID: "c4", AssistantID: "a2", ThreadID: "t2"})
		createCron(t, b.st, cronOpts{ID: "c5"})
		require.NoError(t, b.st.DeleteThread(ctx, "t1", nil))
		require.NoError(t, b.st.DeleteAssistant(ctx, "a2", false, nil))
		all, err := b.st.SearchCrons(ctx, &graphserver.CronSearch{SortBy: "cron_id", SortOrder: "asc"})
		require.NoError(t, err)
		require.Equal(t, []string{"c2", "c5"}, cronIDs(all))
		n, err := b.st.PruneThreads(ctx, []string{"t2"}, graphserver.PruneDelete, nil)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Equal(t, 1, countCrons(t, b, graphserver.CronSearch{}))
	})

	t.Run("SearchAndCount", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		createCron(t, b.st, cronOpts{ID: "c1", ThreadID: "t1", Metadata: graphserver.Metadata{"team": "x", "n": float64(1)}, CreatedAt: at(1)})
		createCron(t, b.st, cronOpts{ID: "c2", ThreadID: "t2", Metadata: graphserver.Metadata{"team": "x"}, CreatedAt: at(2), Disabled: true})
		createCron(t, b.st, cronOpts{ID: "c3", AssistantID: "a2", Metadata: graphserver.Metadata{"team": "y"}, CreatedAt: at(3)})
		createCron(t, b.st, cronOpts{ID: "c4", CreatedAt: at(4)})
		for name, tc := range map[string]struct {
			s    graphserver.CronSearch
			want []string
		}{
			"All":          {graphserver.CronSearch{}, []string{"c4", "c3", "c2", "c1"}},
			"Assistant":    {graphserver.CronSearch{AssistantID: "a2"}, []string{"c3"}},
			"Thread":       {graphserver.CronSearch{ThreadID: "t2"}, []string{"c2"}},
			"Enabled":      {graphserver.CronSearch{Enabled: ptr(true)}, []string{"c4", "c3", "c1"}},
			"Disabled":     {graphserver.CronSearch{Enabled: ptr(false)}, []string{"c2"}},
			"Metadata":     {graphserver.CronSearch{Metadata: graphserver.Metadata{"team": "x"}}, []string{"c2", "c1"}},
			"MetadataNum":  {graphserver.CronSearch{Metadata: graphserver.Metadata{"n": 1}}, []string{"c1"}},
			"Filter":       {graphserver.CronSearch{Filter: graphserver.Filter{"team": "y"}}, []string{"c3"}},
			"ThreadFilter": {graphserver.CronSearch{ThreadFilter: graphserver.Filter{"owner": "ann"}}, []string{"c4", "c3", "c1"}},
			"Combined":     {graphserver.CronSearch{Metadata: graphserver.Metadata{"team": "x"}, ThreadFilter: graphserver.Filter{"owner": "bob"}}, []string{"c2"}},
			"Nothing":      {graphserver.CronSearch{AssistantID: "a1", ThreadID: "missing"}, []string{}},
		} {
			got, err := b.st.SearchCrons(ctx, &tc.s)
			require.NoError(t, err, name)
			require.Equal(t, tc.want, cronIDs(got), name)
			require.Equal(t, len(tc.want), countCrons(t, b, tc.s), name)
		}

		// Paging returns limit+1 rows so the caller can tell more exist.
		got, err := b.st.SearchCrons(ctx, &graphserver.CronSearch{Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []string{"c4", "c3", "c2"}, cronIDs(got))
		got, err = b.st.SearchCrons(ctx, &graphserver.CronSearch{Limit: 2, Offset: 2})
		require.NoError(t, err)
		require.Equal(t, []string{"c2", "c1"}, cronIDs(got))
		require.Equal(t, 4, countCrons(t, b, graphserver.CronSearch{Limit: 1, Offset: 3}), "count ignores paging")
	})

	t.Run("Sort", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		// c1: thread t2, no end, next at(30); c2: stateless, end at(50),
		// next at(10); c3: thread t1, end at(40), no next.
		createCron(t, b.st, cronOpts{ID: "c1", AssistantID: "a2", ThreadID: "t2", NextRunDate: ptr(at(30)), CreatedAt: at(2)})
		createCron(t, b.st, cronOpts{ID: "c2", EndTime: ptr(at(50)), NextRunDate: ptr(at(10)), CreatedAt: at(3)})
		c3 := newCron(cronOpts{ID: "c3", ThreadID: "t1", EndTime: ptr(at(40)), CreatedAt: at(1)})
		c3.NextRunDate = nil
		_, err := b.st.CreateCron(ctx, c3, nil)
		require.NoError(t, err)
		_, err = b.st.UpdateCron(ctx, "c3", &driver.CronUpdate{UpdatedAt: at(9)}, nil, nil)
		require.NoError(t, err)
		for _, tc := range []struct {
			by, order string
			want      []string
		}{
			{"cron_id", "asc", []string{"c1", "c2", "c3"}},
			{"cron_id", "desc", []string{"c3", "c2", "c1"}},
			{"assistant_id", "asc", []string{"c2", "c3", "c1"}},
			{"thread_id", "asc", []string{"c2", "c3", "c1"}},
			{"thread_id", "desc", []string{"c1", "c3", "c2"}},
			{"next_run_date", "asc", []string{"c3", "c2", "c1"}},
			{"next_run_date", "desc", []string{"c1", "c2", "c3"}},
			{"end_time", "asc", []string{"c1", "c3", "c2"}},
			{"end_time", "desc", []string{"c2", "c3", "c1"}},
			{"created_at", "asc", []string{"c3", "c1", "c2"}},
			{"", "", []string{"c2", "c1", "c3"}},
			{"updated_at", "desc", []string{"c3", "c2", "c1"}},
		} {
			got, err := b.st.SearchCrons(ctx, &graphserver.CronSearch{SortBy: tc.by, SortOrder: tc.order})
			require.NoError(t, err)
			require.Equal(t, tc.want, cronIDs(got), "%s %s", tc.by, tc.order)
		}
	})

	t.Run("Due", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		createCron(t, b.st, cronOpts{ID: "c1", NextRunDate: ptr(at(20))})
		createCron(t, b.st, cronOpts{ID: "c2", NextRunDate: ptr(at(10))})
		createCron(t, b.st, cronOpts{ID: "c3", NextRunDate: ptr(at(10)), ThreadID: "t1"})
		createCron(t, b.st, cronOpts{ID: "c4", NextRunDate: ptr(at(10)), Disabled: true})
		createCron(t, b.st, cronOpts{ID: "c5", NextRunDate: ptr(at(10)), EndTime: ptr(at(15))})
		createCron(t, b.st, cronOpts{ID: "c6", NextRunDate: ptr(at(10)), EndTime: ptr(at(30))})
		createCron(t, b.st, cronOpts{ID: "c7", NextRunDate: ptr(at(40))})
		c8 := newCron(cronOpts{ID: "c8"})
		c8.NextRunDate = nil
		_, err := b.st.CreateCron(ctx, c8, nil)
		require.NoError(t, err)

		due := func(now time.Time, limit int) []string {
			t.Helper()
			cs, err := b.st.DueCrons(ctx, now, limit)
			require.NoError(t, err)
			return cronIDs(cs)
		}
		require.Empty(t, due(at(9), 10))
		require.Equal(t, []string{"c2", "c3", "c5", "c6"}, due(at(10), 10), "next_run_date at now is due")
		require.Equal(t, []string{"c2", "c3", "c5", "c6"}, due(at(15), 10), "end_time at now still fires")
		require.Equal(t, []string{"c2", "c3", "c6", "c1"}, due(at(25), 10), "past end_time: not due")
		require.Equal(t, []string{"c2", "c3"}, due(at(25), 2))
		got, err := b.st.DueCrons(ctx, at(10), 1)
		require.NoError(t, err)
		require.Equal(t, getCron(t, b, "c2"), got[0], "due crons are whole")
	})

	t.Run("FireCron", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		createCron(t, b.st, cronOpts{ID: "c1", NextRunDate: ptr(at(10))})
		createCron(t, b.st, cronOpts{ID: "c2", NextRunDate: ptr(at(10)), Disabled: true})
		fire := func(f driver.CronFiring) bool {
			t.Helper()
			ok, err := b.st.FireCron(ctx, &f)
			require.NoError(t, err)
			return ok
		}
		require.False(t, fire(driver.CronFiring{CronID: "c1", Due: at(9), Next: ptr(at(20))}), "not due at that time")
		require.True(t, fire(driver.CronFiring{CronID: "c1", Due: at(10), Next: ptr(at(20))}))
		require.Equal(t, at(20), *getCron(t, b, "c1").NextRunDate)
		require.False(t, fire(driver.CronFiring{CronID: "c1", Due: at(10), Next: ptr(at(30))}), "a firing is claimed once")
		require.Equal(t, at(20), *getCron(t, b, "c1").NextRunDate)
		require.Equal(t, t0, getCron(t, b, "c1").UpdatedAt, "firing is not an update")
		require.True(t, fire(driver.CronFiring{CronID: "c1", Due: at(20)}))
		require.Nil(t, getCron(t, b, "c1").NextRunDate, "a nil next ends the cron")
		require.Empty(t, func() []*graphserver.Cron { cs, _ := b.st.DueCrons(ctx, at(1000), 10); return cs }())
		require.False(t, fire(driver.CronFiring{CronID: "c2", Due: at(10), Next: ptr(at(20))}), "a disabled cron does not fire")
		require.False(t, fire(driver.CronFiring{CronID: "missing", Due: at(10)}))
	})

	t.Run("CreateRunClaimsFiring", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rs := needRules(t, b.st)
		ctx := t.Context()
		createCron(t, b.st, cronOpts{ID: "c1", ThreadID: "t1", NextRunDate: ptr(at(10))})
		createCron(t, b.st, cronOpts{ID: "c2", NextRunDate: ptr(at(10))})
		firing := &driver.CronFiring{CronID: "c1", Due: at(10), Next: ptr(at(20))}
		_, err := rs.CreateRun(ctx, newRun(runOpts{ID: "r1", ThreadID: "t1"}), &driver.RunInsert{Cron: firing})
		require.NoError(t, err)
		require.Equal(t, at(20), *getCron(t, b, "c1").NextRunDate)
		_, err = rs.CreateRun(ctx, newRun(runOpts{ID: "r2", ThreadID: "t1"}), &driver.RunInsert{Cron: firing})
		requireCode(t, err, graphserver.ECONFLICT)
		_, err = rs.GetRun(ctx, "", "r2", nil)
		requireCode(t, err, graphserver.ENOTFOUND)

		// A run the thread refuses (multitask reject) leaves the firing
		// unclaimed: the whole insertion rolls back.
		firing = &driver.CronFiring{CronID: "c1", Due: at(20), Next: ptr(at(30))}
		_, err = rs.CreateRun(ctx, newRun(runOpts{ID: "r3", ThreadID: "t1", Strategy: graphserver.MultitaskReject}), &driver.RunInsert{Cron: firing})
		requireCode(t, err, graphserver.ECONFLICT)
		require.Equal(t, at(20), *getCron(t, b, "c1").NextRunDate)

		// A stateless firing claimed elsewhere creates no thread.
		ok, err := b.st.FireCron(ctx, &driver.CronFiring{CronID: "c2", Due: at(10), Next: ptr(at(20))})
		require.NoError(t, err)
		require.True(t, ok)
		_, err = rs.CreateRun(ctx, newRun(runOpts{ID: "r4", ThreadID: "t9"}), &driver.RunInsert{
			Cron:         &driver.CronFiring{CronID: "c2", Due: at(10), Next: ptr(at(20))},
			CreateThread: &graphserver.Thread{ThreadID: "t9", CreatedAt: t0, Status: graphserver.ThreadBusy}})
		requireCode(t, err, graphserver.ECONFLICT)
		_, err = b.st.GetThread(ctx, "t9", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
	})

	t.Run("ConcurrentFiringsCreateOneRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rs := needRules(t, b.st)
		ctx := t.Context()
		createCron(t, b.st, cronOpts{ID: "c1", NextRunDate: ptr(at(10))})
		const n = 16
		type result struct {
			fired bool // a run was created, or FireCron claimed the firing
			err   error
		}
		var wg sync.WaitGroup
		results := make(chan result, 2*n)
		for i := range n {
			wg.Go(func() {
				_, err := rs.CreateRun(ctx, newRun(runOpts{ID: fmt.Sprintf("r%02d", i), ThreadID: fmt.Sprintf("t%02d", 10+i)}), &driver.RunInsert{
					Cron:         &driver.CronFiring{CronID: "c1", Due: at(10), Next: ptr(at(20))},
					CreateThread: &graphserver.Thread{ThreadID: fmt.Sprintf("t%02d", 10+i), CreatedAt: t0, Status: graphserver.ThreadBusy}})
				if graphserver.ErrorCode(err) == graphserver.ECONFLICT {
					err = nil
				} else if err == nil {
					results <- result{fired: true}
					return
				}
				results <- result{err: err}
			})
			wg.Go(func() {
				ok, err := b.st.FireCron(ctx, &driver.CronFiring{CronID: "c1", Due: at(10), Next: ptr(at(20))})
				results <- result{fired: ok, err: err}
			})
		}
		wg.Wait()
		close(results)
		fired := 0
		for r := range results {
			require.NoError(t, r.err)
			if r.fired {
				fired++
			}
		}
		require.Equal(t, 1, fired, "a firing is claimed exactly once")
		runs := 0
		for i := range n {
			if _, err := rs.GetRun(ctx, "", fmt.Sprintf("r%02d", i), nil); err == nil {
				runs++
			}
		}
		threads, err := b.st.CountThreads(ctx, &graphserver.ThreadSearch{})
		require.NoError(t, err)
		require.Equal(t, 2+runs, threads, "losers create no thread")
		require.Equal(t, at(20), *getCron(t, b, "c1").NextRunDate)
	})
}
