package record

import "maps"

// Object is a JSON object. A nil Object encodes as {} (never null), because
// the LangGraph API gives every object field a {} default.
type Object map[string]any

// Metadata is a free-form JSON object attached to assistants, threads, runs,
// crons and checkpoints. It is searched by containment.
type Metadata = Object

// MarshalJSON encodes a nil Object as {}.
func (o Object) MarshalJSON() ([]byte, error) {
	return o.AppendJSON(nil)
}

// Clone returns a shallow copy of o; a nil o gives an empty, non-nil Object.
func (o Object) Clone() Object {
	if o == nil {
		return Object{}
	}
	return maps.Clone(o)
}

// Merge returns a copy of o with the keys of patch written over it (a shallow
// merge, as the API's metadata PATCH semantics require).
func (o Object) Merge(patch Object) Object {
	out := o.Clone()
	maps.Copy(out, patch)
	return out
}

// Filter narrows a read, search or count to resources whose metadata (or, for
// store items, value) matches. Keys are ANDed; a value is either a JSON value
// compared by containment, or an operator object:
//
//	{"owner": "alice"}                    // equal (containment for objects)
//	{"owner": {"$eq": "alice"}}           // same
//	{"tags": {"$contains": "a"}}          // array contains the value
//	{"tags": {"$contains": ["a", "b"]}}   // array contains all of them
//
// Access-control handlers return filters; storage drivers apply them inside
// their queries so that paging and counts stay correct. A nil Filter matches
// everything.
type Filter map[string]any

// And returns a filter matching what both f and g match. Keys present in both
// are kept from g only when f lacks them; callers combining auth filters with
// user filters pass the auth filter as g so it cannot be overridden.
func (f Filter) And(g Filter) Filter {
	if len(f) == 0 {
		return g
	}
	if len(g) == 0 {
		return f
	}
	out := make(Filter, len(f)+len(g))
	maps.Copy(out, f)
	maps.Copy(out, g)
	return out
}
