package graphserver

import "github.com/graphserver/graphserver/record"

// Object is a JSON object. A nil Object encodes as {} (never null), because
// the LangGraph API gives every object field a {} default.
type Object = record.Object

// Metadata is a free-form JSON object attached to assistants, threads, runs,
// crons and checkpoints. It is searched by containment.
type Metadata = record.Metadata

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
type Filter = record.Filter
