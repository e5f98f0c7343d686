package graph

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
)

// TestCloneJSON checks that cloneJSON's direct copy gives what the JSON
// round trip it replaces gives, and shares nothing with its input.
func TestCloneJSON(t *testing.T) {
	t.Parallel()
	roundTrip := func(o graphserver.Object) graphserver.Object { // the former cloneJSON
		if o == nil {
			return nil
		}
		b, _ := json.Marshal(o)
		var out graphserver.Object
		_ = json.Unmarshal(b, &out)
		return out
	}
	type point struct{ X int }
	for name, o := range map[string]graphserver.Object{
		"nil":      nil,
		"empty":    {},
		"scalars":  {"s": "x", "b": true, "n": nil, "f": 1.5, "i": 3, "i64": int64(1) << 40, "i32": int32(-2)},
		"nested":   {"parents": map[string]any{"": "abc"}, "o": graphserver.Object{"k": []any{1, "two", []string{"a"}}}},
		"strings":  {"tags": []string{"a", "b"}, "parents": map[string]string{"": "c1", "sub:1": "c2"}},
		"badkey":   {"a\xff": 1},
		"struct":   {"p": point{X: 1}},
		"nan":      {"f": math.NaN()},
		"float32":  {"f": float32(0.1)},
		"badutf8":  {"s": "a\xffb"},
		"rawjson":  {"r": json.RawMessage(`{"a":1}`)},
		"deep mix": {"writes": map[string]any{"node": map[string]any{"messages": []any{map[string]any{"id": "1", "n": 2}}}}},
	} {
		t.Run(name, func(t *testing.T) {
			got := cloneJSON(o)
			require.Equal(t, roundTrip(o), got)
			if m, ok := got["writes"].(map[string]any); ok {
				m["node"] = "changed"
				require.NotEqual(t, "changed", o["writes"].(map[string]any)["node"], "the copy shares nothing")
			}
		})
	}
}

// TestCloneJSONDirect checks that the metadata the engine writes (run
// metadata, source, step, parents) is copied without the JSON round trip.
func TestCloneJSONDirect(t *testing.T) {
	t.Parallel()
	meta := graphserver.Object{"source": "loop", "step": 1, "parents": map[string]string{}, "run_id": "r1",
		"graph_id": "g", "user_id": nil, "writes": map[string]any{"node": graphserver.Object{"messages": []any{"hi"}}}}
	_, direct := copyJSONMap(meta)
	require.True(t, direct)
}
