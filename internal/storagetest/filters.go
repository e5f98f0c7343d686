package storagetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// exerciseFilters checks metadata containment and Filter operators, through
// thread search (containment) and reads (filters), on one metadata document.
func exerciseFilters(t *testing.T, open func(t *testing.T) driver.Storage) {
	t.Helper()
	st := open(t)
	createThread(t, st, threadOpts{ID: "t1", Metadata: graphserver.Metadata{
		"owner":        "ann",
		"n":            1,
		"f":            1.5,
		"yes":          true,
		"no":           false,
		"none":         nil,
		"tags":         []any{"a", "b", 3},
		"nested":       map[string]any{"k": "v", "deep": map[string]any{"x": 1, "list": []any{"p", "q"}}},
		"items":        []any{map[string]any{"id": 1, "name": "one"}, map[string]any{"id": 2}},
		"matrix":       []any{[]any{1, 2}, []any{3}},
		`we.ird key's`: "ok",
	}})
	createThread(t, st, threadOpts{ID: "t2", Metadata: graphserver.Metadata{"owner": "bob"}})

	cases := []struct {
		name  string
		value graphserver.Metadata
		match bool
	}{
		{"EmptyMatchesAll", graphserver.Metadata{}, true},
		{"String", graphserver.Metadata{"owner": "ann"}, true},
		{"StringMismatch", graphserver.Metadata{"owner": "Ann"}, false},
		{"Int", graphserver.Metadata{"n": 1}, true},
		{"IntAsFloat", graphserver.Metadata{"n": 1.0}, true},
		{"IntAsString", graphserver.Metadata{"n": "1"}, false},
		{"Float", graphserver.Metadata{"f": 1.5}, true},
		{"True", graphserver.Metadata{"yes": true}, true},
		{"TrueMismatch", graphserver.Metadata{"no": true}, false},
		{"False", graphserver.Metadata{"no": false}, true},
		{"Null", graphserver.Metadata{"none": nil}, true},
		{"NullIsNotMissing", graphserver.Metadata{"absent": nil}, false},
		{"MissingKey", graphserver.Metadata{"absent": "x"}, false},
		{"SeveralKeys", graphserver.Metadata{"owner": "ann", "n": 1}, true},
		{"SeveralKeysOneWrong", graphserver.Metadata{"owner": "ann", "n": 2}, false},
		{"NestedSubset", graphserver.Metadata{"nested": map[string]any{"k": "v"}}, true},
		{"NestedDeep", graphserver.Metadata{"nested": map[string]any{"deep": map[string]any{"x": 1}}}, true},
		{"NestedDeepWrong", graphserver.Metadata{"nested": map[string]any{"deep": map[string]any{"x": 2}}}, false},
		{"NestedEmptyObject", graphserver.Metadata{"nested": map[string]any{}}, true},
		{"EmptyObjectOnScalar", graphserver.Metadata{"owner": map[string]any{}}, false},
		{"ObjectOnScalar", graphserver.Metadata{"owner": map[string]any{"k": "v"}}, false},
		{"ArraySubset", graphserver.Metadata{"tags": []any{"b"}}, true},
		{"ArraySubsetUnordered", graphserver.Metadata{"tags": []any{3, "a"}}, true},
		{"ArrayNotSubset", graphserver.Metadata{"tags": []any{"a", "z"}}, false},
		{"ArrayEmpty", graphserver.Metadata{"tags": []any{}}, true},
		{"ArrayOnScalar", graphserver.Metadata{"owner": []any{"ann"}}, false},
		{"ScalarOnArray", graphserver.Metadata{"tags": "a"}, false},
		{"ArrayTyped", graphserver.Metadata{"tags": []any{"3"}}, false},
		{"ArrayInNested", graphserver.Metadata{"nested": map[string]any{"deep": map[string]any{"list": []any{"q"}}}}, true},
		{"ArrayOfObjects", graphserver.Metadata{"items": []any{map[string]any{"id": 2}}}, true},
		{"ArrayOfObjectsPartial", graphserver.Metadata{"items": []any{map[string]any{"id": 1, "name": "one"}}}, true},
		{"ArrayOfObjectsCrossed", graphserver.Metadata{"items": []any{map[string]any{"id": 2, "name": "one"}}}, false},
		{"ArrayOfArrays", graphserver.Metadata{"matrix": []any{[]any{2}}}, true},
		{"ArrayOfArraysWrong", graphserver.Metadata{"matrix": []any{[]any{2, 3}}}, false},
		{"OddKey", graphserver.Metadata{`we.ird key's`: "ok"}, true},
		{"InjectionKey", graphserver.Metadata{`owner') OR 1=1 --`: "x"}, false},
	}
	for _, c := range cases {
		t.Run("Contains"+c.name, func(t *testing.T) {
			t.Parallel()
			got, err := st.SearchThreads(t.Context(), &graphserver.ThreadSearch{Metadata: c.value})
			require.NoError(t, err)
			n, err := st.CountThreads(t.Context(), &graphserver.ThreadSearch{Metadata: c.value})
			require.NoError(t, err)
			if c.match {
				require.Contains(t, threadIDs(got), "t1")
				require.GreaterOrEqual(t, n, 1)
			} else {
				require.NotContains(t, threadIDs(got), "t1")
			}
			require.Equal(t, len(got), n)

			// A bare-value filter means the same as containment.
			_, err = st.GetThread(t.Context(), "t1", graphserver.Filter(c.value))
			if c.match {
				require.NoError(t, err)
			} else {
				requireCode(t, err, graphserver.ENOTFOUND)
			}
		})
	}

	ops := []struct {
		name   string
		filter graphserver.Filter
		match  bool
	}{
		{"Eq", graphserver.Filter{"owner": map[string]any{"$eq": "ann"}}, true},
		{"EqWrong", graphserver.Filter{"owner": map[string]any{"$eq": "bob"}}, false},
		{"EqObject", graphserver.Filter{"nested": map[string]any{"$eq": map[string]any{"k": "v"}}}, true},
		{"ContainsScalar", graphserver.Filter{"tags": map[string]any{"$contains": "a"}}, true},
		{"ContainsNumber", graphserver.Filter{"tags": map[string]any{"$contains": 3}}, true},
		{"ContainsScalarWrong", graphserver.Filter{"tags": map[string]any{"$contains": "z"}}, false},
		{"ContainsList", graphserver.Filter{"tags": map[string]any{"$contains": []any{"a", "b"}}}, true},
		{"ContainsListWrong", graphserver.Filter{"tags": map[string]any{"$contains": []any{"a", "z"}}}, false},
		{"ContainsOnScalar", graphserver.Filter{"owner": map[string]any{"$contains": "ann"}}, false},
		{"ContainsMissing", graphserver.Filter{"absent": map[string]any{"$contains": "a"}}, false},
		{"Combined", graphserver.Filter{"owner": "ann", "tags": map[string]any{"$contains": "b"}}, true},
		{"CombinedWrong", graphserver.Filter{"owner": "bob", "tags": map[string]any{"$contains": "b"}}, false},
		{"Nil", nil, true},
	}
	for _, c := range ops {
		t.Run("Filter"+c.name, func(t *testing.T) {
			t.Parallel()
			_, err := st.GetThread(t.Context(), "t1", c.filter)
			if c.match {
				require.NoError(t, err)
			} else {
				requireCode(t, err, graphserver.ENOTFOUND)
			}
			got, err := st.SearchThreads(t.Context(), &graphserver.ThreadSearch{Filter: c.filter})
			require.NoError(t, err)
			if c.match {
				require.Contains(t, threadIDs(got), "t1")
			} else {
				require.NotContains(t, threadIDs(got), "t1")
			}
		})
	}

	t.Run("FilterUnknownOperator", func(t *testing.T) {
		t.Parallel()
		_, err := st.GetThread(t.Context(), "t1", graphserver.Filter{"owner": map[string]any{"$ne": "bob"}})
		requireCode(t, err, graphserver.EINVALID)
	})

	// Filters a driver cannot compile are EINVALID, never an internal error
	// (a 500): keys that cannot name a JSON path, and filters far beyond
	// the Server's client bounds (graphserver.MaxFilterTerms,
	// MaxFilterDepth), which reach drivers only through Go callers.
	t.Run("FilterUncompilable", func(t *testing.T) {
		t.Parallel()
		deep := any(1)
		for range 40 {
			deep = []any{deep}
		}
		many := map[string]any{}
		for i := range 5000 {
			many[fmt.Sprint("k", i)] = i
		}
		for name, m := range map[string]graphserver.Metadata{
			"Quote": {`a"b`: 1}, "Backslash": {`a\b`: 1}, "NUL": {"a\x00b": 1}, "Newline": {"a\nb": 1},
			"DeepArrays": {"a": deep}, "ManyKeys": many,
		} {
			_, err := st.SearchThreads(t.Context(), &graphserver.ThreadSearch{Metadata: m, Limit: 10})
			require.Equal(t, graphserver.EINVALID, graphserver.ErrorCode(err), "%s: %v", name, err)
			_, err = st.SearchThreads(t.Context(), &graphserver.ThreadSearch{Filter: graphserver.Filter(m), Limit: 10})
			require.Equal(t, graphserver.EINVALID, graphserver.ErrorCode(err), "filter %s: %v", name, err)
		}
	})
}
