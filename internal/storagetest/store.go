package storagetest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// storeT0 is the clock of the store tests: item times are passed in, so the
// tests control expiry without sleeping.
var storeT0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// exerciseStore checks driver.ItemStorage.
func exerciseStore(t *testing.T, open func(t *testing.T) driver.Storage) {
	t.Helper()

	type bundle struct {
		st  driver.ItemStorage
		ctx context.Context
	}
	setup := func(t *testing.T) *bundle {
		t.Helper()
		return &bundle{st: open(t), ctx: t.Context()}
	}
	put := func(t *testing.T, b *bundle, ns []string, key string, value graphserver.Object, now time.Time, opts ...func(*driver.ItemWrite)) {
		t.Helper()
		w := &driver.ItemWrite{Namespace: ns, Key: key, Value: value, Now: now}
		for _, o := range opts {
			o(w)
		}
		require.NoError(t, b.st.PutItem(b.ctx, w))
	}
	search := func(t *testing.T, b *bundle, q driver.ItemQuery) []graphserver.SearchItem {
		t.Helper()
		if q.Limit == 0 {
			q.Limit = 10
		}
		if q.Now.IsZero() {
			q.Now = storeT0.Add(time.Hour)
		}
		items, err := b.st.SearchItems(b.ctx, &q)
		require.NoError(t, err)
		return items
	}
	keys := func(items []graphserver.SearchItem) []string {
		out := []string{}
		for _, it := range items {
			out = append(out, strings.Join(it.Namespace, ".")+"/"+it.Key)
		}
		return out
	}
	requireNotFound := func(t *testing.T, err error) {
		t.Helper()
		require.Error(t, err)
		require.Equal(t, graphserver.ENOTFOUND, graphserver.ErrorCode(err), "error: %v", err)
	}

	t.Run("PutGetDelete", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ns := []string{"users", "alice"}
		put(t, b, ns, "prefs", graphserver.Object{"theme": "dark", "n": 3.0, "tags": []any{"a"}}, storeT0)

		it, err := b.st.GetItem(b.ctx, ns, "prefs", storeT0, true)
		require.NoError(t, err)
		require.Equal(t, ns, it.Namespace)
		require.Equal(t, "prefs", it.Key)
		require.Equal(t, graphserver.Object{"theme": "dark", "n": 3.0, "tags": []any{"a"}}, it.Value)
		require.True(t, it.CreatedAt.Equal(storeT0), "created_at %v", it.CreatedAt)
		require.True(t, it.UpdatedAt.Equal(storeT0), "updated_at %v", it.UpdatedAt)

		_, err = b.st.GetItem(b.ctx, ns, "other", storeT0, true)
		requireNotFound(t, err)
		_, err = b.st.GetItem(b.ctx, []string{"users"}, "prefs", storeT0, true)
		requireNotFound(t, err)

		require.NoError(t, b.st.DeleteItem(b.ctx, ns, "prefs"))
		_, err = b.st.GetItem(b.ctx, ns, "prefs", storeT0, true)
		requireNotFound(t, err)
		require.NoError(t, b.st.DeleteItem(b.ctx, ns, "prefs"), "deleting a missing item")
	})

	t.Run("PutReplacesKeepingCreatedAt", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ns := []string{"n"}
		put(t, b, ns, "k", graphserver.Object{"v": 1.0}, storeT0)
		put(t, b, ns, "k", graphserver.Object{"v": 2.0}, storeT0.Add(time.Second))
		it, err := b.st.GetItem(b.ctx, ns, "k", storeT0, false)
		require.NoError(t, err)
		require.Equal(t, graphserver.Object{"v": 2.0}, it.Value)
		require.True(t, it.CreatedAt.Equal(storeT0))
		require.True(t, it.UpdatedAt.Equal(storeT0.Add(time.Second)))

		// A put at the same or an earlier time still moves updated_at on by
		// one millisecond.
		put(t, b, ns, "k", graphserver.Object{"v": 3.0}, storeT0.Add(time.Second))
		put(t, b, ns, "k", graphserver.Object{"v": 4.0}, storeT0)
		it, err = b.st.GetItem(b.ctx, ns, "k", storeT0, false)
		require.NoError(t, err)
		require.Equal(t, graphserver.Object{"v": 4.0}, it.Value)
		require.True(t, it.UpdatedAt.Equal(storeT0.Add(time.Second+2*time.Millisecond)), "updated_at %v", it.UpdatedAt)
		require.True(t, it.CreatedAt.Equal(storeT0))

		items := search(t, b, driver.ItemQuery{})
		require.Len(t, items, 1, "an upsert keeps one item")
	})

	t.Run("SearchPrefixIsLabelWise", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for i, ns := range [][]string{{"a"}, {"a", "b"}, {"ab"}, {"a", "b", "c"}, {"b"}, {"a-b"}, {"a", "bc"}} {
			put(t, b, ns, "k", graphserver.Object{}, storeT0.Add(time.Duration(i)*time.Second))
		}
		require.Equal(t, []string{"a.bc/k", "a.b.c/k", "a.b/k", "a/k"}, keys(search(t, b, driver.ItemQuery{NamespacePrefix: []string{"a"}})))
		require.Equal(t, []string{"a.b.c/k", "a.b/k"}, keys(search(t, b, driver.ItemQuery{NamespacePrefix: []string{"a", "b"}})))
		require.Equal(t, []string{"ab/k"}, keys(search(t, b, driver.ItemQuery{NamespacePrefix: []string{"ab"}})))
		require.Empty(t, search(t, b, driver.ItemQuery{NamespacePrefix: []string{"a", "b", "c", "d"}}))
		require.Len(t, search(t, b, driver.ItemQuery{}), 7, "an empty prefix matches every item")
	})

	t.Run("SearchNamespaceLabels", func(t *testing.T) {
		// Access control narrows store searches to namespaces holding the
		// user's identity at any position ({"namespace": {"$contains": id}}).
		t.Parallel()
		b := setup(t)
		for i, ns := range [][]string{{"ann"}, {"docs", "ann"}, {"ann", "x", "bob"}, {"anne"}, {"bob"}, {"x", "annx"}} {
			put(t, b, ns, "k", graphserver.Object{}, storeT0.Add(time.Duration(i)*time.Second))
		}
		require.Equal(t, []string{"ann.x.bob/k", "docs.ann/k", "ann/k"}, keys(search(t, b, driver.ItemQuery{NamespaceLabels: []string{"ann"}})))
		require.Equal(t, []string{"ann.x.bob/k"}, keys(search(t, b, driver.ItemQuery{NamespaceLabels: []string{"ann", "bob"}})))
		require.Equal(t, []string{"docs.ann/k"}, keys(search(t, b, driver.ItemQuery{NamespacePrefix: []string{"docs"}, NamespaceLabels: []string{"ann"}})))
		require.Empty(t, search(t, b, driver.ItemQuery{NamespaceLabels: []string{"ann.x"}}), "a label holding a dot matches no namespace")
		items, err := b.st.SearchItems(b.ctx, &driver.ItemQuery{NamespaceLabels: []string{"ann"}, Limit: 1, Offset: 1, Now: storeT0.Add(time.Hour)})
		require.NoError(t, err)
		require.Equal(t, []string{"docs.ann/k"}, keys(items), "paging counts only the matching items")
	})

	t.Run("SearchOrderAndPaging", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for i := range 5 {
			put(t, b, []string{"p"}, string(rune('a'+i)), graphserver.Object{"i": float64(i)}, storeT0.Add(time.Duration(i)*time.Minute))
		}
		// Re-putting "b" makes it the newest.
		put(t, b, []string{"p"}, "b", graphserver.Object{"i": 1.0}, storeT0.Add(time.Hour))
		items := search(t, b, driver.ItemQuery{Now: storeT0.Add(2 * time.Hour)})
		require.Equal(t, []string{"p/b", "p/e", "p/d", "p/c", "p/a"}, keys(items))
		for _, it := range items {
			require.Nil(t, it.Score, "no score without a query")
		}
		items, err := b.st.SearchItems(b.ctx, &driver.ItemQuery{Limit: 2, Offset: 1, Now: storeT0.Add(2 * time.Hour)})
		require.NoError(t, err)
		require.Equal(t, []string{"p/e", "p/d"}, keys(items))
		items, err = b.st.SearchItems(b.ctx, &driver.ItemQuery{Limit: 2, Offset: 5, Now: storeT0.Add(2 * time.Hour)})
		require.NoError(t, err)
		require.Empty(t, items)
	})

	t.Run("SearchConditions", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		values := map[string]graphserver.Object{
			"n1":    {"n": 1.0, "s": "apple", "b": true, "o": map[string]any{"x": 1.0, "y": "z"}, "arr": []any{1.0, "two"}},
			"n5":    {"n": 5.0, "s": "banana", "b": false, "nil": nil},
			"n10":   {"n": 10.5, "s": "cherry"},
			"str5":  {"n": "5", "s": "5"},
			"empty": {},
		}
		for k, v := range values {
			put(t, b, []string{"c"}, k, v, storeT0)
		}
		cases := []struct {
			name  string
			conds []driver.ItemCondition
			want  []string
		}{
			{"EqNumber", []driver.ItemCondition{{Field: "n", Op: "$eq", Value: 5.0}}, []string{"n5"}},
			{"EqStringNotNumber", []driver.ItemCondition{{Field: "n", Op: "$eq", Value: "5"}}, []string{"str5"}},
			{"EqString", []driver.ItemCondition{{Field: "s", Op: "$eq", Value: "apple"}}, []string{"n1"}},
			{"EqTrue", []driver.ItemCondition{{Field: "b", Op: "$eq", Value: true}}, []string{"n1"}},
			{"EqFalse", []driver.ItemCondition{{Field: "b", Op: "$eq", Value: false}}, []string{"n5"}},
			{"EqNull", []driver.ItemCondition{{Field: "nil", Op: "$eq", Value: nil}}, []string{"n5"}},
			{"EqObject", []driver.ItemCondition{{Field: "o", Op: "$eq", Value: map[string]any{"y": "z", "x": 1.0}}}, []string{"n1"}},
			{"EqObjectPartialIsNotEqual", []driver.ItemCondition{{Field: "o", Op: "$eq", Value: map[string]any{"x": 1.0}}}, []string{}},
			{"EqArray", []driver.ItemCondition{{Field: "arr", Op: "$eq", Value: []any{1.0, "two"}}}, []string{"n1"}},
			{"NeIncludesMissingAndOtherTypes", []driver.ItemCondition{{Field: "n", Op: "$ne", Value: 5.0}}, []string{"empty", "n1", "n10", "str5"}},
			{"Gt", []driver.ItemCondition{{Field: "n", Op: "$gt", Value: 5.0}}, []string{"n10"}},
			{"Gte", []driver.ItemCondition{{Field: "n", Op: "$gte", Value: 5.0}}, []string{"n10", "n5"}},
			{"Lt", []driver.ItemCondition{{Field: "n", Op: "$lt", Value: 5.0}}, []string{"n1"}},
			{"Lte", []driver.ItemCondition{{Field: "n", Op: "$lte", Value: 5.0}}, []string{"n1", "n5"}},
			{"GtString", []driver.ItemCondition{{Field: "s", Op: "$gt", Value: "b"}}, []string{"n10", "n5"}},
			{"LtStringSkipsNumbers", []driver.ItemCondition{{Field: "n", Op: "$lt", Value: "9"}}, []string{"str5"}},
			{"Range", []driver.ItemCondition{{Field: "n", Op: "$gt", Value: 1.0}, {Field: "n", Op: "$lt", Value: 10.0}}, []string{"n5"}},
			{"AndAcrossFields", []driver.ItemCondition{{Field: "n", Op: "$gte", Value: 1.0}, {Field: "s", Op: "$eq", Value: "cherry"}}, []string{"n10"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				got := []string{}
				for _, it := range search(t, b, driver.ItemQuery{Conditions: tc.conds}) {
					got = append(got, it.Key)
				}
				slices.Sort(got)
				require.Equal(t, tc.want, got)
			})
		}
	})

	t.Run("ExpiryAndRefresh", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ns := []string{"ttl"}
		withTTL := func(d time.Duration) func(*driver.ItemWrite) {
			return func(w *driver.ItemWrite) { w.TTL = d }
		}
		put(t, b, ns, "short", graphserver.Object{}, storeT0, withTTL(10*time.Minute))
		put(t, b, ns, "forever", graphserver.Object{}, storeT0)
		put(t, b, []string{"gone"}, "k", graphserver.Object{}, storeT0, withTTL(time.Minute))

		at := func(d time.Duration) time.Time { return storeT0.Add(d) }
		// Visible before expiry; a read without refresh keeps the expiry.
		_, err := b.st.GetItem(b.ctx, ns, "short", at(9*time.Minute), false)
		require.NoError(t, err)
		_, err = b.st.GetItem(b.ctx, ns, "short", at(10*time.Minute), false)
		requireNotFound(t, err)

		// A refreshing read at 9m moves expiry to 19m.
		put(t, b, ns, "short", graphserver.Object{}, storeT0, withTTL(10*time.Minute))
		_, err = b.st.GetItem(b.ctx, ns, "short", at(9*time.Minute), true)
		require.NoError(t, err)
		_, err = b.st.GetItem(b.ctx, ns, "short", at(18*time.Minute), false)
		require.NoError(t, err)
		require.Equal(t, []string{"ttl/forever", "ttl/short"}, storeSorted(keys(search(t, b, driver.ItemQuery{Now: at(18 * time.Minute)}))))
		require.Equal(t, []string{"ttl/forever"}, keys(search(t, b, driver.ItemQuery{Now: at(19 * time.Minute)})))

		// A refreshing search at 18m moves it to 28m.
		search(t, b, driver.ItemQuery{Now: at(18 * time.Minute), RefreshTTL: true})
		require.Equal(t, []string{"ttl/forever", "ttl/short"}, storeSorted(keys(search(t, b, driver.ItemQuery{Now: at(27 * time.Minute)}))))

		// Expired items leave namespace listings too, then the sweep deletes
		// them.
		nss, err := b.st.ListItemNamespaces(b.ctx, nil, at(27*time.Minute))
		require.NoError(t, err)
		require.Equal(t, [][]string{{"ttl"}}, nss)
		n, err := b.st.DeleteExpiredItems(b.ctx, at(27*time.Minute))
		require.NoError(t, err)
		require.Equal(t, 1, n, "only gone/k has expired")
		n, err = b.st.DeleteExpiredItems(b.ctx, at(28*time.Minute))
		require.NoError(t, err)
		require.Equal(t, 1, n, "now ttl/short has expired too")
		require.Equal(t, []string{"ttl/forever"}, keys(search(t, b, driver.ItemQuery{Now: storeT0})))

		// Putting over an expired item makes a new item.
		put(t, b, ns, "again", graphserver.Object{}, storeT0, withTTL(time.Minute))
		put(t, b, ns, "again", graphserver.Object{}, at(time.Hour))
		it, err := b.st.GetItem(b.ctx, ns, "again", at(2*time.Hour), true)
		require.NoError(t, err)
		require.True(t, it.CreatedAt.Equal(at(time.Hour)), "created_at %v", it.CreatedAt)
	})

	t.Run("ListItemNamespaces", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for _, ns := range [][]string{{"a"}, {"a", "b"}, {"a", "b"}, {"ab", "c"}, {"x", "y", "z"}} {
			put(t, b, ns, strings.Join(ns, "")+"k", graphserver.Object{}, storeT0)
		}
		put(t, b, []string{"a", "b"}, "k2", graphserver.Object{}, storeT0)
		got, err := b.st.ListItemNamespaces(b.ctx, nil, storeT0)
		require.NoError(t, err)
		slices.SortFunc(got, slices.Compare)
		require.Equal(t, [][]string{{"a"}, {"a", "b"}, {"ab", "c"}, {"x", "y", "z"}}, got)
		got, err = b.st.ListItemNamespaces(b.ctx, []string{"a"}, storeT0)
		require.NoError(t, err)
		slices.SortFunc(got, slices.Compare)
		require.Equal(t, [][]string{{"a"}, {"a", "b"}}, got)
	})

	t.Run("FullTextSearch", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		text := func(s string) func(*driver.ItemWrite) {
			return func(w *driver.ItemWrite) { w.Index = []driver.ItemIndexEntry{{Path: "text", Text: s}} }
		}
		ns := []string{"docs"}
		put(t, b, ns, "cats", graphserver.Object{}, storeT0, text("cats purr and cats sleep all day"))
		put(t, b, ns, "dogs", graphserver.Object{}, storeT0, text("dogs bark at the mailman"))
		put(t, b, ns, "both", graphserver.Object{}, storeT0, text("a cats and dogs story"))
		put(t, b, ns, "plain", graphserver.Object{}, storeT0) // not indexed
		for i := range 5 {
			put(t, b, ns, "filler"+string(rune('0'+i)), graphserver.Object{}, storeT0, text("nothing to see here"))
		}

		items := search(t, b, driver.ItemQuery{Query: "cats"})
		require.Equal(t, []string{"docs/cats", "docs/both"}, keys(items), "more occurrences rank first; non-matching items are left out")
		require.NotNil(t, items[0].Score)
		require.NotNil(t, items[1].Score)
		require.Greater(t, *items[0].Score, *items[1].Score)
		require.Less(t, *items[0].Score, 1.0)

		require.Equal(t, []string{"docs/dogs"}, keys(search(t, b, driver.ItemQuery{Query: "MAILMAN!"})))
		require.Empty(t, search(t, b, driver.ItemQuery{Query: `"unbalanced OR NEAR(`}), "FTS syntax in a query is taken as words")
		require.Equal(t, []string{"docs/both"}, keys(search(t, b, driver.ItemQuery{Query: "cats", Limit: 1, Offset: 1})))

		// Re-putting replaces the indexed text; deleting removes it.
		put(t, b, ns, "cats", graphserver.Object{}, storeT0, text("birds sing"))
		require.Equal(t, []string{"docs/both"}, keys(search(t, b, driver.ItemQuery{Query: "cats"})))
		require.NoError(t, b.st.DeleteItem(b.ctx, ns, "both"))
		require.Empty(t, search(t, b, driver.ItemQuery{Query: "cats"}))
	})

	t.Run("IndexEntriesFollowTheItem", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		text := func(s string) func(*driver.ItemWrite) {
			return func(w *driver.ItemWrite) { w.Index = []driver.ItemIndexEntry{{Path: "text", Text: s}} }
		}
		vec := func(w *driver.ItemWrite) {
			w.Index = []driver.ItemIndexEntry{{Path: "$", Text: "t", Vector: []float32{1, 0}}}
		}
		ns := []string{"ix"}
		scored := func(items []graphserver.SearchItem) []string {
			out := []string{}
			for _, it := range items {
				if it.Score != nil {
					out = append(out, it.Key)
				}
			}
			return out
		}
		// Indexed, then replaced without index entries: its text and vector go.
		put(t, b, ns, "a", graphserver.Object{}, storeT0, text("zebra crossing"))
		put(t, b, ns, "v", graphserver.Object{}, storeT0, vec)
		put(t, b, ns, "a", graphserver.Object{}, storeT0)
		put(t, b, ns, "v", graphserver.Object{}, storeT0)
		require.Empty(t, search(t, b, driver.ItemQuery{Query: "zebra"}))
		require.Empty(t, scored(search(t, b, driver.ItemQuery{Vector: []float32{1, 0}, Query: "x"})))
		// Not indexed, then replaced with index entries: found.
		put(t, b, ns, "a", graphserver.Object{}, storeT0, text("yak herd"))
		put(t, b, ns, "v", graphserver.Object{}, storeT0, vec)
		require.Equal(t, []string{"ix/a"}, keys(search(t, b, driver.ItemQuery{Query: "yak"})))
		require.Equal(t, []string{"v"}, scored(search(t, b, driver.ItemQuery{Vector: []float32{1, 0}, Query: "x"})))
		// Deleted, its key put again without index entries: the old text does
		// not come back with it (nor with a new item that may reuse its row).
		require.NoError(t, b.st.DeleteItem(b.ctx, ns, "a"))
		require.NoError(t, b.st.DeleteItem(b.ctx, ns, "v"))
		put(t, b, ns, "a", graphserver.Object{}, storeT0)
		put(t, b, ns, "b", graphserver.Object{}, storeT0)
		require.Empty(t, search(t, b, driver.ItemQuery{Query: "yak"}))
		require.Empty(t, scored(search(t, b, driver.ItemQuery{Vector: []float32{1, 0}, Query: "x"})))
	})

	t.Run("VectorSearch", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		vec := func(vs ...[]float32) func(*driver.ItemWrite) {
			return func(w *driver.ItemWrite) {
				for _, v := range vs {
					w.Index = append(w.Index, driver.ItemIndexEntry{Path: "$", Text: "t", Vector: v})
				}
			}
		}
		ns := []string{"v"}
		put(t, b, ns, "east", graphserver.Object{"dir": "e"}, storeT0, vec([]float32{1, 0, 0}))
		put(t, b, ns, "north", graphserver.Object{"dir": "n"}, storeT0, vec([]float32{0, 1, 0}))
		put(t, b, ns, "northeast", graphserver.Object{"dir": "ne"}, storeT0, vec([]float32{1, 1, 0}))
		put(t, b, ns, "multi", graphserver.Object{"dir": "m"}, storeT0, vec([]float32{0, 0, 1}, []float32{0, 1, 0.1}))
		put(t, b, ns, "plain", graphserver.Object{"dir": "p"}, storeT0.Add(time.Second)) // no vector
		put(t, b, ns, "plain2", graphserver.Object{"dir": "p"}, storeT0)                 // no vector

		items := search(t, b, driver.ItemQuery{Vector: []float32{0, 2, 0}, Query: "north"})
		require.Equal(t, []string{"v/north", "v/multi", "v/northeast", "v/east", "v/plain", "v/plain2"}, keys(items))
		require.InDelta(t, 1.0, *items[0].Score, 1e-6)
		require.InDelta(t, 1/1.004987562, *items[1].Score, 1e-6, "the best vector of an item counts")
		require.InDelta(t, 0.70710678, *items[2].Score, 1e-6)
		require.InDelta(t, 0.0, *items[3].Score, 1e-6)
		require.Nil(t, items[4].Score, "items without vectors follow, unscored")
		require.Nil(t, items[5].Score)

		// Paging crosses from scored to unscored items.
		page := search(t, b, driver.ItemQuery{Vector: []float32{0, 1, 0}, Query: "north", Limit: 1, Offset: 3})
		require.Equal(t, []string{"v/east"}, keys(page))
		page, err := b.st.SearchItems(b.ctx, &driver.ItemQuery{Vector: []float32{0, 1, 0}, Query: "north", Limit: 2, Offset: 3, Now: storeT0})
		require.NoError(t, err)
		require.Equal(t, []string{"v/east", "v/plain"}, keys(page))
		require.NotNil(t, page[0].Score)
		require.Nil(t, page[1].Score)
		page, err = b.st.SearchItems(b.ctx, &driver.ItemQuery{Vector: []float32{0, 1, 0}, Query: "north", Limit: 5, Offset: 5, Now: storeT0})
		require.NoError(t, err)
		require.Equal(t, []string{"v/plain2"}, keys(page))

		// Conditions apply to ranked searches.
		items = search(t, b, driver.ItemQuery{Vector: []float32{0, 1, 0}, Query: "north",
			Conditions: []driver.ItemCondition{{Field: "dir", Op: "$ne", Value: "n"}}})
		require.Equal(t, []string{"v/multi", "v/northeast", "v/east", "v/plain", "v/plain2"}, keys(items))
	})
}

func storeSorted(s []string) []string {
	slices.Sort(s)
	return s
}
