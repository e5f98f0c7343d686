package graphserver_test

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/graphtest"
	"github.com/graphserver/graphserver/sqlite"
)

// newAuthServer returns a started Server with auth on a fresh database.
func newAuthServer(t *testing.T, auth *graphserver.Auth, now ...func() time.Time) *graphserver.Server {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	opts := graphserver.Options{
		Storage:      db,
		Graphs:       map[string]graphserver.Graph{"agent": graphtest.Echo{}},
		Auth:         auth,
		CronInterval: -1,
	}
	if len(now) > 0 {
		opts.Now = now[0]
	}
	srv, err := graphserver.New(opts)
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, srv.Close(context.WithoutCancel(t.Context()))) })
	return srv
}

func asUser(ctx context.Context, id string, perms ...string) context.Context {
	return graphserver.NewContextWithUser(ctx, &graphserver.User{Identity: id, Permissions: perms, IsAuthenticated: true})
}

var noAuthenticator = graphserver.AuthenticatorFunc(func(context.Context, *graphserver.AuthRequest) (*graphserver.User, error) {
	return nil, errors.New("no credentials here")
})

// TestAuthHandlerSelection reproduces LangGraph's handler resolution
// (langgraph_sdk.auth Auth._get_handler, langgraph-api auth/custom): for an
// event only the most specific handler runs — resource:action, then
// resource, then *:action, then the global one.
func TestAuthHandlerSelection(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var ran []string
	record := func(name string) graphserver.AuthHandler {
		return func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
			mu.Lock()
			defer mu.Unlock()
			ran = append(ran, name+" "+ev.Resource+":"+ev.Action)
			return nil, nil
		}
	}
	auth := graphserver.NewAuth(noAuthenticator).
		On("*", "*", record("global")).
		On("*", "read", record("any-read")).
		On("threads", "*", record("threads")).
		On("threads", "read", record("threads-read"))
	srv := newAuthServer(t, auth)
	ctx := asUser(t.Context(), "ann")
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := ran
		ran = nil
		return out
	}

	th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	require.Equal(t, []string{"threads threads:create"}, take())
	_, err = srv.GetThread(ctx, th.ThreadID)
	require.NoError(t, err)
	require.Equal(t, []string{"threads-read threads:read"}, take())
	_, err = srv.GetAssistant(ctx, "agent")
	require.NoError(t, err)
	require.Equal(t, []string{"any-read assistants:read"}, take())
	_, err = srv.CountAssistants(ctx, graphserver.AssistantSearch{})
	require.NoError(t, err)
	require.Equal(t, []string{"global assistants:search"}, take())
	_, err = srv.GetItem(ctx, []string{"a"}, "k", nil)
	require.NoError(t, err)
	require.Equal(t, []string{"global store:get"}, take())
	_, err = srv.CopyThread(ctx, th.ThreadID)
	require.NoError(t, err)
	require.Equal(t, []string{"threads-read threads:read", "threads threads:create"}, take(), "a copy reads the source and creates the copy")
	_, err = srv.WaitRun(ctx, "", graphserver.RunCreate{AssistantID: "agent"})
	require.NoError(t, err)
	require.Equal(t, []string{"threads threads:create_run"}, take(), "a stateless run's thread goes through create_run")
}

// TestAuthDecisions covers what a handler's answer does: an error refuses
// with its code, status and headers; a panic is an internal error; a
// modified value is what gets stored; no user in the context is refused.
func TestAuthDecisions(t *testing.T) {
	t.Parallel()
	auth := graphserver.NewAuth(noAuthenticator).
		On("assistants", "create", func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
			if !ev.User.HasPermission("write") {
				return nil, graphserver.Forbidden("")
			}
			ev.SetMetadata("owner", ev.User.Identity)
			return nil, nil
		}).
		On("assistants", "delete", func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
			return nil, graphserver.AuthError(418, "I'm a teapot", map[string]string{"X-Why": "tea"})
		}).
		On("threads", "*", func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
			panic("handler bug")
		}).
		On("store", "*", func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
			return nil, errors.New("plain error")
		}).
		On("crons", "*", func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
			return graphserver.Filter{"owner": graphserver.Object{"$regex": "x"}}, nil
		})
	srv := newAuthServer(t, auth)

	_, err := srv.CreateAssistant(asUser(t.Context(), "ann"), graphserver.AssistantCreate{GraphID: "agent"})
	requireCode(t, err, graphserver.EFORBIDDEN)
	require.Equal(t, "Forbidden", graphserver.ErrorMessage(err))
	a, err := srv.CreateAssistant(asUser(t.Context(), "ann", "write"), graphserver.AssistantCreate{GraphID: "agent", Metadata: graphserver.Metadata{"x": 1}})
	require.NoError(t, err)
	require.Equal(t, graphserver.Metadata{"x": 1.0, "owner": "ann"}, a.Metadata)

	err = srv.DeleteAssistant(asUser(t.Context(), "ann"), a.AssistantID, false)
	var e *graphserver.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, 418, e.Status)
	require.Equal(t, map[string]string{"X-Why": "tea"}, e.Headers)

	_, err = srv.CreateThread(asUser(t.Context(), "ann"), graphserver.ThreadCreate{})
	requireCode(t, err, graphserver.EINTERNAL)
	_, err = srv.GetItem(asUser(t.Context(), "ann"), []string{"a"}, "k", nil)
	requireCode(t, err, graphserver.EINTERNAL)
	_, err = srv.CountCrons(asUser(t.Context(), "ann"), graphserver.CronSearch{})
	requireCode(t, err, graphserver.EINTERNAL)

	_, err = srv.GetAssistant(t.Context(), a.AssistantID)
	requireCode(t, err, graphserver.EUNAUTHORIZED)

	_, err = srv.Authenticate(t.Context(), &graphserver.AuthRequest{})
	requireCode(t, err, graphserver.EUNAUTHORIZED)
	require.EqualError(t, errors.Unwrap(err), "no credentials here", "the cause is kept")
}

// TestAuthStoreNamespaces checks the store's namespace filter
// ({"namespace": {"$contains": identity}}) on every store method.
func TestAuthStoreNamespaces(t *testing.T) {
	t.Parallel()
	auth := graphserver.NewAuth(noAuthenticator).
		On("store", "*", func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
			return graphserver.Filter{"namespace": graphserver.Object{"$contains": ev.User.Identity}}, nil
		})
	srv := newAuthServer(t, auth)
	ann, bob := asUser(t.Context(), "ann"), asUser(t.Context(), "bob")
	require.NoError(t, srv.PutItem(ann, graphserver.ItemPut{Namespace: []string{"docs", "ann"}, Key: "k", Value: graphserver.Object{"v": 1}}))
	requireCode(t, srv.PutItem(bob, graphserver.ItemPut{Namespace: []string{"docs", "ann"}, Key: "k", Value: graphserver.Object{"v": 2}}), graphserver.EFORBIDDEN)
	it, err := srv.GetItem(bob, []string{"docs", "ann"}, "k", nil)
	require.NoError(t, err)
	require.Nil(t, it, "hidden: as missing")
	require.NoError(t, srv.DeleteItem(bob, []string{"docs", "ann"}, "k"))
	it, err = srv.GetItem(ann, []string{"docs", "ann"}, "k", nil)
	require.NoError(t, err)
	require.Equal(t, graphserver.Object{"v": 1.0}, it.Value, "bob's delete did nothing")
	found, err := srv.SearchItems(bob, graphserver.ItemSearchRequest{NamespacePrefix: []string{"docs"}})
	require.NoError(t, err)
	require.Empty(t, found)
	found, err = srv.SearchItems(ann, graphserver.ItemSearchRequest{NamespacePrefix: []string{"docs"}})
	require.NoError(t, err)
	require.Len(t, found, 1)
	ns, err := srv.ListNamespaces(bob, graphserver.NamespaceList{})
	require.NoError(t, err)
	require.Empty(t, ns)
	ns, err = srv.ListNamespaces(ann, graphserver.NamespaceList{})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"docs", "ann"}}, ns)
}

// TestAuthCronRunsAsOwner checks that a cron's firing creates its run as
// the cron's owner: the threads:create_run handler sees the owner, and the
// run's configurable carries the owner's identity.
func TestAuthCronRunsAsOwner(t *testing.T) {
	t.Parallel()
	owner := func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
		ev.SetMetadata("owner", ev.User.Identity)
		return graphserver.Filter{"owner": ev.User.Identity}, nil
	}
	auth := graphserver.NewAuth(noAuthenticator).On("threads", "*", owner).On("crons", "*", owner)
	clock := newTestClock(day)
	srv := newAuthServer(t, auth, clock.Now)
	ann := asUser(t.Context(), "ann")
	th, err := srv.CreateThread(ann, graphserver.ThreadCreate{})
	require.NoError(t, err)
	c, err := srv.CreateCron(ann, th.ThreadID, graphserver.CronCreate{RunCreate: graphserver.RunCreate{AssistantID: "agent"}, Schedule: "* * * * *"})
	require.NoError(t, err)
	require.Equal(t, "ann", c.UserID)
	require.Equal(t, "ann", c.Metadata["owner"])
	clock.Set(day.Add(2 * time.Minute))
	n, err := srv.FireDueCrons(t.Context()) // no user in ctx: the cron's owner acts
	require.NoError(t, err)
	require.Equal(t, 1, n)
	runs, err := srv.ListRuns(ann, th.ThreadID, graphserver.RunSearch{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	cfg := runs[0].Kwargs.Config["configurable"].(map[string]any)
	require.Equal(t, "ann", cfg["langgraph_auth_user_id"])
	require.Equal(t, "ann", runs[0].Metadata["owner"], "threads:create_run ran as ann")
	_, err = srv.ListRuns(asUser(t.Context(), "bob"), th.ThreadID, graphserver.RunSearch{})
	requireCode(t, err, graphserver.ENOTFOUND)
}

// TestAuthSupersteps checks that creating a thread with supersteps is also
// a threads:update (wire contract §7.6): refused there, nothing is created.
func TestAuthSupersteps(t *testing.T) {
	t.Parallel()
	auth := graphserver.NewAuth(noAuthenticator).
		On("threads", "update", func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
			if ev.Value.(*graphserver.ThreadUpdate).Action == "supersteps" {
				return nil, graphserver.Forbidden("No supersteps")
			}
			return nil, nil
		})
	srv := newAuthServer(t, auth)
	ctx := asUser(t.Context(), "ann")
	id := "70000000-0000-4000-8000-00000000aaaa"
	_, err := srv.CreateThread(ctx, graphserver.ThreadCreate{ThreadID: id, GraphID: "agent",
		Supersteps: []graphserver.Superstep{{Updates: []graphserver.StateUpdate{{Values: []byte(`{"a": 1}`), AsNode: "agent"}}}}})
	requireCode(t, err, graphserver.EFORBIDDEN)
	_, err = srv.GetThread(ctx, id)
	requireCode(t, err, graphserver.ENOTFOUND)
	_, err = srv.CreateThread(ctx, graphserver.ThreadCreate{ThreadID: id})
	require.NoError(t, err, "without supersteps, no threads:update")
}

// TestAuthDeleteAssistantThreads checks that delete_threads deletes only
// the threads the caller may delete (wire contract §2.2: auth filters
// applied): another tenant's threads on the same assistant stay.
func TestAuthDeleteAssistantThreads(t *testing.T) {
	t.Parallel()
	owner := func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
		ev.SetMetadata("owner", ev.User.Identity)
		return graphserver.Filter{"owner": ev.User.Identity}, nil
	}
	srv := newAuthServer(t, graphserver.NewAuth(noAuthenticator).On("threads", "*", owner))
	ann, bob := asUser(t.Context(), "ann"), asUser(t.Context(), "bob")
	a, err := srv.CreateAssistant(ann, graphserver.AssistantCreate{GraphID: "agent"})
	require.NoError(t, err)
	var annThreads []string
	for range 3 {
		_, err := srv.WaitRun(ann, "", graphserver.RunCreate{AssistantID: a.AssistantID, OnCompletion: graphserver.OnCompletionKeep})
		require.NoError(t, err)
	}
	_, err = srv.WaitRun(bob, "", graphserver.RunCreate{AssistantID: a.AssistantID, OnCompletion: graphserver.OnCompletionKeep})
	require.NoError(t, err)
	page, err := srv.SearchThreads(ann, graphserver.ThreadSearch{})
	require.NoError(t, err)
	for _, th := range page.Items {
		annThreads = append(annThreads, th.ThreadID)
	}
	require.Len(t, annThreads, 3)

	require.NoError(t, srv.DeleteAssistant(ann, a.AssistantID, true))
	n, err := srv.CountThreads(ann, graphserver.ThreadSearch{})
	require.NoError(t, err)
	require.Zero(t, n, "ann's threads went with the assistant")
	n, err = srv.CountThreads(bob, graphserver.ThreadSearch{})
	require.NoError(t, err)
	require.Equal(t, 1, n, "bob's thread stays")
	_, err = srv.GetAssistant(ann, a.AssistantID)
	requireCode(t, err, graphserver.ENOTFOUND)
}

// TestAuthCopyStampsCopy checks that a thread copy is a threads:create of
// the copy (wire contract §7.6): the handler sees the metadata the copy
// gets, and what it stamps there is set on the copy, as on any thread it
// creates.
func TestAuthCopyStampsCopy(t *testing.T) {
	t.Parallel()
	var seen graphserver.Metadata
	auth := graphserver.NewAuth(noAuthenticator).
		On("threads", "create", func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
			v := ev.Value.(*graphserver.ThreadCreate)
			seen = maps.Clone(v.Metadata)
			if v.Metadata == nil {
				v.Metadata = graphserver.Metadata{}
			}
			v.Metadata["owner"] = ev.User.Identity
			v.Metadata["copies"] = "stamped"
			return nil, nil
		})
	srv := newAuthServer(t, auth)
	ann := asUser(t.Context(), "ann")
	src, err := srv.CreateThread(ann, graphserver.ThreadCreate{Metadata: graphserver.Metadata{"topic": "x"}})
	require.NoError(t, err)
	require.Equal(t, "stamped", src.Metadata["copies"])
	_, err = srv.UpdateThread(ann, src.ThreadID, graphserver.ThreadPatch{Metadata: graphserver.Metadata{"copies": "edited"}})
	require.NoError(t, err)

	cp, err := srv.CopyThread(ann, src.ThreadID)
	require.NoError(t, err)
	require.Equal(t, graphserver.Metadata{"topic": "x", "owner": "ann", "copies": "edited"}, seen,
		"the handler sees the source's metadata, which the copy gets")
	require.Equal(t, "stamped", cp.Metadata["copies"], "the stamp is on the returned copy")
	got, err := srv.GetThread(ann, cp.ThreadID)
	require.NoError(t, err)
	require.Equal(t, graphserver.Metadata{"topic": "x", "owner": "ann", "copies": "stamped"}, got.Metadata)
	src2, err := srv.GetThread(ann, src.ThreadID)
	require.NoError(t, err)
	require.Equal(t, "edited", src2.Metadata["copies"], "the source is left as it was")
}

// TestAuthStoreValueFilters checks store access filters on item values
// (langgraph-api merges them into the store filter): a delete of an item
// the filter hides does nothing, and namespaces are listed only through
// items the caller may read.
func TestAuthStoreValueFilters(t *testing.T) {
	t.Parallel()
	auth := graphserver.NewAuth(noAuthenticator).
		On("store", "*", func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
			if ev.Action == "put" {
				return nil, nil
			}
			return graphserver.Filter{"owner": ev.User.Identity}, nil
		})
	srv := newAuthServer(t, auth)
	ann, bob := asUser(t.Context(), "ann"), asUser(t.Context(), "bob")
	put := func(ns []string, key, owner string) {
		require.NoError(t, srv.PutItem(ann, graphserver.ItemPut{Namespace: ns, Key: key, Value: graphserver.Object{"owner": owner}}))
	}
	put([]string{"shared"}, "a", "ann")
	put([]string{"shared"}, "b", "bob")
	put([]string{"ann", "notes"}, "n", "ann")

	ns, err := srv.ListNamespaces(bob, graphserver.NamespaceList{})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"shared"}}, ns)
	ns, err = srv.ListNamespaces(ann, graphserver.NamespaceList{MaxDepth: 1})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"ann"}, {"shared"}}, ns)

	require.NoError(t, srv.DeleteItem(bob, []string{"shared"}, "a"), "hidden: as missing")
	it, err := srv.GetItem(ann, []string{"shared"}, "a", nil)
	require.NoError(t, err)
	require.NotNil(t, it, "bob's delete of ann's item did nothing")
	require.NoError(t, srv.DeleteItem(bob, []string{"shared"}, "b"))
	it, err = srv.GetItem(bob, []string{"shared"}, "b", nil)
	require.NoError(t, err)
	require.Nil(t, it, "bob deleted his own item")
	require.NoError(t, srv.DeleteItem(bob, []string{"nowhere"}, "x"), "a missing item is not an error")
}
