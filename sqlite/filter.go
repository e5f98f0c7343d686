package sqlite

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/graphserver/graphserver"
)

// where accumulates AND-ed SQL conditions and their bound arguments. JSON
// containment and graphserver.Filter conditions are compiled into SQLite JSON
// functions (json_type, json_extract, json_each), so matching happens inside
// the query and paging and counts stay correct. Keys and values are always
// bound, never interpolated.
type where struct {
	conds []string
	args  []any
	n     int // json_each alias counter

	terms, depth int // size and nesting of the JSON conditions compiled so far
}

// Bounds of the JSON conditions one query compiles: SQLite refuses
// expression trees deeper than 1,000 and slows down on huge ones. The
// Server refuses client filters well below these (graphserver.MaxFilterTerms,
// MaxFilterDepth); these bound what reaches the driver by other ways.
const (
	maxWhereTerms = 500
	maxWhereDepth = 16
)

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

// contains adds the condition "the JSON document in column col contains v"
// with Postgres jsonb @> semantics: objects match when every key of v matches
// (recursively), arrays when every element of v is contained in some element,
// scalars when equal with the same JSON type. A nil or empty v matches any
// object. col is an SQL expression (a column name) holding JSON text.
func (w *where) contains(col string, v any) error {
	nv, err := normalizeJSON(v)
	if err != nil {
		return err
	}
	if m, ok := nv.(map[string]any); ok && len(m) == 0 {
		return nil
	}
	if nv == nil {
		return nil
	}
	cond, args, err := w.containment(col, "$", nv)
	if err != nil {
		return err
	}
	w.add(cond, args...)
	return nil
}

// filter adds the conditions of an access-control filter on the JSON object
// in column col: each key must match, either by containment (bare value or
// {"$eq": v}) or, for {"$contains": v}, by being an array containing v (or
// all elements of v when v is a list). Unknown operators give EINVALID.
func (w *where) filter(col string, f graphserver.Filter) error {
	for _, k := range slices.Sorted(maps.Keys(f)) {
		path, err := jsonPath("$", k)
		if err != nil {
			return err
		}
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
			cond, args, err := w.containment(col, path, v)
			if err != nil {
				return err
			}
			w.add(cond, args...)
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
			cond, args, err := w.containment(col, path, arg)
			if err != nil {
				return err
			}
			w.add(cond, args...)
		}
	}
	return nil
}

// jsonPath appends key to a SQLite JSON path, quoted. Keys with double
// quotes, backslashes or control characters cannot be quoted in a path:
// EINVALID.
func jsonPath(path, key string) (string, error) {
	if strings.ContainsAny(key, `"\`) || strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", graphserver.Errorf(graphserver.EINVALID, "The metadata key %q cannot contain double quotes, backslashes or control characters.", key)
	}
	return path + `."` + key + `"`, nil
}

// containment compiles "the value at path in JSON expression expr contains
// v" (v normalized).
func (w *where) containment(expr, path string, v any) (string, []any, error) {
	w.terms++
	w.depth++
	defer func() { w.depth-- }()
	if w.terms > maxWhereTerms || w.depth > maxWhereDepth {
		return "", nil, graphserver.Errorf(graphserver.EINVALID, "The filter is too large: at most %d terms, %d levels deep.", maxWhereTerms, maxWhereDepth)
	}
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			return "json_type(" + expr + ", ?) = 'object'", []any{path}, nil
		}
		var conds []string
		var args []any
		for _, k := range slices.Sorted(maps.Keys(v)) {
			p, err := jsonPath(path, k)
			if err != nil {
				return "", nil, err
			}
			c, a, err := w.containment(expr, p, v[k])
			if err != nil {
				return "", nil, err
			}
			conds = append(conds, c)
			args = append(args, a...)
		}
		return "(" + strings.Join(conds, " AND ") + ")", args, nil
	case []any:
		conds := []string{"json_type(" + expr + ", ?) = 'array'"}
		args := []any{path}
		for _, e := range v {
			w.n++
			alias := fmt.Sprintf("je%d", w.n)
			c, a, err := w.element(alias, e)
			if err != nil {
				return "", nil, err
			}
			conds = append(conds, "EXISTS (SELECT 1 FROM json_each("+expr+", ?) AS "+alias+" WHERE "+c+")")
			args = append(args, path)
			args = append(args, a...)
		}
		return "(" + strings.Join(conds, " AND ") + ")", args, nil
	default:
		return scalar("json_type("+expr+", ?)", "json_extract("+expr+", ?)", path, v)
	}
}

// element compiles "the json_each row alias contains v".
func (w *where) element(alias string, v any) (string, []any, error) {
	switch v.(type) {
	case map[string]any:
		c, a, err := w.containment(alias+".value", "$", v)
		return alias + ".type = 'object' AND " + c, a, err
	case []any:
		c, a, err := w.containment(alias+".value", "$", v)
		return alias + ".type = 'array' AND " + c, a, err
	default:
		return scalar(alias+".type", alias+".value", "", v)
	}
}

// scalar compiles equality of a JSON scalar. typeExpr and valExpr take path
// as their argument when path is not empty.
func scalar(typeExpr, valExpr, path string, v any) (string, []any, error) {
	var pre []any
	if path != "" {
		pre = []any{path}
	}
	switch v := v.(type) {
	case nil:
		return typeExpr + " = 'null'", pre, nil
	case bool:
		t := "false"
		if v {
			t = "true"
		}
		return typeExpr + " = '" + t + "'", pre, nil
	case float64:
		return "(" + typeExpr + " IN ('integer', 'real') AND " + valExpr + " = ?)", append(append(pre, pre...), v), nil
	case string:
		return "(" + typeExpr + " = 'text' AND " + valExpr + " = ?)", append(append(pre, pre...), v), nil
	default:
		return "", nil, graphserver.Errorf(graphserver.EINVALID, "The filter value %v has an unsupported type %T.", v, v)
	}
}
