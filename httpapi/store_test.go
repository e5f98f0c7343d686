package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/internal/graphtest"
	"github.com/graphserver/graphserver/sqlite"
)

// putPrefs is a before hook storing users.alice/prefs and a second item.
func putPrefs(t *testing.T, srv *graphserver.Server) {
	t.Helper()
	for _, p := range []graphserver.ItemPut{
		{Namespace: []string{"users", "alice"}, Key: "prefs", Value: graphserver.Object{"theme": "dark", "size": 3}},
		{Namespace: []string{"users", "bob"}, Key: "prefs", Value: graphserver.Object{"theme": "light", "size": 5}},
	} {
		require.NoError(t, srv.PutItem(t.Context(), p))
	}
}

// requireItem checks the value stored at namespace/key (nil: absent).
func requireItem(namespace []string, key string, want graphserver.Object) func(t *testing.T, srv *graphserver.Server) {
	return func(t *testing.T, srv *graphserver.Server) {
		t.Helper()
		it, err := srv.GetItem(t.Context(), namespace, key, nil)
		require.NoError(t, err)
		if want == nil {
			require.Nil(t, it)
			return
		}
		require.NotNil(t, it)
		require.Equal(t, want, it.Value)
	}
}

func TestStore(t *testing.T) {
	t.Parallel()
	const nsErr = `{"detail":"Invalid namespace: it must be a non-empty list of non-empty labels, none containing \".\""}`
	for _, s := range []scenario{
		// PUT /store/items
		{name: "Put", method: "PUT", url: "/store/items", body: `{"namespace":["users","alice"],"key":"prefs","value":{"theme":"dark"},"index":null,"ttl":null}`, status: 204,
			after: requireItem([]string{"users", "alice"}, "prefs", graphserver.Object{"theme": "dark"})},
		{name: "PutIndexAndTTL", method: "PUT", url: "/store/items", body: `{"namespace":["n"],"key":"k","value":{"text":"hi"},"index":["text"],"ttl":5.5}`, status: 204,
			after: requireItem([]string{"n"}, "k", graphserver.Object{"text": "hi"})},
		{name: "PutIndexFalse", method: "PUT", url: "/store/items", body: `{"namespace":["n"],"key":"k","value":{},"index":false}`, status: 204,
			after: requireItem([]string{"n"}, "k", graphserver.Object{})},
		{name: "PutReplaces", method: "PUT", url: "/store/items", before: putPrefs, body: `{"namespace":["users","alice"],"key":"prefs","value":{"theme":"blue"}}`, status: 204,
			after: requireItem([]string{"users", "alice"}, "prefs", graphserver.Object{"theme": "blue"})},
		{name: "PutDotInLabel", method: "PUT", url: "/store/items", body: `{"namespace":["a.b"],"key":"k","value":{}}`, status: 422,
			expectedContent: []string{nsErr}},
		{name: "PutEmptyNamespace", method: "PUT", url: "/store/items", body: `{"namespace":[],"key":"k","value":{}}`, status: 422, expectedContent: []string{nsErr}},
		{name: "PutEmptyLabel", method: "PUT", url: "/store/items", body: `{"namespace":["a",""],"key":"k","value":{}}`, status: 422, expectedContent: []string{nsErr}},
		{name: "PutNoKey", method: "PUT", url: "/store/items", body: `{"namespace":["a"],"value":{}}`, status: 422, expectedContent: []string{`{"detail":"key is required"}`}},
		{name: "PutNoValue", method: "PUT", url: "/store/items", body: `{"namespace":["a"],"key":"k"}`, status: 422, expectedContent: []string{`"detail":"value is required`}},
		{name: "PutValueNotObject", method: "PUT", url: "/store/items", body: `{"namespace":["a"],"key":"k","value":"text"}`, status: 422, expectedContent: []string{`"detail":"Invalid request body: value must be an object`}},
		{name: "PutBadIndex", method: "PUT", url: "/store/items", body: `{"namespace":["a"],"key":"k","value":{},"index":5}`, status: 422, expectedContent: []string{`"detail":"index must be`}},
		{name: "PutBadTTL", method: "PUT", url: "/store/items", body: `{"namespace":["a"],"key":"k","value":{},"ttl":-1}`, status: 422, expectedContent: []string{`"detail":"ttl must be`}},
		{name: "PutBadJSON", method: "PUT", url: "/store/items", body: `{"namespace":`, status: 422, expectedContent: []string{`{"detail":"Invalid JSON in request body"}`}},

		// GET /store/items
		{name: "Get", method: "GET", url: "/store/items?namespace=users.alice&key=prefs", before: putPrefs, status: 200,
			expectedContent:    []string{`{"namespace":["users","alice"],"key":"prefs","value":{"size":3,"theme":"dark"},"created_at":"`, `"updated_at":"`},
			notExpectedContent: []string{`"score"`, `"bob"`}},
		// The Platform's OpenAPI document declares namespace an array, sent
		// as repeated keys by generic clients; the README promises both.
		{name: "GetRepeatedNamespace", method: "GET", url: "/store/items?namespace=users&namespace=alice&key=prefs", before: putPrefs, status: 200,
			expectedContent:    []string{`{"namespace":["users","alice"],"key":"prefs","value":{"size":3,"theme":"dark"}`},
			notExpectedContent: []string{`"bob"`}},
		{name: "GetRepeatedNamespaceMissing", method: "GET", url: "/store/items?namespace=users&namespace=carol&key=prefs", before: putPrefs, status: 200, expectedContent: []string{"null\n"}},
		{name: "GetRepeatedNamespaceEmptyLabel", method: "GET", url: "/store/items?namespace=users&namespace=&key=prefs", before: putPrefs, status: 422, expectedContent: []string{nsErr}},
		{name: "GetNoRefresh", method: "GET", url: "/store/items?namespace=users.alice&key=prefs&refresh_ttl=false", before: putPrefs, status: 200,
			expectedContent: []string{`"key":"prefs"`}},
		{name: "GetMissing", method: "GET", url: "/store/items?namespace=users.carol&key=prefs", before: putPrefs, status: 200, expectedContent: []string{"null\n"}},
		{name: "GetNoKey", method: "GET", url: "/store/items?namespace=users.alice", status: 400, expectedContent: []string{`{"detail":"Key is required"}`}},
		{name: "GetNoNamespace", method: "GET", url: "/store/items?key=prefs", status: 422, expectedContent: []string{nsErr}},
		{name: "GetEmptyLabel", method: "GET", url: "/store/items?namespace=users..alice&key=prefs", status: 422, expectedContent: []string{nsErr}},
		{name: "GetBadRefresh", method: "GET", url: "/store/items?namespace=a&key=k&refresh_ttl=maybe", status: 422},

		// DELETE /store/items (JSON body)
		{name: "Delete", method: "DELETE", url: "/store/items", before: putPrefs, body: `{"namespace":["users","alice"],"key":"prefs"}`, status: 204,
			after: func(t *testing.T, srv *graphserver.Server) {
				requireItem([]string{"users", "alice"}, "prefs", nil)(t, srv)
				requireItem([]string{"users", "bob"}, "prefs", graphserver.Object{"theme": "light", "size": 5.0})(t, srv)
			}},
		{name: "DeleteMissing", method: "DELETE", url: "/store/items", body: `{"namespace":["users","alice"],"key":"prefs"}`, status: 204},
		{name: "DeleteNoNamespace", method: "DELETE", url: "/store/items", body: `{"key":"prefs"}`, status: 422, expectedContent: []string{nsErr}},
		{name: "DeleteNoKey", method: "DELETE", url: "/store/items", body: `{"namespace":["a"]}`, status: 422},

		// POST /store/items/search
		{name: "Search", method: "POST", url: "/store/items/search", before: putPrefs, body: `{"namespace_prefix":["users"]}`, status: 200,
			expectedContent: []string{`{"items":[{"namespace":["users","bob"],"key":"prefs","value":{"size":5,"theme":"light"},"created_at":"`, `"score":null}`, `"alice"`}},
		{name: "SearchEmptyBody", method: "POST", url: "/store/items/search", before: putPrefs, status: 200, expectedContent: []string{`"bob"`, `"alice"`}},
		{name: "SearchNone", method: "POST", url: "/store/items/search", body: `{"namespace_prefix":["nobody"]}`, status: 200, expectedContent: []string{`{"items":[]}`}},
		{name: "SearchFilter", method: "POST", url: "/store/items/search", before: putPrefs,
			body: `{"namespace_prefix":["users"],"filter":{"size":{"$gt":4}},"limit":5,"offset":0,"refresh_ttl":false}`, status: 200,
			expectedContent: []string{`"bob"`}, notExpectedContent: []string{`"alice"`}},
		{name: "SearchPaging", method: "POST", url: "/store/items/search", before: putPrefs, body: `{"limit":1,"offset":1}`, status: 200,
			expectedContent: []string{`"alice"`}, notExpectedContent: []string{`"bob"`}},
		{name: "SearchQuery", method: "POST", url: "/store/items/search", before: putPrefs, body: `{"query":"dark"}`, status: 200,
			expectedContent: []string{`"alice"`, `"score":`}, notExpectedContent: []string{`"bob"`, `"score":null`}},
		{name: "SearchBadOperator", method: "POST", url: "/store/items/search", body: `{"filter":{"size":{"$in":[1]}}}`, status: 422, expectedContent: []string{`"detail":"filter: unknown operator`}},
		{name: "SearchBadLimit", method: "POST", url: "/store/items/search", body: `{"limit":5000}`, status: 422},
		{name: "SearchBadPrefix", method: "POST", url: "/store/items/search", body: `{"namespace_prefix":["a.b"]}`, status: 422},
		{name: "SearchFilterNotObject", method: "POST", url: "/store/items/search", body: `{"filter":[1]}`, status: 422},

		// POST /store/namespaces
		{name: "Namespaces", method: "POST", url: "/store/namespaces", before: putPrefs, body: `{}`, status: 200,
			expectedContent: []string{`{"namespaces":[["users","alice"],["users","bob"]]}`}},
		{name: "NamespacesDepth", method: "POST", url: "/store/namespaces", before: putPrefs, body: `{"prefix":["users"],"max_depth":1,"limit":100,"offset":0}`, status: 200,
			expectedContent: []string{`{"namespaces":[["users"]]}`}},
		{name: "NamespacesSuffix", method: "POST", url: "/store/namespaces", before: putPrefs, body: `{"prefix":["*"],"suffix":["bob"],"max_depth":null}`, status: 200,
			expectedContent: []string{`{"namespaces":[["users","bob"]]}`}},
		{name: "NamespacesNone", method: "POST", url: "/store/namespaces", status: 200, expectedContent: []string{`{"namespaces":[]}`}},
		{name: "NamespacesBadDepth", method: "POST", url: "/store/namespaces", body: `{"max_depth":-2}`, status: 422},
	} {
		s.run(t)
	}
}

// memoryGraph is a one-node Graph whose node writes {"fact": input.fact}
// under memories.<input.user>/fact through the Store the run hands it.
type memoryGraph struct{ graphtest.Nop }

func (memoryGraph) Run(ctx context.Context, req *graphserver.GraphRun, emit func(graphserver.StreamPart)) error {
	var in struct {
		User string `json:"user"`
		Fact string `json:"fact"`
	}
	if err := json.Unmarshal(req.Input, &in); err != nil {
		return err
	}
	if req.Store == nil {
		return errors.New("the run has no store")
	}
	if err := req.Store.PutItem(ctx, []string{"memories", in.User}, "fact", graphserver.Object{"fact": in.Fact}); err != nil {
		return err
	}
	emit(graphserver.StreamPart{Event: "values", Data: req.Input})
	return nil
}

// TestStoreGraphWritesHTTPReads runs a graph whose node writes an item, then
// reads that item back over HTTP, as an SDK client would.
func TestStoreGraphWritesHTTPReads(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	srv, err := graphserver.New(graphserver.Options{Storage: db, Graphs: map[string]graphserver.Graph{"memory": memoryGraph{}}})
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, srv.Close(context.WithoutCancel(t.Context()))) })
	ts := httptest.NewServer(httpapi.New(srv, httpapi.Options{}))
	t.Cleanup(ts.Close)

	out, err := srv.WaitRun(t.Context(), "", graphserver.RunCreate{AssistantID: "memory", Input: json.RawMessage(`{"user":"ann","fact":"likes tea"}`)})
	require.NoError(t, err)
	require.NotContains(t, string(out), "__error__")

	resp, err := http.Get(ts.URL + "/store/items?namespace=memories.ann&key=fact")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", body)
	var it graphserver.Item
	require.NoError(t, json.Unmarshal(body, &it))
	require.Equal(t, []string{"memories", "ann"}, it.Namespace)
	require.Equal(t, "fact", it.Key)
	require.Equal(t, graphserver.Object{"fact": "likes tea"}, it.Value)
}
