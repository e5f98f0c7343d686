package graphserver

import (
	"encoding/json"
)

// Page is one page of search results. Storage returns up to limit+1 rows;
// the Server trims the extra row and fills Next and Total, which httpapi
// sends as the X-Pagination-Next and X-Pagination-Total headers.
//
// A Page encodes as the wire's bare JSON array of Items. When Select is
// non-empty, each item is projected to the selected fields only.
type Page[T any] struct {
	Items []T
	// Next is the offset of the next page, nil when this is the last one.
	Next *int
	// Total is offset+limit+1 when more rows exist, else offset+len(Items):
	// a lower bound, not a full count (use the Count methods for that).
	Total int
	// Select lists the JSON fields each item keeps on the wire; nil keeps all.
	Select []string
}

// newPage builds a Page from rows fetched with limit+1.
func newPage[T any](rows []T, limit, offset int, sel []string) *Page[T] {
	p := &Page[T]{Items: rows, Select: sel}
	if len(rows) > limit {
		p.Items = rows[:limit]
		next := offset + limit
		p.Next = &next
		p.Total = offset + limit + 1
	} else {
		p.Total = offset + len(rows)
	}
	if p.Items == nil {
		p.Items = []T{}
	}
	return p
}

// MarshalJSON encodes the items as a JSON array, projected to Select.
func (p Page[T]) MarshalJSON() ([]byte, error) {
	if p.Items == nil {
		return []byte("[]"), nil
	}
	if len(p.Select) == 0 {
		return json.Marshal(p.Items)
	}
	out := make([]map[string]json.RawMessage, len(p.Items))
	for i, item := range p.Items {
		b, err := json.Marshal(item)
		if err != nil {
			return nil, err
		}
		var all map[string]json.RawMessage
		if err := json.Unmarshal(b, &all); err != nil {
			return nil, err
		}
		out[i] = make(map[string]json.RawMessage, len(p.Select))
		for _, f := range p.Select {
			if v, ok := all[f]; ok {
				out[i][f] = v
			}
		}
	}
	return json.Marshal(out)
}
