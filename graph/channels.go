package graph

import (
	"encoding/json"
	"fmt"
)

type chanKind int

const (
	kindLastValue chanKind = iota
	kindAppend
	kindMessages
	kindReducer
)

// Channel declares one state key and how writes to it are combined. Build
// one with LastValue, Append, AddMessages or Reducer; WithDefault and
// WithSchema refine it.
type Channel struct {
	kind   chanKind
	reduce func(old, new any) any
	def    any
	hasDef bool
	schema json.RawMessage
}

// Channels maps state keys to their channels.
type Channels map[string]*Channel

// LastValue is a channel holding the last value written. Two writes to it in
// one superstep fail the step with an InvalidUpdateError, as in LangGraph.
func LastValue() *Channel { return &Channel{kind: kindLastValue} }

// Append is a list channel: a write of a list appends its elements, a write
// of any other value appends that value. Its default is [].
func Append() *Channel { return &Channel{kind: kindAppend, def: []any{}, hasDef: true} }

// AddMessages is a list of chat messages merged by LangChain's add-messages
// rules: writes are coerced to Messages (from {role}, {type} or a bare
// string), a message without id gets a UUID, a message whose id exists
// replaces it, and a Remove(id) message deletes it. Its default is [].
func AddMessages() *Channel { return &Channel{kind: kindMessages, def: []any{}, hasDef: true} }

// Reducer is a channel combining the current value (nil when unset) with each
// write through fn. fn must not modify old; values are JSON-native
// (map[string]any, []any, string, float64, bool, nil).
func Reducer(fn func(old, new any) any) *Channel { return &Channel{kind: kindReducer, reduce: fn} }

// WithDefault returns a copy of c whose value is v until the first write.
func (c *Channel) WithDefault(v any) *Channel {
	cp := *c
	cp.def, cp.hasDef = normalizeOrSelf(v), true
	return &cp
}

// WithSchema returns a copy of c whose JSON Schema (in state, input and output
// schemas) is schema.
func (c *Channel) WithSchema(schema string) *Channel {
	cp := *c
	cp.schema = json.RawMessage(schema)
	return &cp
}

// appendable reports whether the channel's value only grows by appends,
// which lets checkpoints store deltas.
func (c *Channel) appendable() bool { return c.kind == kindAppend || c.kind == kindMessages }

// update applies the writes of one step to old. It returns the new value and
// whether it only appended to old.
func (c *Channel) update(key string, old any, writes []any) (any, bool, error) {
	switch c.kind {
	case kindLastValue:
		if len(writes) > 1 {
			return nil, false, &NodeError{Name: "InvalidUpdateError", Message: fmt.Sprintf("At key '%s': Can receive only one value per step. Use a reducer channel to handle multiple values.", key)}
		}
		return writes[len(writes)-1], false, nil
	case kindAppend:
		l, _ := old.([]any)
		out := l[:len(l):len(l)]
		for _, w := range writes {
			if wl, ok := w.([]any); ok {
				out = append(out, wl...)
			} else {
				out = append(out, w)
			}
		}
		if out == nil {
			out = []any{}
		}
		return out, true, nil
	case kindMessages:
		v, appendOnly := old, true
		for _, w := range writes {
			nv, ao, err := addMessages(v, w)
			if err != nil {
				return nil, false, err
			}
			v, appendOnly = nv, appendOnly && ao
		}
		if v == nil {
			v = []any{}
		}
		return v, appendOnly, nil
	default:
		v := old
		for _, w := range writes {
			nv, err := safeReduce(c.reduce, v, w)
			if err != nil {
				return nil, false, err
			}
			v = nv
		}
		return normalizeOrSelf(v), false, nil
	}
}

func safeReduce(fn func(old, new any) any, old, w any) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("reducer panicked: %v", r)
		}
	}()
	return fn(old, w), nil
}

// normalize converts v to its JSON-native form (the ground truth of state
// values): map[string]any, []any, string, float64, bool or nil.
func normalize(v any) (any, error) {
	switch v.(type) {
	case nil, string, float64, bool, json.RawMessage:
		if r, ok := v.(json.RawMessage); ok {
			var out any
			err := json.Unmarshal(r, &out)
			return out, err
		}
		return v, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("value is not JSON-encodable: %w", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func normalizeOrSelf(v any) any {
	if n, err := normalize(v); err == nil {
		return n
	}
	return v
}
