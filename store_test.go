package graphserver_test

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/internal/embedtest"
	"github.com/graphserver/graphserver/sqlite"
)

// storeClock is a settable clock for Options.Now.
type storeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *storeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *storeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type storeBundle struct {
	srv   *graphserver.Server
	db    *sqlite.DB
	clock *storeClock
	ctx   context.Context
}

// storeSetup opens a fresh database and a Server on it; opts.Storage and
// opts.Now are filled in.
func storeSetup(t *testing.T, opts graphserver.Options) *storeBundle {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	clock := &storeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	opts.Storage = db
	opts.Now = clock.Now
	srv, err := graphserver.New(opts)
	require.NoError(t, err)
	return &storeBundle{srv: srv, db: db, clock: clock, ctx: t.Context()}
}

func storeRequireCode(t *testing.T, err error, code string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, graphserver.ErrorCode(err), "error: %v", err)
}

func storePtr[T any](v T) *T { return &v }

func itemKeys(items []graphserver.SearchItem) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, strings.Join(it.Namespace, ".")+"/"+it.Key)
	}
	return out
}

func TestStorePutGetDelete(t *testing.T) {
	t.Parallel()
	b := storeSetup(t, graphserver.Options{})
	ns := []string{"users", "alice"}
	value := graphserver.Object{"theme": "dark", "size": 3}
	require.NoError(t, b.srv.PutItem(b.ctx, graphserver.ItemPut{Namespace: ns, Key: "prefs", Value: value}))
	value["theme"] = "changed after put" // the server keeps its own copy

	it, err := b.srv.GetItem(b.ctx, ns, "prefs", nil)
	require.NoError(t, err)
	require.Equal(t, graphserver.Object{"theme": "dark", "size": 3.0}, it.Value)
	require.Equal(t, b.clock.Now(), it.CreatedAt)
	require.Equal(t, b.clock.Now(), it.UpdatedAt)

	missing, err := b.srv.GetItem(b.ctx, ns, "nope", nil)
	require.NoError(t, err)
	require.Nil(t, missing, "a missing item is nil, not an error")

	require.NoError(t, b.srv.DeleteItem(b.ctx, ns, "prefs"))
	require.NoError(t, b.srv.DeleteItem(b.ctx, ns, "prefs"), "deleting a missing item")
	gone, err := b.srv.GetItem(b.ctx, ns, "prefs", nil)
	require.NoError(t, err)
	require.Nil(t, gone)
}

func TestStoreUpdatedAtStrictlyIncreases(t *testing.T) {
	t.Parallel()
	b := storeSetup(t, graphserver.Options{})
	b.clock.Advance(123456 * time.Nanosecond) // sub-millisecond part is dropped
	put := func(v int) *graphserver.Item {
		require.NoError(t, b.srv.PutItem(b.ctx, graphserver.ItemPut{Namespace: []string{"n"}, Key: "k", Value: graphserver.Object{"v": v}}))
		it, err := b.srv.GetItem(b.ctx, []string{"n"}, "k", nil)
		require.NoError(t, err)
		return it
	}
	first := put(1)
	require.Equal(t, b.clock.Now().Truncate(time.Millisecond), first.UpdatedAt)
	second := put(2) // same clock reading
	third := put(3)
	require.Equal(t, first.UpdatedAt.Add(time.Millisecond), second.UpdatedAt)
	require.Equal(t, first.UpdatedAt.Add(2*time.Millisecond), third.UpdatedAt)
	require.Equal(t, first.CreatedAt, third.CreatedAt)
	b.clock.Advance(time.Second)
	fourth := put(4)
	require.Equal(t, b.clock.Now().Truncate(time.Millisecond), fourth.UpdatedAt)
}

func TestStoreValidation(t *testing.T) {
	t.Parallel()
	b := storeSetup(t, graphserver.Options{})
	ok := graphserver.ItemPut{Namespace: []string{"a"}, Key: "k", Value: graphserver.Object{}}
	with := func(f func(p *graphserver.ItemPut)) graphserver.ItemPut {
		p := ok
		f(&p)
		return p
	}
	puts := map[string]graphserver.ItemPut{
		"NoNamespace":      with(func(p *graphserver.ItemPut) { p.Namespace = nil }),
		"EmptyLabel":       with(func(p *graphserver.ItemPut) { p.Namespace = []string{"a", ""} }),
		"DotInLabel":       with(func(p *graphserver.ItemPut) { p.Namespace = []string{"a.b"} }),
		"NoKey":            with(func(p *graphserver.ItemPut) { p.Key = "" }),
		"NoValue":          with(func(p *graphserver.ItemPut) { p.Value = nil }),
		"ZeroTTL":          with(func(p *graphserver.ItemPut) { p.TTL = storePtr(0.0) }),
		"NegativeTTL":      with(func(p *graphserver.ItemPut) { p.TTL = storePtr(-1.0) }),
		"BadIndexPath":     with(func(p *graphserver.ItemPut) { p.Index = &graphserver.ItemIndex{Fields: []string{"a[x]"}} }),
		"EmptyIndexPath":   with(func(p *graphserver.ItemPut) { p.Index = &graphserver.ItemIndex{Fields: []string{""}} }),
		"TrailingDotIndex": with(func(p *graphserver.ItemPut) { p.Index = &graphserver.ItemIndex{Fields: []string{"a."}} }),
	}
	for name, p := range puts {
		t.Run("Put"+name, func(t *testing.T) {
			storeRequireCode(t, b.srv.PutItem(b.ctx, p), graphserver.EINVALID)
		})
	}
	list, err := b.srv.ListNamespaces(b.ctx, graphserver.NamespaceList{})
	require.NoError(t, err)
	require.Empty(t, list, "invalid puts write nothing")

	_, err = b.srv.GetItem(b.ctx, []string{"a"}, "", nil)
	storeRequireCode(t, err, graphserver.EBADREQUEST)
	require.Equal(t, "Key is required", graphserver.ErrorMessage(err))
	_, err = b.srv.GetItem(b.ctx, nil, "k", nil)
	storeRequireCode(t, err, graphserver.EINVALID)
	storeRequireCode(t, b.srv.DeleteItem(b.ctx, []string{"a", "b.c"}, "k"), graphserver.EINVALID)
	storeRequireCode(t, b.srv.DeleteItem(b.ctx, []string{"a"}, ""), graphserver.EINVALID)

	searches := map[string]graphserver.ItemSearchRequest{
		"DotInPrefix":     {NamespacePrefix: []string{"a.b"}},
		"LimitTooLarge":   {ItemSearch: graphserver.ItemSearch{Limit: 1001}},
		"NegativeLimit":   {ItemSearch: graphserver.ItemSearch{Limit: -1}},
		"NegativeOffset":  {ItemSearch: graphserver.ItemSearch{Offset: -1}},
		"UnknownOperator": {ItemSearch: graphserver.ItemSearch{Filter: map[string]any{"n": map[string]any{"$in": []any{1}}}}},
		"GtOnBool":        {ItemSearch: graphserver.ItemSearch{Filter: map[string]any{"n": map[string]any{"$gt": true}}}},
		"OperatorAsField": {ItemSearch: graphserver.ItemSearch{Filter: map[string]any{"$gt": 1}}},
		"QuoteInField":    {ItemSearch: graphserver.ItemSearch{Filter: map[string]any{`a"b`: 1}}},
		"AndNotAList":     {ItemSearch: graphserver.ItemSearch{Filter: map[string]any{"$and": map[string]any{"a": 1}}}},
	}
	for name, s := range searches {
		t.Run("Search"+name, func(t *testing.T) {
			_, err := b.srv.SearchItems(b.ctx, s)
			storeRequireCode(t, err, graphserver.EINVALID)
		})
	}
	for name, l := range map[string]graphserver.NamespaceList{
		"NegativeDepth": {MaxDepth: -1},
		"LimitTooLarge": {Limit: 5000},
		"DotInSuffix":   {Suffix: []string{"x.y"}},
	} {
		t.Run("List"+name, func(t *testing.T) {
			_, err := b.srv.ListNamespaces(b.ctx, l)
			storeRequireCode(t, err, graphserver.EINVALID)
		})
	}
}

func TestStoreSearchFilterAndPaging(t *testing.T) {
	t.Parallel()
	b := storeSetup(t, graphserver.Options{})
	for _, v := range []graphserver.Object{
		{"kind": "fruit", "price": 3, "name": "apple"},
		{"kind": "fruit", "price": 7, "name": "mango"},
		{"kind": "veg", "price": 2, "name": "leek"},
		{"kind": "fruit", "price": 12, "name": "durian", "meta": map[string]any{"smell": "strong"}},
	} {
		b.clock.Advance(time.Second)
		require.NoError(t, b.srv.PutItem(b.ctx, graphserver.ItemPut{Namespace: []string{"shop", "items"}, Key: v["name"].(string), Value: v}))
	}
	require.NoError(t, b.srv.PutItem(b.ctx, graphserver.ItemPut{Namespace: []string{"shopping"}, Key: "x", Value: graphserver.Object{"kind": "fruit"}}))

	search := func(filter map[string]any, limit, offset int) []string {
		t.Helper()
		items, err := b.srv.SearchItems(b.ctx, graphserver.ItemSearchRequest{NamespacePrefix: []string{"shop"},
			ItemSearch: graphserver.ItemSearch{Filter: filter, Limit: limit, Offset: offset}})
		require.NoError(t, err)
		var keys []string
		for _, it := range items {
			keys = append(keys, it.Key)
			require.Nil(t, it.Score)
		}
		return keys
	}
	require.Equal(t, []string{"durian", "leek", "mango", "apple"}, search(nil, 0, 0), "newest first; shopping is not under shop")
	require.Equal(t, []string{"durian", "mango", "apple"}, search(map[string]any{"kind": "fruit"}, 0, 0))
	require.Equal(t, []string{"mango", "apple"}, search(map[string]any{"kind": "fruit", "price": map[string]any{"$lt": 10}}, 0, 0))
	require.Equal(t, []string{"durian", "mango"}, search(map[string]any{"price": map[string]any{"$gte": 7}}, 0, 0))
	require.Equal(t, []string{"mango", "apple"}, search(map[string]any{"price": map[string]any{"$gt": 2, "$lte": 7}}, 0, 0))
	require.Equal(t, []string{"durian", "leek", "apple"}, search(map[string]any{"price": map[string]any{"$ne": 7}}, 0, 0))
	require.Equal(t, []string{"leek"}, search(map[string]any{"kind": map[string]any{"$eq": "veg"}}, 0, 0))
	require.Equal(t, []string{"durian"}, search(map[string]any{"meta": map[string]any{"smell": "strong"}}, 0, 0))
	require.Equal(t, []string{"mango"}, search(map[string]any{"$and": []any{map[string]any{"kind": "fruit"}, map[string]any{"price": map[string]any{"$lt": 10, "$gt": 4}}}}, 0, 0))
	require.Equal(t, []string{"leek", "mango"}, search(nil, 2, 1))
	require.Empty(t, search(map[string]any{"kind": "mineral"}, 0, 0))

	items, err := b.srv.SearchItems(b.ctx, graphserver.ItemSearchRequest{})
	require.NoError(t, err)
	require.Len(t, items, 5, "an empty prefix searches everything")
}

func TestStoreListNamespaces(t *testing.T) {
	t.Parallel()
	b := storeSetup(t, graphserver.Options{})
	for _, ns := range [][]string{
		{"a", "b", "c"}, {"a", "b", "d"}, {"a", "x"}, {"a"}, {"ab", "c"}, {"b", "c"}, {"users", "1", "memories"}, {"users", "2", "memories"}, {"users", "2", "prefs"},
	} {
		require.NoError(t, b.srv.PutItem(b.ctx, graphserver.ItemPut{Namespace: ns, Key: "k", Value: graphserver.Object{}}))
	}
	list := func(l graphserver.NamespaceList) [][]string {
		t.Helper()
		got, err := b.srv.ListNamespaces(b.ctx, l)
		require.NoError(t, err)
		return got
	}
	require.Equal(t, [][]string{{"a"}, {"a", "b", "c"}, {"a", "b", "d"}, {"a", "x"}, {"ab", "c"}, {"b", "c"},
		{"users", "1", "memories"}, {"users", "2", "memories"}, {"users", "2", "prefs"}}, list(graphserver.NamespaceList{}), "sorted label by label")
	require.Equal(t, [][]string{{"a"}, {"a", "b", "c"}, {"a", "b", "d"}, {"a", "x"}}, list(graphserver.NamespaceList{Prefix: []string{"a"}}), "prefix a excludes ab")
	require.Equal(t, [][]string{{"a", "b", "c"}, {"ab", "c"}, {"b", "c"}}, list(graphserver.NamespaceList{Suffix: []string{"c"}}))
	require.Equal(t, [][]string{{"users", "1", "memories"}, {"users", "2", "memories"}}, list(graphserver.NamespaceList{Prefix: []string{"users", "*", "memories"}}), "wildcard label")
	require.Equal(t, [][]string{{"users", "1", "memories"}, {"users", "2", "memories"}}, list(graphserver.NamespaceList{Suffix: []string{"*", "memories"}}))
	require.Equal(t, [][]string{{"users", "2", "memories"}}, list(graphserver.NamespaceList{Prefix: []string{"users", "2"}, Suffix: []string{"memories"}}))
	require.Equal(t, [][]string{{"a"}, {"ab"}, {"b"}, {"users"}}, list(graphserver.NamespaceList{MaxDepth: 1}), "max_depth truncates and de-duplicates")
	require.Equal(t, [][]string{{"users", "1"}, {"users", "2"}}, list(graphserver.NamespaceList{Prefix: []string{"users"}, MaxDepth: 2}))
	require.Equal(t, [][]string{{"a", "b", "d"}, {"a", "x"}}, list(graphserver.NamespaceList{Prefix: []string{"a"}, Limit: 2, Offset: 2}))
	require.Empty(t, list(graphserver.NamespaceList{Offset: 100}))
	require.Empty(t, list(graphserver.NamespaceList{Prefix: []string{"a", "b", "c", "d"}}))
}

func TestStoreTTL(t *testing.T) {
	t.Parallel()
	b := storeSetup(t, graphserver.Options{StoreDefaultTTL: time.Hour})
	ns := []string{"sessions"}
	require.NoError(t, b.srv.PutItem(b.ctx, graphserver.ItemPut{Namespace: ns, Key: "short", Value: graphserver.Object{}, TTL: storePtr(1.5)}))
	require.NoError(t, b.srv.PutItem(b.ctx, graphserver.ItemPut{Namespace: ns, Key: "default", Value: graphserver.Object{}}))
	get := func(key string, refresh bool) *graphserver.Item {
		t.Helper()
		it, err := b.srv.GetItem(b.ctx, ns, key, &refresh)
		require.NoError(t, err)
		return it
	}

	b.clock.Advance(80 * time.Second)
	require.NotNil(t, get("short", false), "80s < 90s")
	b.clock.Advance(10 * time.Second)
	require.Nil(t, get("short", false), "expired at 90s: invisible before any sweep")

	// A refreshing read restarts the TTL clock.
	require.NoError(t, b.srv.PutItem(b.ctx, graphserver.ItemPut{Namespace: ns, Key: "short", Value: graphserver.Object{}, TTL: storePtr(1.5)}))
	b.clock.Advance(80 * time.Second)
	require.NotNil(t, get("short", true))
	b.clock.Advance(80 * time.Second)
	require.NotNil(t, get("short", false), "refreshed 80s ago")
	// A search refreshes too (refresh_ttl defaults to true).
	items, err := b.srv.SearchItems(b.ctx, graphserver.ItemSearchRequest{NamespacePrefix: ns})
	require.NoError(t, err)
	require.Equal(t, []string{"sessions/short", "sessions/default"}, itemKeys(items))
	b.clock.Advance(80 * time.Second)
	require.NotNil(t, get("short", false), "refreshed by the search 80s ago")
	items, err = b.srv.SearchItems(b.ctx, graphserver.ItemSearchRequest{NamespacePrefix: ns, ItemSearch: graphserver.ItemSearch{RefreshTTL: storePtr(false)}})
	require.NoError(t, err)
	require.Len(t, items, 2)
	b.clock.Advance(20 * time.Second)
	require.Nil(t, get("short", true), "the non-refreshing search left the expiry at 90s after the first search")

	// The default TTL applies to items put without one.
	b.clock.Advance(time.Hour)
	require.Nil(t, get("default", false))
	nss, err := b.srv.ListNamespaces(b.ctx, graphserver.NamespaceList{})
	require.NoError(t, err)
	require.Empty(t, nss)

	n, err := b.srv.SweepItems(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
}

func TestStoreSweeperRunsInBackground(t *testing.T) {
	t.Parallel()
	b := storeSetup(t, graphserver.Options{StoreSweepInterval: 5 * time.Millisecond})
	require.NoError(t, b.srv.PutItem(b.ctx, graphserver.ItemPut{Namespace: []string{"n"}, Key: "k", Value: graphserver.Object{}, TTL: storePtr(1.0)}))
	start := b.clock.Now()
	b.clock.Advance(2 * time.Minute)
	require.NoError(t, b.srv.Start(b.ctx))
	t.Cleanup(func() { require.NoError(t, b.srv.Close(context.WithoutCancel(b.ctx))) })
	stored := func() int {
		// Ask the storage as of before the expiry: it lists the item until
		// the sweep deletes the row.
		items, err := b.db.SearchItems(b.ctx, &driver.ItemQuery{Limit: 10, Now: start})
		require.NoError(t, err)
		return len(items)
	}
	require.Eventually(t, func() bool { return stored() == 0 }, 5*time.Second, 5*time.Millisecond)
}

func TestStoreFullTextRanking(t *testing.T) {
	t.Parallel()
	b := storeSetup(t, graphserver.Options{})
	ns := []string{"docs"}
	put := func(key string, value graphserver.Object, index *graphserver.ItemIndex) {
		t.Helper()
		require.NoError(t, b.srv.PutItem(b.ctx, graphserver.ItemPut{Namespace: ns, Key: key, Value: value, Index: index}))
	}
	put("pasta", graphserver.Object{"title": "Pasta", "text": "boil pasta, add pasta sauce"}, nil)
	put("salad", graphserver.Object{"title": "Salad", "text": "no pasta here? one pasta mention"}, &graphserver.ItemIndex{Fields: []string{"title"}})
	put("soup", graphserver.Object{"title": "Soup", "text": "a soup with pasta"}, nil)
	put("hidden", graphserver.Object{"text": "pasta pasta pasta"}, &graphserver.ItemIndex{Disabled: true})
	put("nested", graphserver.Object{"steps": []any{map[string]any{"text": "cook"}, map[string]any{"text": "serve pasta"}}}, &graphserver.ItemIndex{Fields: []string{"steps[*].text"}})

	items, err := b.srv.SearchItems(b.ctx, graphserver.ItemSearchRequest{ItemSearch: graphserver.ItemSearch{Query: "pasta"}})
	require.NoError(t, err)
	require.Equal(t, "docs/pasta", itemKeys(items)[0], "three mentions rank first")
	require.ElementsMatch(t, []string{"docs/pasta", "docs/soup", "docs/nested"}, itemKeys(items),
		"salad indexes only its title, hidden indexes nothing")
	for i, it := range items {
		require.NotNil(t, it.Score)
		require.Greater(t, *it.Score, 0.0)
		if i > 0 {
			require.LessOrEqual(t, *it.Score, *items[i-1].Score)
		}
	}
	items, err = b.srv.SearchItems(b.ctx, graphserver.ItemSearchRequest{ItemSearch: graphserver.ItemSearch{Query: "salad"}})
	require.NoError(t, err)
	require.Equal(t, []string{"docs/salad"}, itemKeys(items))
	items, err = b.srv.SearchItems(b.ctx, graphserver.ItemSearchRequest{ItemSearch: graphserver.ItemSearch{Query: "pasta", Filter: map[string]any{"title": "Soup"}}})
	require.NoError(t, err)
	require.Equal(t, []string{"docs/soup"}, itemKeys(items))
}

func TestStoreEmbedderRanking(t *testing.T) {
	t.Parallel()
	b := storeSetup(t, graphserver.Options{Embedder: embedtest.HashEmbedder{}, StoreIndexFields: []string{"text"}})
	ns := []string{"memories", "ann"}
	for key, text := range map[string]string{
		"food":  "ann likes spicy food and green tea",
		"job":   "ann works as a pilot",
		"pets":  "ann has two cats",
		"drink": "green tea every morning",
	} {
		require.NoError(t, b.srv.PutItem(b.ctx, graphserver.ItemPut{Namespace: ns, Key: key, Value: graphserver.Object{"text": text}}))
	}
	require.NoError(t, b.srv.PutItem(b.ctx, graphserver.ItemPut{Namespace: ns, Key: "raw", Value: graphserver.Object{"text": "green tea"}, Index: &graphserver.ItemIndex{Disabled: true}}))

	items, err := b.srv.SearchItems(b.ctx, graphserver.ItemSearchRequest{NamespacePrefix: []string{"memories"}, ItemSearch: graphserver.ItemSearch{Query: "green tea"}})
	require.NoError(t, err)
	keys := itemKeys(items)
	require.Len(t, keys, 5)
	require.Equal(t, "memories.ann/drink", keys[0], "shortest text with both words")
	require.Equal(t, "memories.ann/food", keys[1])
	require.Equal(t, "memories.ann/raw", keys[4], "unindexed items come last")
	require.Nil(t, items[4].Score)
	for i := range 4 {
		require.NotNil(t, items[i].Score)
		if i > 0 {
			require.LessOrEqual(t, *items[i].Score, *items[i-1].Score)
		}
	}
	require.Greater(t, *items[0].Score, 0.5)

	// HashEmbedder is deterministic and never fails on its own.
	e := embedtest.HashEmbedder{}
	v1, err := e.Embed(b.ctx, []string{"Hello, world", "hello world", ""})
	require.NoError(t, err)
	require.Len(t, v1, 3)
	require.Len(t, v1[0], embedtest.DimensionsDefault)
	require.Equal(t, v1[0], v1[1])
	require.Equal(t, make([]float32, embedtest.DimensionsDefault), v1[2])
}

// failingEmbedder fails every call.
type failingEmbedder struct{}

func (failingEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	return nil, graphserver.Errorf(graphserver.EUNAVAILABLE, "embedding service down")
}
func (failingEmbedder) Dimensions() int { return 3 }

func TestStoreEmbedderFailureWritesNothing(t *testing.T) {
	t.Parallel()
	b := storeSetup(t, graphserver.Options{Embedder: failingEmbedder{}})
	err := b.srv.PutItem(b.ctx, graphserver.ItemPut{Namespace: []string{"n"}, Key: "k", Value: graphserver.Object{"a": "b"}})
	storeRequireCode(t, err, graphserver.EUNAVAILABLE)
	it, err := b.srv.GetItem(b.ctx, []string{"n"}, "k", nil)
	require.NoError(t, err)
	require.Nil(t, it)
	// An unindexed put needs no embedding.
	require.NoError(t, b.srv.PutItem(b.ctx, graphserver.ItemPut{Namespace: []string{"n"}, Key: "k", Value: graphserver.Object{}, Index: &graphserver.ItemIndex{Disabled: true}}))
}

func TestStoreViewForGraphs(t *testing.T) {
	t.Parallel()
	b := storeSetup(t, graphserver.Options{})
	var st graphserver.Store = b.srv.Store()
	require.NoError(t, st.PutItem(b.ctx, []string{"shared"}, "k", graphserver.Object{"from": "graph"}))
	it, err := b.srv.GetItem(b.ctx, []string{"shared"}, "k", nil)
	require.NoError(t, err)
	require.Equal(t, graphserver.Object{"from": "graph"}, it.Value)
	got, err := st.GetItem(b.ctx, []string{"shared"}, "k")
	require.NoError(t, err)
	require.Equal(t, it, got)
	items, err := st.SearchItems(b.ctx, []string{"shared"}, graphserver.ItemSearch{Filter: map[string]any{"from": "graph"}})
	require.NoError(t, err)
	require.Len(t, items, 1)
	nss, err := st.ListNamespaces(b.ctx, graphserver.NamespaceList{})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"shared"}}, nss)
	require.NoError(t, st.DeleteItem(b.ctx, []string{"shared"}, "k"))
	got, err = st.GetItem(b.ctx, []string{"shared"}, "k")
	require.NoError(t, err)
	require.Nil(t, got)
	storeRequireCode(t, st.PutItem(b.ctx, []string{"bad.label"}, "k", nil), graphserver.EINVALID)
}

func TestItemIndexJSON(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]graphserver.ItemIndex{
		`false`:             {Disabled: true},
		`true`:              {},
		`["a","b[*].c"]`:    {Fields: []string{"a", "b[*].c"}},
		`{"index": "oops"}`: {},
	} {
		var got graphserver.ItemPut
		err := jsonUnmarshal(`{"index": `+in+`}`, &got)
		if in == `{"index": "oops"}` {
			require.Error(t, err)
			continue
		}
		require.NoError(t, err, in)
		require.Equal(t, want, *got.Index, in)
	}
	var p graphserver.ItemPut
	require.NoError(t, jsonUnmarshal(`{"index": null}`, &p))
	require.Nil(t, p.Index, "null keeps the default")
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// TestPutItemStoresACanonicalCopy: the stored value is the JSON the caller's
// value encodes to (a copy: changing the caller's map afterwards changes
// nothing; Go numbers read back as JSON numbers), and a value JSON cannot
// encode is EINVALID.
func TestPutItemStoresACanonicalCopy(t *testing.T) {
	t.Parallel()
	b := storeSetup(t, graphserver.Options{})
	ns := []string{"copy"}
	nested := map[string]any{"list": []any{"a", 1.5, true, nil}}
	value := graphserver.Object{"text": "the quick brown fox", "nested": nested}
	require.NoError(t, b.srv.PutItem(b.ctx, graphserver.ItemPut{Namespace: ns, Key: "decoded", Value: value}))
	nested["list"].([]any)[0] = "changed"
	nested["added"] = 1.0
	value["text"] = "changed"
	it, err := b.srv.GetItem(b.ctx, ns, "decoded", nil)
	require.NoError(t, err)
	require.Equal(t, graphserver.Object{"text": "the quick brown fox", "nested": map[string]any{"list": []any{"a", 1.5, true, nil}}}, it.Value)

	require.NoError(t, b.srv.PutItem(b.ctx, graphserver.ItemPut{Namespace: ns, Key: "go", Value: graphserver.Object{
		"int": 3, "typed": []string{"x"}, "object": graphserver.Object{"a": 1}, "nil map": map[string]any(nil)}}))
	it, err = b.srv.GetItem(b.ctx, ns, "go", nil)
	require.NoError(t, err)
	require.Equal(t, graphserver.Object{"int": 3.0, "typed": []any{"x"}, "object": map[string]any{"a": 1.0}, "nil map": nil}, it.Value)

	err = b.srv.PutItem(b.ctx, graphserver.ItemPut{Namespace: ns, Key: "nan", Value: graphserver.Object{"deep": []any{map[string]any{"x": math.NaN()}}}})
	storeRequireCode(t, err, graphserver.EINVALID)
}
