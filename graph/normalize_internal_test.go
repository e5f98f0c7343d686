package graph

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// roundTrip is what normalize gives without its native fast path.
func roundTrip(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

func TestNormalizeNative(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	deep := any("leaf")
	for range 2 * maxNativeDepth {
		deep = []any{deep}
	}
	for name, v := range map[string]any{
		"object":             map[string]any{"a": 1.0, "b": []any{"x", true, nil, map[string]any{}}, "c": math.Copysign(0, -1)},
		"nil map":            map[string]any(nil),
		"nil slice":          []any(nil),
		"invalid UTF-8":      map[string]any{"s": "a\xffb"},
		"invalid UTF-8 key":  map[string]any{"k\xff": 1.0},
		"int":                map[string]any{"n": 3},
		"typed map":          map[string]int{"n": 3},
		"deeper than native": deep,
		"struct":             []any{struct{ A int }{1}},
	} {
		t.Run(name, func(t *testing.T) {
			want, err := roundTrip(v)
			require.NoError(t, err)
			got, err := normalize(v)
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
	for name, v := range map[string]any{
		"NaN":    map[string]any{"x": math.NaN()},
		"Inf":    []any{math.Inf(1)},
		"cyclic": cyclic,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := normalize(v)
			require.Error(t, err, "as the JSON round trip")
		})
	}
	t.Run("copy", func(t *testing.T) {
		in := map[string]any{"l": []any{map[string]any{"k": "v"}}}
		out, err := normalize(in)
		require.NoError(t, err)
		out.(map[string]any)["l"].([]any)[0].(map[string]any)["k"] = "changed"
		require.Equal(t, "v", in["l"].([]any)[0].(map[string]any)["k"], "the node's value is not shared")
	})
}

// FuzzNormalizeNative checks that the native fast path gives what the JSON
// round trip gives, for any JSON document decoded to native values.
func FuzzNormalizeNative(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x",null,true,{"b":-0}]}`, `[]`, `"\u00e9"`, `{"":{}}`, `[[[[1e300]]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		want, err := roundTrip(v)
		require.NoError(t, err)
		got, ok := cloneNative(v, 0)
		if !ok {
			return // deeper than maxNativeDepth: the round trip's
		}
		require.Equal(t, want, got)
	})
}
