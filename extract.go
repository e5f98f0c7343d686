package graphserver

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// Limits of a thread search's extract (POST /threads/search).
const (
	// ThreadExtractMax is how many aliases one search may extract.
	ThreadExtractMax = 10
	// threadExtractPathMax bounds a path's length in bytes, and
	// threadExtractDepthMax its keys and indexes.
	threadExtractPathMax  = 256
	threadExtractDepthMax = 32
	threadExtractAliasMax = 128
)

// threadExtractRoots are the thread fields an extract path starts with.
var threadExtractRoots = []string{"values", "metadata", "config", "context", "interrupts"}

// extractStep is one step of an extract path: a key, or an index (negative
// counts from the end).
type extractStep struct {
	key   string
	index int
	isIdx bool
}

// parseExtractPath reads a path such as values.messages[-1].content: keys
// separated by dots, each followed by any number of [index]. The first key
// is one of threadExtractRoots.
func parseExtractPath(path string) ([]extractStep, bool) {
	if path == "" || len(path) > threadExtractPathMax {
		return nil, false
	}
	var steps []extractStep
	for seg := range strings.SplitSeq(path, ".") {
		key, rest, _ := strings.Cut(seg, "[")
		if key == "" || strings.ContainsAny(key, "]") {
			return nil, false
		}
		steps = append(steps, extractStep{key: key})
		if rest != "" || strings.Contains(seg, "[") {
			rest = "[" + rest
		}
		for rest != "" {
			end := strings.IndexByte(rest, ']')
			if rest[0] != '[' || end < 2 {
				return nil, false
			}
			n, err := strconv.Atoi(rest[1:end])
			if err != nil || n > 1_000_000 || n < -1_000_000 || strings.HasPrefix(rest[1:end], "+") {
				return nil, false
			}
			steps = append(steps, extractStep{index: n, isIdx: true})
			rest = rest[end+1:]
		}
	}
	if len(steps) > threadExtractDepthMax || !slices.Contains(threadExtractRoots, steps[0].key) {
		return nil, false
	}
	return steps, true
}

// checkExtract validates a search's extract map: at most ThreadExtractMax
// aliases, each non-empty, with a valid path.
func checkExtract(extract map[string]string) (map[string][]extractStep, error) {
	if len(extract) == 0 {
		return nil, nil
	}
	if len(extract) > ThreadExtractMax {
		return nil, Errorf(EINVALID, "Invalid extract: at most %d paths, got %d", ThreadExtractMax, len(extract))
	}
	out := make(map[string][]extractStep, len(extract))
	for alias, path := range extract {
		if alias == "" || len(alias) > threadExtractAliasMax {
			return nil, Errorf(EINVALID, "Invalid extract alias %q: must be 1 to %d characters", alias, threadExtractAliasMax)
		}
		steps, ok := parseExtractPath(path)
		if !ok {
			return nil, Errorf(EINVALID, "Invalid extract path %q for %q: use dotted keys with [index] for list items, starting with %s (e.g. values.messages[-1].content), at most %d characters", path, alias, strings.Join(threadExtractRoots, ", "), threadExtractPathMax)
		}
		out[alias] = steps
	}
	return out, nil
}

// extractThread evaluates the paths on t: a missing key or index gives nil.
func extractThread(t *Thread, paths map[string][]extractStep) map[string]any {
	var values any
	decoded := false
	out := make(map[string]any, len(paths))
	for alias, steps := range paths {
		var cur any
		switch steps[0].key {
		case "values":
			if !decoded {
				decoded = true
				_ = json.Unmarshal(t.Values, &values) // null or invalid: nothing to extract
			}
			cur = values
		case "metadata":
			cur = map[string]any(t.Metadata)
		case "config":
			cur = map[string]any(t.Config)
		case "context":
			cur = map[string]any(t.Context)
		case "interrupts":
			cur = jsonValue(t.Interrupts)
			if cur == nil {
				cur = map[string]any{} // a thread's interrupts are {} when none
			}
		}
		for _, st := range steps[1:] {
			cur = extractStep1(cur, st)
		}
		out[alias] = cur
	}
	return out
}

// extractStep1 applies one step to a decoded JSON value.
func extractStep1(cur any, st extractStep) any {
	switch v := cur.(type) {
	case map[string]any:
		if st.isIdx {
			return nil
		}
		return jsonValue(v[st.key])
	case Object:
		if st.isIdx {
			return nil
		}
		return jsonValue(v[st.key])
	case []any:
		if !st.isIdx {
			return nil
		}
		i := st.index
		if i < 0 {
			i += len(v)
		}
		if i < 0 || i >= len(v) {
			return nil
		}
		return v[i]
	}
	return nil
}

// jsonValue turns a Go value held in a JSON object (typed maps and slices
// included) into its plain decoded JSON form, so that paths can walk it.
func jsonValue(v any) any {
	switch v.(type) {
	case nil, string, bool, float64, map[string]any, []any:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}
