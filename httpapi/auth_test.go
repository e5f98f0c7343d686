package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/internal/graphtest"
	"github.com/graphserver/graphserver/sqlite"
)

// authKeys are the API keys of the matrix's users. ann has the "admin"
// permission, bob none.
var authKeys = map[string]*graphserver.User{
	"key-ann": {Identity: "ann", Permissions: []string{"admin"}, IsAuthenticated: true, Extra: graphserver.Object{"tenant": "t-ann"}},
	"key-bob": {Identity: "bob", IsAuthenticated: true},
}

// tenantAuth is the multi-tenant configuration the matrix runs under, in
// the shape of LangGraph's documented pattern: resources are stamped with
// their creator as owner and every event is narrowed to the caller's own;
// the store is partitioned by namespaces holding the identity.
func tenantAuth() *graphserver.Auth {
	authenticate := graphserver.AuthenticatorFunc(func(ctx context.Context, r *graphserver.AuthRequest) (*graphserver.User, error) {
		u, ok := authKeys[r.Header("x-api-key")]
		if !ok {
			return nil, graphserver.AuthError(http.StatusUnauthorized, "Invalid API key", map[string]string{"WWW-Authenticate": "ApiKey"})
		}
		return u, nil
	})
	owner := func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
		ev.SetMetadata("owner", ev.User.Identity)
		return graphserver.Filter{"owner": ev.User.Identity}, nil
	}
	return graphserver.NewAuth(authenticate).
		On("assistants", "*", owner).
		On("threads", "*", owner).
		On("crons", "*", owner).
		On("assistants", "delete", func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
			if !ev.User.HasPermission("admin") {
				return nil, graphserver.Forbidden("Admins only")
			}
			return graphserver.Filter{"owner": ev.User.Identity}, nil
		}).
		On("store", "*", func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
			req := ev.Value.(*graphserver.StoreRequest)
			if req.Key == "limited" {
				return nil, graphserver.AuthError(http.StatusTooManyRequests, "Slow down", map[string]string{"Retry-After": "7"})
			}
			if len(req.Namespace) > 0 && !slices.Contains(req.Namespace, ev.User.Identity) {
				return nil, graphserver.Forbidden("Not authorized")
			}
			return graphserver.Filter{"namespace": graphserver.Object{"$contains": ev.User.Identity}}, nil
		})
}

// authEnv is a server with tenantAuth over HTTP.
type authEnv struct {
	t     *testing.T
	srv   *graphserver.Server
	url   string
	block *graphtest.Blocking
}

func newAuthEnv(t *testing.T, auth *graphserver.Auth) *authEnv {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	block := graphtest.NewBlocking()
	srv, err := graphserver.New(graphserver.Options{
		Storage:      db,
		Graphs:       map[string]graphserver.Graph{"echo": graphtest.Echo{}, "block": block},
		Auth:         auth,
		CronInterval: -1,
	})
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	hs := httptest.NewServer(httpapi.New(srv, httpapi.Options{Truncate: db}))
	t.Cleanup(func() {
		block.Release()
		hs.Close()
		require.NoError(t, srv.Close(context.WithoutCancel(t.Context())))
	})
	return &authEnv{t: t, srv: srv, url: hs.URL, block: block}
}

// do sends a request with key as x-api-key ("" sends none) and returns the
// status, body and headers.
func (e *authEnv) do(key, method, path, body string) (int, string, http.Header) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(e.t.Context(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, e.url+path, rd)
	require.NoError(e.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return resp.StatusCode, string(b), resp.Header
}

// ok sends a request that must succeed (2xx) and decodes its JSON body
// into out (when non-nil).
func (e *authEnv) ok(key, method, path, body string, out any) {
	e.t.Helper()
	status, got, _ := e.do(key, method, path, body)
	require.Less(e.t, status, 300, "%s %s: %d %s", method, path, status, got)
	if out != nil {
		require.NoError(e.t, json.Unmarshal([]byte(got), out), got)
	}
}

// TestAuthMatrix walks every endpoint family as bob against ann's
// resources and proves that nothing of ann's can be read, written, found,
// counted, run, joined, cancelled or reached in the store; then that each
// user still works on their own.
func TestAuthMatrix(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, tenantAuth())
	const ann, bob = "key-ann", "key-bob"

	// ann's resources, made over HTTP.
	var asst graphserver.Assistant
	e.ok(ann, "POST", "/assistants", `{"graph_id": "echo", "metadata": {"team": "a"}}`, &asst)
	require.Equal(t, "ann", asst.Metadata["owner"], "assistants:create stamped the owner")
	var th, blocked graphserver.Thread
	e.ok(ann, "POST", "/threads", `{"metadata": {"team": "a"}}`, &th)
	require.Equal(t, "ann", th.Metadata["owner"])
	e.ok(ann, "POST", "/threads/"+th.ThreadID+"/runs/wait", `{"assistant_id": "echo", "input": {"secret": "ann-data"}}`, nil)
	var runs []graphserver.Run
	e.ok(ann, "GET", "/threads/"+th.ThreadID+"/runs", "", &runs)
	require.Len(t, runs, 1)
	run := runs[0]
	cfg := run.Kwargs.Config["configurable"].(map[string]any)
	require.Equal(t, "ann", cfg["langgraph_auth_user_id"], "the user reaches the graph")
	require.Equal(t, "ann", cfg["user_id"], "the identity is the default user_id")
	require.Equal(t, []any{"admin"}, cfg["langgraph_auth_permissions"])
	require.Equal(t, map[string]any{"identity": "ann", "display_name": "ann", "is_authenticated": true, "permissions": []any{"admin"}, "tenant": "t-ann"}, cfg["langgraph_auth_user"])

	e.ok(ann, "POST", "/threads", "", &blocked)
	var busy graphserver.Run
	e.ok(ann, "POST", "/threads/"+blocked.ThreadID+"/runs", `{"assistant_id": "block", "input": {"n": 1}}`, &busy)
	waitStarted(t, e.block, busy.RunID)
	var stateless graphserver.Run
	e.ok(ann, "POST", "/runs", `{"assistant_id": "block", "input": {"n": 2}}`, &stateless)
	waitStarted(t, e.block, stateless.RunID)
	e.ok(ann, "PUT", "/store/items", `{"namespace": ["ann", "notes"], "key": "k", "value": {"secret": "ann-note"}}`, nil)
	annCtx := graphserver.NewContextWithUser(t.Context(), authKeys[ann])
	var cron graphserver.Cron
	e.ok(ann, "POST", "/threads/"+th.ThreadID+"/runs/crons", `{"assistant_id": "echo", "schedule": "0 0 1 1 *", "metadata": {"team": "a"}}`, &cron)
	require.Equal(t, "ann", cron.UserID, "the creator is the cron's user_id")
	require.Equal(t, "ann", cron.Metadata["owner"])

	T, R, A := "/threads/"+th.ThreadID, "/runs/"+run.RunID, "/assistants/"+asst.AssistantID
	B, BR := "/threads/"+blocked.ThreadID, "/threads/"+blocked.ThreadID+"/runs/"+busy.RunID
	hidden := []struct{ method, path, body string }{
		// assistants
		{"GET", A, ""},
		{"PATCH", A, `{"metadata": {"owner": "bob"}}`},
		{"GET", A + "/graph", ""},
		{"GET", A + "/schemas", ""},
		{"GET", A + "/subgraphs", ""},
		{"POST", A + "/versions", `{}`},
		{"POST", A + "/latest", `{"version": 1}`},
		// threads
		{"GET", T, ""},
		{"PATCH", T, `{"metadata": {"owner": "bob"}}`},
		{"DELETE", T, ""},
		{"POST", T + "/copy", ""},
		// state and history
		{"GET", T + "/state", ""},
		{"POST", T + "/state", `{"values": {"secret": "bob"}}`},
		{"GET", T + "/history", ""},
		{"POST", T + "/history", `{}`},
		{"GET", T + "/stream", ""},
		// runs on a thread
		{"POST", T + "/runs", `{"assistant_id": "echo"}`},
		{"POST", T + "/runs/stream", `{"assistant_id": "echo"}`},
		{"POST", T + "/runs/wait", `{"assistant_id": "echo"}`},
		{"GET", T + "/runs", ""},
		{"GET", T + R, ""},
		{"DELETE", T + R, ""},
		{"GET", T + R + "/join", ""},
		{"GET", BR + "/join", ""},
		{"GET", BR + "/stream", ""},
		{"POST", BR + "/cancel", ""},
		{"GET", "/runs/" + busy.RunID + "/stream", ""},
		{"GET", "/runs/" + stateless.RunID + "/stream", ""},
		{"POST", "/runs/cancel", `{"thread_id": "` + blocked.ThreadID + `", "run_ids": ["` + busy.RunID + `"]}`},
		{"POST", "/runs/cancel", `{"status": "all"}`},
		{"POST", B + "/runs", `{"assistant_id": "echo", "multitask_strategy": "interrupt"}`},
		// crons
		{"POST", T + "/runs/crons", `{"assistant_id": "echo", "schedule": "0 0 1 1 *"}`},
		{"PATCH", "/runs/crons/" + cron.CronID, `{"schedule": "0 0 2 1 *"}`},
		{"DELETE", "/runs/crons/" + cron.CronID, ""},
	}
	for _, h := range hidden {
		status, body, _ := e.do(bob, h.method, h.path, h.body)
		require.Equal(t, http.StatusNotFound, status, "bob %s %s: %s", h.method, h.path, body)
		require.NotContains(t, body, "ann-data")
	}
	// A run created on ann's thread with if_not_exists create conflicts as
	// on any existing id; it creates nothing.
	status, body, _ := e.do(bob, "POST", T+"/runs", `{"assistant_id": "echo", "if_not_exists": "create"}`)
	require.Contains(t, []int{http.StatusNotFound, http.StatusConflict}, status, body)
	status, body, _ = e.do(bob, "POST", "/threads", `{"thread_id": "`+th.ThreadID+`"}`)
	require.Equal(t, http.StatusConflict, status, "creating over a hidden id conflicts: %s", body)
	status, body, _ = e.do(bob, "POST", "/threads", `{"thread_id": "`+th.ThreadID+`", "if_exists": "do_nothing"}`)
	require.Equal(t, http.StatusConflict, status, "do_nothing does not hand out a hidden thread: %s", body)
	status, body, _ = e.do(bob, "POST", "/assistants", `{"assistant_id": "`+asst.AssistantID+`", "graph_id": "echo"}`)
	require.Equal(t, http.StatusConflict, status, body)
	status, body, _ = e.do(bob, "DELETE", A, "")
	require.Equal(t, http.StatusForbidden, status, "the delete handler denies bob first: %s", body)
	require.JSONEq(t, `{"detail": "Admins only"}`, body)

	// searches and counts
	for _, path := range []string{"/assistants/search", "/threads/search", "/runs/crons/search"} {
		status, body, _ := e.do(bob, "POST", path, `{}`)
		require.Equal(t, http.StatusOK, status, body)
		require.JSONEq(t, `[]`, body, "bob finds nothing of ann's at %s", path)
	}
	for _, path := range []string{"/assistants/count", "/threads/count", "/runs/crons/count"} {
		status, body, _ := e.do(bob, "POST", path, `{}`)
		require.Equal(t, http.StatusOK, status, body)
		require.Equal(t, "0", strings.TrimSpace(body), path)
	}
	status, body, _ = e.do(ann, "POST", "/threads/count", `{}`)
	require.Equal(t, "2", strings.TrimSpace(body), "ann counts her threads; the stateless run's temporary one is not counted: %d", status)
	// ... but it is hers: she reads it by id, bob does not.
	status, body, _ = e.do(ann, "GET", "/threads/"+stateless.ThreadID, "")
	require.Equal(t, http.StatusOK, status, body)
	status, body, _ = e.do(bob, "GET", "/threads/"+stateless.ThreadID, "")
	require.Equal(t, http.StatusNotFound, status, body)
	// crons: GET has no route; in-process, as for the other methods
	bobCtx := graphserver.NewContextWithUser(t.Context(), authKeys[bob])
	_, err := e.srv.GetCron(bobCtx, cron.CronID)
	requireCode(t, err, graphserver.ENOTFOUND)
	status, body, _ = e.do(bob, "POST", "/runs/crons/search", `{"thread_id": "`+th.ThreadID+`"}`)
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `[]`, body)

	// store
	for _, h := range []struct{ method, path, body string }{
		{"GET", "/store/items?namespace=ann.notes&key=k", ""},
		{"PUT", "/store/items", `{"namespace": ["ann", "notes"], "key": "k", "value": {"secret": "bob"}}`},
		{"DELETE", "/store/items", `{"namespace": ["ann", "notes"], "key": "k"}`},
		{"POST", "/store/items/search", `{"namespace_prefix": ["ann"]}`},
		{"POST", "/store/namespaces", `{"prefix": ["ann"]}`},
	} {
		status, body, _ := e.do(bob, h.method, h.path, h.body)
		require.Equal(t, http.StatusForbidden, status, "bob %s %s: %s", h.method, h.path, body)
	}
	e.ok(bob, "PUT", "/store/items", `{"namespace": ["bob"], "key": "k", "value": {"mine": true}}`, nil)
	status, body, _ = e.do(bob, "POST", "/store/items/search", `{}`)
	require.Equal(t, http.StatusOK, status)
	require.NotContains(t, body, "ann-note")
	require.Contains(t, body, `"mine":true`)
	status, body, _ = e.do(bob, "POST", "/store/namespaces", `{}`)
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"namespaces": [["bob"]]}`, body)

	// Nothing of ann's changed: her blocked run is still running, her
	// thread, assistant, cron and item are as she left them.
	var r graphserver.Run
	e.ok(ann, "GET", BR, "", &r)
	require.Equal(t, graphserver.RunRunning, r.Status)
	var got graphserver.Thread
	e.ok(ann, "GET", T, "", &got)
	require.Equal(t, graphserver.Metadata{"owner": "ann", "team": "a", "graph_id": "echo", "assistant_id": run.AssistantID}, got.Metadata)
	var a graphserver.Assistant
	e.ok(ann, "GET", A, "", &a)
	require.Equal(t, graphserver.Metadata{"owner": "ann", "team": "a"}, a.Metadata)
	c, err := e.srv.GetCron(annCtx, cron.CronID)
	require.NoError(t, err)
	require.Equal(t, cron.Schedule, c.Schedule)
	status, body, _ = e.do(ann, "GET", "/store/items?namespace=ann.notes&key=k", "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "ann-note")

	// bob works on his own: a stateless run's thread is his.
	status, body, _ = e.do(bob, "POST", "/runs/wait", `{"assistant_id": "echo", "input": {"b": 1}, "on_completion": "keep"}`)
	require.Equal(t, http.StatusOK, status, body)
	var mine []graphserver.Thread
	e.ok(bob, "POST", "/threads/search", `{}`, &mine)
	require.Len(t, mine, 1)
	require.Equal(t, "bob", mine[0].Metadata["owner"])
	var annThreads []graphserver.Thread
	e.ok(ann, "POST", "/threads/search", `{}`, &annThreads)
	for _, at := range annThreads {
		require.NotEqual(t, mine[0].ThreadID, at.ThreadID)
	}

	// ann cancels and joins her own runs; after the stateless run ended
	// and its temporary thread went, its log is still hers alone.
	e.ok(ann, "POST", BR+"/cancel", "", nil)
	e.block.Release()
	status, body, _ = e.do(ann, "GET", "/runs/"+stateless.RunID+"/stream", "")
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, `"done":true`)
	status, _, _ = e.do(bob, "GET", "/runs/"+stateless.RunID+"/stream", "")
	require.Equal(t, http.StatusNotFound, status)
}

// waitStarted waits until the blocking graph started runID.
func waitStarted(t *testing.T, b *graphtest.Blocking, runID string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case id := <-b.Started:
			if id == runID {
				return
			}
		case <-timeout:
			t.Fatalf("run %s did not start", runID)
		}
	}
}

// TestAuthAuthenticate covers authentication: every route but the public
// ones needs credentials, a rejection carries the authenticator's status,
// message and headers, and handlers' errors carry theirs.
func TestAuthAuthenticate(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, tenantAuth())
	for _, h := range []struct{ method, path string }{
		{"POST", "/assistants"}, {"POST", "/assistants/search"}, {"GET", "/assistants/echo"},
		{"POST", "/threads"}, {"POST", "/threads/search"}, {"GET", "/threads/" + missingID},
		{"GET", "/threads/" + missingID + "/state"}, {"GET", "/threads/" + missingID + "/history"},
		{"POST", "/threads/" + missingID + "/runs/stream"}, {"GET", "/threads/" + missingID + "/stream"},
		{"POST", "/runs/wait"}, {"POST", "/runs/cancel"}, {"GET", "/runs/" + missingID + "/stream"},
		{"PUT", "/store/items"}, {"POST", "/store/items/search"}, {"POST", "/store/namespaces"},
		{"POST", "/runs/crons"}, {"POST", "/runs/crons/search"}, {"DELETE", "/runs/crons/" + missingID},
	} {
		for _, key := range []string{"", "wrong"} {
			status, body, hdr := e.do(key, h.method, h.path, `{}`)
			require.Equal(t, http.StatusUnauthorized, status, "%s %s key %q: %s", h.method, h.path, key, body)
			require.JSONEq(t, `{"detail": "Invalid API key"}`, body)
			require.Equal(t, "ApiKey", hdr.Get("WWW-Authenticate"))
		}
	}
	for _, path := range []string{"/ok", "/info", "/openapi.json", "/docs"} {
		status, body, _ := e.do("", "GET", path, "")
		require.Equal(t, http.StatusOK, status, "%s needs no credentials: %s", path, body)
	}
	status, body, _ := e.do("", "GET", "/info", "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, `"auth":true`)
	status, body, _ = e.do("", "POST", "/internal/truncate", `{"store": true}`)
	require.Less(t, status, 300, body)

	status, body, hdr := e.do("key-ann", "PUT", "/store/items", `{"namespace": ["ann"], "key": "limited", "value": {}}`)
	require.Equal(t, http.StatusTooManyRequests, status)
	require.JSONEq(t, `{"detail": "Slow down"}`, body)
	require.Equal(t, "7", hdr.Get("Retry-After"))
}

// requireCode fails unless err carries the code.
func requireCode(t *testing.T, err error, code string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, graphserver.ErrorCode(err), "error: %v", err)
}
