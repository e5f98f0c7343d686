package graphserver_test

import (
	"context"
	"encoding/json"
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

// newServer returns a started Server on a fresh temp-file SQLite database,
// with graph "agent" registered and a clock that advances 1ms per reading
// (so created_at orders are strict).
func newServer(t *testing.T) *graphserver.Server {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	var mu sync.Mutex
	now := time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC)
	srv, err := graphserver.New(graphserver.Options{
		Storage: db,
		Graphs:  map[string]graphserver.Graph{"agent": graphtest.Nop{}, "other": graphtest.Nop{}},
		Now: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			now = now.Add(time.Millisecond)
			return now
		},
	})
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, srv.Close(context.WithoutCancel(t.Context()))) })
	return srv
}

// requireCode fails unless err is a graphserver error with the given code.
func requireCode(t *testing.T, err error, code string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, graphserver.ErrorCode(err), "error: %v", err)
}

const agentID = "fe096781-5601-53d2-b2f6-0d3403f7e9ca" // uuid5 of "agent"

func TestSystemAssistantID(t *testing.T) {
	t.Parallel()
	require.Equal(t, agentID, graphserver.SystemAssistantID("agent"))
}

func TestServer_Assistants(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	t.Run("SystemAssistantByGraphID", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t)
		a, err := srv.GetAssistant(ctx, "agent")
		require.NoError(t, err)
		require.Equal(t, agentID, a.AssistantID)
		require.Equal(t, "agent", a.Name)
		require.Equal(t, graphserver.Metadata{"created_by": "system"}, a.Metadata)
		b, err := srv.GetAssistant(ctx, strings.ToUpper(agentID))
		require.NoError(t, err)
		require.Equal(t, a.AssistantID, b.AssistantID)
	})

	t.Run("BadIDs", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t)
		_, err := srv.GetAssistant(ctx, "not-a-graph")
		requireCode(t, err, graphserver.EINVALID)
		_, err = srv.GetAssistant(ctx, "00000000-0000-0000-0000-000000000001")
		requireCode(t, err, graphserver.ENOTFOUND)
		requireCode(t, srv.DeleteAssistant(ctx, "x", false), graphserver.EINVALID)
		_, err = srv.UpdateAssistant(ctx, "x", graphserver.AssistantPatch{})
		requireCode(t, err, graphserver.EINVALID)
		_, err = srv.ListAssistantVersions(ctx, "x", graphserver.AssistantVersionSearch{})
		requireCode(t, err, graphserver.EINVALID)
		_, err = srv.SetLatestAssistantVersion(ctx, "x", 1)
		requireCode(t, err, graphserver.EINVALID)
	})

	t.Run("CreateDefaults", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t)
		a, err := srv.CreateAssistant(ctx, graphserver.AssistantCreate{GraphID: "agent"})
		require.NoError(t, err)
		require.Equal(t, "Untitled", a.Name)
		require.Equal(t, 1, a.Version)
		require.Nil(t, a.Description)
		b, err := json.Marshal(a)
		require.NoError(t, err)
		require.Contains(t, string(b), `"metadata":{}`)
		require.Contains(t, string(b), `"config":{}`)
		require.Contains(t, string(b), `"description":null`)
	})

	t.Run("CreateErrors", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t)
		id := "6f1d5e4a-0000-4000-8000-000000000001"
		for name, tc := range map[string]struct {
			in   graphserver.AssistantCreate
			code string
		}{
			"NoGraph":         {graphserver.AssistantCreate{}, graphserver.EINVALID},
			"UnknownGraph":    {graphserver.AssistantCreate{GraphID: "nope"}, graphserver.ENOTFOUND},
			"BadID":           {graphserver.AssistantCreate{GraphID: "agent", AssistantID: "abc"}, graphserver.EINVALID},
			"BadIfExists":     {graphserver.AssistantCreate{GraphID: "agent", AssistantID: id, IfExists: "replace"}, graphserver.EINVALID},
			"ConfigAndCtx":    {graphserver.AssistantCreate{GraphID: "agent", Config: graphserver.Object{"configurable": map[string]any{"a": 1}}, Context: graphserver.Object{"b": 2}}, graphserver.EBADREQUEST},
			"ConfigAndCtxObj": {graphserver.AssistantCreate{GraphID: "agent", Config: graphserver.Object{"configurable": graphserver.Object{"a": 1}}, Context: graphserver.Object{"b": 2}}, graphserver.EBADREQUEST},
			"SystemConflict":  {graphserver.AssistantCreate{GraphID: "agent", AssistantID: agentID}, graphserver.ECONFLICT},
		} {
			_, err := srv.CreateAssistant(ctx, tc.in)
			require.Equal(t, tc.code, graphserver.ErrorCode(err), name)
		}
		// Nothing was written by the failed creates.
		n, err := srv.CountAssistants(ctx, graphserver.AssistantSearch{})
		require.NoError(t, err)
		require.Equal(t, 2, n)

		a, err := srv.CreateAssistant(ctx, graphserver.AssistantCreate{GraphID: "agent", AssistantID: strings.ToUpper(id), Name: "one"})
		require.NoError(t, err)
		require.Equal(t, id, a.AssistantID)
		_, err = srv.CreateAssistant(ctx, graphserver.AssistantCreate{GraphID: "agent", AssistantID: id})
		requireCode(t, err, graphserver.ECONFLICT)
		same, err := srv.CreateAssistant(ctx, graphserver.AssistantCreate{GraphID: "agent", AssistantID: id, IfExists: "do_nothing", Name: "two"})
		require.NoError(t, err)
		require.Equal(t, "one", same.Name)
	})

	t.Run("UpdateVersionsLatest", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t)
		a, err := srv.CreateAssistant(ctx, graphserver.AssistantCreate{GraphID: "agent", Name: "v1", Metadata: graphserver.Metadata{"a": "1"}})
		require.NoError(t, err)
		u, err := srv.UpdateAssistant(ctx, a.AssistantID, graphserver.AssistantPatch{})
		require.NoError(t, err)
		require.Equal(t, 2, u.Version, "an empty patch still creates a version")
		name := "v3"
		u, err = srv.UpdateAssistant(ctx, a.AssistantID, graphserver.AssistantPatch{Name: &name, Metadata: graphserver.Metadata{"b": "2"}})
		require.NoError(t, err)
		require.Equal(t, 3, u.Version)
		require.Equal(t, graphserver.Metadata{"a": "1", "b": "2"}, u.Metadata)

		other := "nope"
		_, err = srv.UpdateAssistant(ctx, a.AssistantID, graphserver.AssistantPatch{GraphID: &other})
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = srv.UpdateAssistant(ctx, "00000000-0000-0000-0000-000000000001", graphserver.AssistantPatch{})
		requireCode(t, err, graphserver.ENOTFOUND)

		vs, err := srv.ListAssistantVersions(ctx, a.AssistantID, graphserver.AssistantVersionSearch{})
		require.NoError(t, err)
		require.Len(t, vs, 3)
		require.Equal(t, []int{3, 2, 1}, []int{vs[0].Version, vs[1].Version, vs[2].Version})
		vs, err = srv.ListAssistantVersions(ctx, a.AssistantID, graphserver.AssistantVersionSearch{Limit: 1, Offset: 1})
		require.NoError(t, err)
		require.Len(t, vs, 1)
		require.Equal(t, 2, vs[0].Version)
		_, err = srv.ListAssistantVersions(ctx, a.AssistantID, graphserver.AssistantVersionSearch{Limit: 1001})
		requireCode(t, err, graphserver.EINVALID)
		_, err = srv.ListAssistantVersions(ctx, "00000000-0000-0000-0000-000000000001", graphserver.AssistantVersionSearch{})
		requireCode(t, err, graphserver.ENOTFOUND)

		back, err := srv.SetLatestAssistantVersion(ctx, a.AssistantID, 1)
		require.NoError(t, err)
		require.Equal(t, 1, back.Version)
		require.Equal(t, "v1", back.Name)
		require.Equal(t, graphserver.Metadata{"a": "1"}, back.Metadata)
		_, err = srv.SetLatestAssistantVersion(ctx, a.AssistantID, 0)
		requireCode(t, err, graphserver.EINVALID)
		_, err = srv.SetLatestAssistantVersion(ctx, a.AssistantID, 99)
		requireCode(t, err, graphserver.ENOTFOUND)
	})

	t.Run("Delete", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t)
		a, err := srv.CreateAssistant(ctx, graphserver.AssistantCreate{GraphID: "agent"})
		require.NoError(t, err)
		require.NoError(t, srv.DeleteAssistant(ctx, a.AssistantID, false))
		_, err = srv.GetAssistant(ctx, a.AssistantID)
		requireCode(t, err, graphserver.ENOTFOUND)
		requireCode(t, srv.DeleteAssistant(ctx, a.AssistantID, false), graphserver.ENOTFOUND)
	})

	t.Run("SearchPagingSelect", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t)
		for _, n := range []string{"c", "a", "b"} {
			_, err := srv.CreateAssistant(ctx, graphserver.AssistantCreate{GraphID: "other", Name: n, Metadata: graphserver.Metadata{"k": "v"}})
			require.NoError(t, err)
		}
		q := graphserver.AssistantSearch{Metadata: graphserver.Metadata{"k": "v"}, Limit: 2, SortBy: "name", SortOrder: "ASC"}
		p, err := srv.SearchAssistants(ctx, q)
		require.NoError(t, err)
		require.Len(t, p.Items, 2)
		require.Equal(t, "a", p.Items[0].Name)
		require.Equal(t, "b", p.Items[1].Name)
		require.NotNil(t, p.Next)
		require.Equal(t, 2, *p.Next)
		require.Equal(t, 3, p.Total)

		q.Offset = 2
		p, err = srv.SearchAssistants(ctx, q)
		require.NoError(t, err)
		require.Len(t, p.Items, 1)
		require.Nil(t, p.Next)
		require.Equal(t, 3, p.Total)

		// Default order is created_at desc: the last created first.
		p, err = srv.SearchAssistants(ctx, graphserver.AssistantSearch{Metadata: graphserver.Metadata{"k": "v"}, Select: []string{"name", "version"}})
		require.NoError(t, err)
		b, err := json.Marshal(p)
		require.NoError(t, err)
		require.JSONEq(t, `[{"name":"b","version":1},{"name":"a","version":1},{"name":"c","version":1}]`, string(b))

		n, err := srv.CountAssistants(ctx, graphserver.AssistantSearch{GraphID: "other", Name: "B"})
		require.NoError(t, err)
		require.Equal(t, 1, n)

		for name, bad := range map[string]graphserver.AssistantSearch{
			"Limit0":    {Limit: -1},
			"Limit1001": {Limit: 1001},
			"Offset":    {Offset: -1},
			"SortBy":    {SortBy: "color"},
			"SortOrder": {SortOrder: "up"},
			"Select":    {Select: []string{"name", "secret"}},
		} {
			_, err := srv.SearchAssistants(ctx, bad)
			require.Equal(t, graphserver.EINVALID, graphserver.ErrorCode(err), name)
		}
	})
}

func TestServer_Threads(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	t.Run("CreateDefaults", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t)
		th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{GraphID: "agent", Metadata: graphserver.Metadata{"u": "ann"}})
		require.NoError(t, err)
		require.Len(t, th.ThreadID, 36)
		require.Equal(t, graphserver.ThreadIdle, th.Status)
		require.Equal(t, graphserver.Metadata{"u": "ann", "graph_id": "agent"}, th.Metadata)
		b, err := json.Marshal(th)
		require.NoError(t, err)
		var wire map[string]any
		require.NoError(t, json.Unmarshal(b, &wire))
		require.Nil(t, wire["values"])
		require.Contains(t, wire, "values")
		require.Equal(t, map[string]any{}, wire["interrupts"])
		require.NotContains(t, wire, "ttl")
	})

	t.Run("CreateErrors", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t)
		id := "6f1d5e4a-0000-4000-8000-000000000002"
		for name, tc := range map[string]struct {
			in   graphserver.ThreadCreate
			code string
		}{
			"BadID":       {graphserver.ThreadCreate{ThreadID: "nope"}, graphserver.EINVALID},
			"BadIfExists": {graphserver.ThreadCreate{ThreadID: id, IfExists: "x"}, graphserver.EINVALID},
			"BadTTL":      {graphserver.ThreadCreate{ThreadID: id, TTL: &graphserver.ThreadTTL{Minutes: -1}}, graphserver.EINVALID},
			"BadStrategy": {graphserver.ThreadCreate{ThreadID: id, TTL: &graphserver.ThreadTTL{Minutes: 1, Strategy: "x"}}, graphserver.EINVALID},
			"Supersteps":  {graphserver.ThreadCreate{ThreadID: id, Supersteps: []graphserver.Superstep{{}}}, graphserver.EBADREQUEST},
		} {
			_, err := srv.CreateThread(ctx, tc.in)
			require.Equal(t, tc.code, graphserver.ErrorCode(err), name)
		}
		_, err := srv.GetThread(ctx, id)
		requireCode(t, err, graphserver.ENOTFOUND) // nothing written

		_, err = srv.CreateThread(ctx, graphserver.ThreadCreate{ThreadID: id, Metadata: graphserver.Metadata{"n": 1.0}})
		require.NoError(t, err)
		_, err = srv.CreateThread(ctx, graphserver.ThreadCreate{ThreadID: id})
		requireCode(t, err, graphserver.ECONFLICT)
		same, err := srv.CreateThread(ctx, graphserver.ThreadCreate{ThreadID: id, IfExists: "do_nothing", Metadata: graphserver.Metadata{"n": 2.0}})
		require.NoError(t, err)
		require.Equal(t, 1.0, same.Metadata["n"])
	})

	t.Run("TTLOnlyWithInclude", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t)
		th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{TTL: &graphserver.ThreadTTL{Minutes: 30}})
		require.NoError(t, err)
		require.Nil(t, th.TTL)
		got, err := srv.GetThread(ctx, th.ThreadID)
		require.NoError(t, err)
		require.Nil(t, got.TTL)
		got, err = srv.GetThread(ctx, th.ThreadID, graphserver.ThreadIncludeTTL)
		require.NoError(t, err)
		require.NotNil(t, got.TTL)
		require.Equal(t, "delete", got.TTL.Strategy)
		require.Equal(t, 30.0, got.TTL.TTLMinutes)
		require.NotNil(t, got.TTL.ExpiresAt)
		require.Equal(t, th.CreatedAt.Add(30*time.Minute), *got.TTL.ExpiresAt)
	})

	t.Run("GetUpdateDelete", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t)
		_, err := srv.GetThread(ctx, "not-a-uuid")
		requireCode(t, err, graphserver.EINVALID)
		th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{Metadata: graphserver.Metadata{"a": "1"}})
		require.NoError(t, err)
		u, err := srv.UpdateThread(ctx, th.ThreadID, graphserver.ThreadPatch{Metadata: graphserver.Metadata{"b": "2"}})
		require.NoError(t, err)
		require.Equal(t, graphserver.Metadata{"a": "1", "b": "2"}, u.Metadata)
		require.True(t, u.UpdatedAt.After(th.UpdatedAt))
		_, err = srv.UpdateThread(ctx, th.ThreadID, graphserver.ThreadPatch{TTL: &graphserver.ThreadTTL{Minutes: 0}})
		requireCode(t, err, graphserver.EINVALID)
		_, err = srv.UpdateThread(ctx, "00000000-0000-0000-0000-000000000009", graphserver.ThreadPatch{})
		requireCode(t, err, graphserver.ENOTFOUND)

		requireCode(t, srv.DeleteThread(ctx, "bad"), graphserver.EINVALID)
		require.NoError(t, srv.DeleteThread(ctx, th.ThreadID))
		requireCode(t, srv.DeleteThread(ctx, th.ThreadID), graphserver.ENOTFOUND)
	})

	t.Run("SearchCount", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t)
		var ids []string
		for i := range 3 {
			th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{Metadata: graphserver.Metadata{"i": float64(i), "m": "x"}})
			require.NoError(t, err)
			ids = append(ids, th.ThreadID)
		}
		p, err := srv.SearchThreads(ctx, graphserver.ThreadSearch{Metadata: graphserver.Metadata{"m": "x"}, Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []string{ids[2], ids[1]}, []string{p.Items[0].ThreadID, p.Items[1].ThreadID}, "default sort is created_at desc")
		require.Equal(t, 2, *p.Next)
		require.Equal(t, 3, p.Total)

		p, err = srv.SearchThreads(ctx, graphserver.ThreadSearch{IDs: []string{strings.ToUpper(ids[0])}, SortBy: "state_updated_at", Select: []string{"thread_id"}})
		require.NoError(t, err)
		b, err := json.Marshal(p)
		require.NoError(t, err)
		require.JSONEq(t, `[{"thread_id":"`+ids[0]+`"}]`, string(b))

		p, err = srv.SearchThreads(ctx, graphserver.ThreadSearch{IDs: []string{}})
		require.NoError(t, err)
		require.Len(t, p.Items, 3, "an empty ids list filters nothing")

		n, err := srv.CountThreads(ctx, graphserver.ThreadSearch{Status: "idle", Metadata: graphserver.Metadata{"m": "x"}})
		require.NoError(t, err)
		require.Equal(t, 3, n)

		for name, bad := range map[string]graphserver.ThreadSearch{
			"IDs":       {IDs: []string{"nope"}},
			"Status":    {Status: "sleeping"},
			"Values":    {Values: json.RawMessage(`[1]`)},
			"Limit":     {Limit: 5000},
			"SortBy":    {SortBy: "metadata"},
			"SortOrder": {SortOrder: "sideways"},
			"Select":    {Select: []string{"ttl"}},
		} {
			_, err := srv.SearchThreads(ctx, bad)
			require.Equal(t, graphserver.EINVALID, graphserver.ErrorCode(err), name)
		}
		_, err = srv.CountThreads(ctx, graphserver.ThreadSearch{Status: "sleeping"})
		requireCode(t, err, graphserver.EINVALID)
	})

	t.Run("CopyPrune", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t)
		src, err := srv.CreateThread(ctx, graphserver.ThreadCreate{Metadata: graphserver.Metadata{"copy": "me"}})
		require.NoError(t, err)
		cp, err := srv.CopyThread(ctx, src.ThreadID)
		require.NoError(t, err)
		require.NotEqual(t, src.ThreadID, cp.ThreadID)
		require.Equal(t, "me", cp.Metadata["copy"])
		_, err = srv.CopyThread(ctx, "nope")
		requireCode(t, err, graphserver.EINVALID)
		_, err = srv.CopyThread(ctx, "00000000-0000-0000-0000-000000000009")
		requireCode(t, err, graphserver.ECONFLICT)

		_, err = srv.PruneThreads(ctx, graphserver.ThreadPrune{})
		requireCode(t, err, graphserver.EINVALID)
		_, err = srv.PruneThreads(ctx, graphserver.ThreadPrune{ThreadIDs: []string{src.ThreadID, "bad"}})
		requireCode(t, err, graphserver.EINVALID)
		_, err = srv.PruneThreads(ctx, graphserver.ThreadPrune{ThreadIDs: []string{src.ThreadID}, Strategy: "all"})
		requireCode(t, err, graphserver.EINVALID)
		_, err = srv.GetThread(ctx, src.ThreadID)
		require.NoError(t, err, "failed prunes delete nothing")

		n, err := srv.PruneThreads(ctx, graphserver.ThreadPrune{ThreadIDs: []string{src.ThreadID, cp.ThreadID, "00000000-0000-0000-0000-000000000009"}})
		require.NoError(t, err)
		require.Equal(t, 2, n)
		_, err = srv.GetThread(ctx, cp.ThreadID)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = srv.CopyThread(ctx, src.ThreadID)
		requireCode(t, err, graphserver.ECONFLICT)
	})
}

func TestServer_SweepThreads(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	var mu sync.Mutex
	now := time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC)
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	srv, err := graphserver.New(graphserver.Options{Storage: db, Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}})
	require.NoError(t, err)
	ctx := t.Context()

	gone, err := srv.CreateThread(ctx, graphserver.ThreadCreate{TTL: &graphserver.ThreadTTL{Minutes: 1}})
	require.NoError(t, err)
	kept, err := srv.CreateThread(ctx, graphserver.ThreadCreate{TTL: &graphserver.ThreadTTL{Minutes: 5}})
	require.NoError(t, err)
	plain, err := srv.CreateThread(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)

	n, err := srv.SweepThreads(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing has expired yet")

	advance(2 * time.Minute)
	n, err = srv.SweepThreads(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = srv.GetThread(ctx, gone.ThreadID)
	requireCode(t, err, graphserver.ENOTFOUND)

	// Activity moves the expiry: a patch at minute 2 keeps the 5-minute thread until minute 7.
	_, err = srv.UpdateThread(ctx, kept.ThreadID, graphserver.ThreadPatch{Metadata: graphserver.Metadata{"touched": true}})
	require.NoError(t, err)
	advance(4 * time.Minute)
	n, err = srv.SweepThreads(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	advance(2 * time.Minute)
	n, err = srv.SweepThreads(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = srv.GetThread(ctx, plain.ThreadID)
	require.NoError(t, err, "a thread without TTL never expires")
}

// optimizingDB is a sqlite.DB that reports each Optimize call.
type optimizingDB struct {
	*sqlite.DB
	calls chan struct{}
}

func (d optimizingDB) Optimize(ctx context.Context) error {
	select {
	case d.calls <- struct{}{}:
	default:
	}
	return d.DB.Optimize(ctx)
}

func TestServer_OptimizesStorage(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	st := optimizingDB{DB: db, calls: make(chan struct{}, 1)}
	srv, err := graphserver.New(graphserver.Options{Storage: st, OptimizeInterval: time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	select {
	case <-st.calls:
	case <-time.After(10 * time.Second):
		t.Fatal("Optimize was never called")
	}
	require.NoError(t, srv.Close(t.Context()))
}
