package postgres

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/graphserver/graphserver"
)

// where accumulates AND-ed SQL conditions, written with '?' placeholders,
// and their bound arguments. Metadata containment and graphserver.Filter
// conditions compile to the jsonb containment operator @>, so matching
// happens inside the query (and a GIN index serves it) and paging and
// counts stay correct. Keys and values are always bound.
type where struct {
	conds []string
	args  []any
	terms int
}

// maxWhereTerms bounds the filter keys one query compiles; the Server
// refuses client filters well below it (graphserver.MaxFilterTerms).
const maxWhereTerms = 500

// add appends a condition with its arguments.
func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

// String returns " WHERE c1 AND c2 ..." or "" when there is no condition.
func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// and returns "c1 AND c2 ..." or "true".
func (w *where) and() string {
	if len(w.conds) == 0 {
		return "true"
	}
	return strings.Join(w.conds, " AND ")
}

// contains adds "the jsonb in col contains v" (jsonb @>). A nil or empty
// object v matches anything.
func (w *where) contains(col string, v any) error {
	nv, err := normalizeJSON(v)
	if err != nil {
		return err
	}
	if m, ok := nv.(map[string]any); nv == nil || ok && len(m) == 0 {
		return nil
	}
	return w.containsJSON(col, nv)
}

// containsJSON adds col @> v (v normalized, not nil).
func (w *where) containsJSON(col string, v any) error {
	if err := w.check(v, 1); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return graphserver.Errorf(graphserver.EINVALID, "The filter value cannot be encoded as JSON: %v.", err)
	}
	w.add(col+" @> ?::jsonb", string(b))
	return nil
}

// maxWhereDepth bounds the nesting of a filter value, as the sqlite driver
// does.
const maxWhereDepth = 16

// check counts the terms of v (its keys and elements, recursively) against
// maxWhereTerms, its depth against maxWhereDepth, and refuses keys that
// cannot name a JSON path in every driver (quotes, backslashes, control
// characters) and strings holding NUL (PostgreSQL text cannot).
func (w *where) check(v any, depth int) error {
	w.terms++
	if w.terms > maxWhereTerms || depth > maxWhereDepth {
		return graphserver.Errorf(graphserver.EINVALID, "The filter is too large: at most %d terms, %d levels deep.", maxWhereTerms, maxWhereDepth)
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if strings.ContainsAny(k, `"\`) || strings.ContainsFunc(k, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				return graphserver.Errorf(graphserver.EINVALID, "The metadata key %q cannot contain double quotes, backslashes or control characters.", k)
			}
			if err := w.check(e, depth+1); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := w.check(e, depth+1); err != nil {
				return err
			}
		}
	case string:
		if strings.ContainsRune(v, 0) {
			return graphserver.Errorf(graphserver.EINVALID, "The filter value %q cannot contain a NUL character.", v)
		}
	}
	return nil
}

// filter adds the conditions of an access-control filter on the jsonb
// object in col: each key must match, by containment (a bare value or
// {"$eq": v}) or, for {"$contains": v}, by being an array holding v (or
// every element of v when v is a list). Unknown operators give EINVALID.
func (w *where) filter(col string, f graphserver.Filter) error {
	for _, k := range slices.Sorted(maps.Keys(f)) {
		v, err := normalizeJSON(f[k])
		if err != nil {
			return err
		}
		ops, isOps := v.(map[string]any)
		if isOps {
			for op := range ops {
				if !strings.HasPrefix(op, "$") {
					isOps = false
					break
				}
			}
			isOps = isOps && len(ops) > 0
		}
		if !isOps {
			if err := w.containsJSON(col, map[string]any{k: v}); err != nil {
				return err
			}
			continue
		}
		for _, op := range slices.Sorted(maps.Keys(ops)) {
			arg := ops[op]
			switch op {
			case "$eq":
			case "$contains":
				if _, ok := arg.([]any); !ok {
					arg = []any{arg}
				}
			default:
				return graphserver.Errorf(graphserver.EINVALID, "The filter operator %q on key %q is not supported: use $eq or $contains.", op, k)
			}
			if err := w.containsJSON(col, map[string]any{k: arg}); err != nil {
				return err
			}
		}
	}
	return nil
}

// normalizeJSON turns any Go value (Object, []string, ints, json.Number, ...)
// into the plain form encoding/json decodes to.
func normalizeJSON(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, graphserver.Errorf(graphserver.EINVALID, "The filter value cannot be encoded as JSON: %v.", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("normalize json: %w", err)
	}
	return out, nil
}

// orderBy builds an ORDER BY clause from whitelisted columns, with idCol as
// the tie breaker in the same direction. An unknown or empty sortBy gives
// def; an order other than asc gives desc. NULLs sort first ascending and
// last descending, as in SQLite.
func orderBy(sorts map[string]string, sortBy, order, def, idCol string) string {
	col, ok := sorts[sortBy]
	if !ok {
		col = def
	}
	dir := "DESC NULLS LAST"
	if order == "asc" {
		dir = "ASC NULLS FIRST"
	}
	if col == idCol {
		return " ORDER BY " + col + " " + dir
	}
	return " ORDER BY " + col + " " + dir + ", " + idCol + " " + dir
}

// limitOffset builds LIMIT/OFFSET; limit <= 0 means no limit. plusOne asks
// for one extra row so the caller can tell whether more exist.
func limitOffset(limit, offset int, plusOne bool) (string, []any) {
	if limit <= 0 {
		return " OFFSET ?", []any{max(offset, 0)}
	}
	if plusOne {
		limit++
	}
	return " LIMIT ? OFFSET ?", []any{limit, max(offset, 0)}
}

// rawOrNil reads an optional JSON column: NULL gives nil.
func rawOrNil(s *string) json.RawMessage {
	if s == nil {
		return nil
	}
	return json.RawMessage(*s)
}

// utc returns t in UTC (pgx reads timestamptz in the local zone).
func utc(t time.Time) time.Time { return t.UTC() }

// utcPtr is utc for an optional time.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// nullText stores "" as NULL.
func nullText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// deref returns *s, "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
