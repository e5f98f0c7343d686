package graphserver

import (
	"encoding/json"
	"strings"
)

// Bounds on what clients send, besides the request body size (httpapi
// Options.MaxBodyBytes) and TTLs (MaxTTL). Input beyond them is refused with
// EINVALID before anything is read or written.
const (
	// MaxJSONDepth bounds the nesting of the JSON documents clients send
	// (httpapi checks request bodies against it): SQLite's JSON functions
	// fail on documents nested more than 1,000 levels, so a deeper value
	// once stored would break every filtered search of its table.
	MaxJSONDepth = 100
	// MaxFilterTerms bounds the size of a search filter (metadata, values,
	// store filters): the keys, array elements and scalar values it holds,
	// counted over every level. Each term is a condition of the SQL query.
	MaxFilterTerms = 100
	// MaxFilterDepth bounds the nesting of a search filter: each level of
	// arrays nests a subquery in the SQL query.
	MaxFilterDepth = 8
)

// checkFilter validates a search filter a client gave (field names it in
// the message): at most MaxFilterTerms terms, MaxFilterDepth levels, and
// keys free of double quotes, backslashes and control characters, which
// cannot name a JSON path. v is a decoded JSON value or raw JSON.
func checkFilter(field string, v any) error {
	if raw, ok := v.(json.RawMessage); ok {
		if len(raw) == 0 {
			return nil
		}
		var decoded any
		if err := json.Unmarshal(raw, &decoded); err != nil {
			return Errorf(EINVALID, "Invalid %s filter: not valid JSON", field)
		}
		v = decoded
	}
	terms := 0
	var walk func(v any, depth int) error
	walk = func(v any, depth int) error {
		if depth > MaxFilterDepth {
			return Errorf(EINVALID, "Invalid %s filter: nested deeper than %d levels", field, MaxFilterDepth)
		}
		var err error
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if err = countTerm(field, &terms); err == nil {
					if err = checkFilterKey(field, k); err == nil {
						err = walk(e, depth+1)
					}
				}
				if err != nil {
					return err
				}
			}
		case Object:
			return walk(map[string]any(v), depth)
		case []any:
			for _, e := range v {
				if err = countTerm(field, &terms); err == nil {
					err = walk(e, depth+1)
				}
				if err != nil {
					return err
				}
			}
		default:
			return countTerm(field, &terms)
		}
		return nil
	}
	return walk(v, 0)
}

func countTerm(field string, n *int) error {
	if *n++; *n > MaxFilterTerms {
		return Errorf(EINVALID, "Invalid %s filter: more than %d terms", field, MaxFilterTerms)
	}
	return nil
}

// checkFilterKey refuses a filter key that cannot name a JSON path.
func checkFilterKey(field, k string) error {
	if strings.ContainsAny(k, `"\`) || strings.ContainsFunc(k, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return Errorf(EINVALID, "Invalid %s filter key %q: keys cannot contain double quotes, backslashes or control characters", field, k)
	}
	return nil
}
