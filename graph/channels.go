package graph

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"
)

type chanKind int

const (
	kindLastValue chanKind = iota
	kindAppend
	kindMessages
	kindReducer
	kindManaged
	kindTopic
	kindEphemeral
	kindUntracked
	kindAny
	kindBarrier
)

// Channel declares one state key and how writes to it are combined. Build
// one with LastValue, Append, AddMessages or Reducer; WithDefault and
// WithSchema refine it.
type Channel struct {
	kind    chanKind
	managed func(step, stop int) any // kindManaged: the value a task at step sees
	reduce  func(old, new any) any
	def     any
	hasDef  bool
	schema  json.RawMessage
	// accumulate (Topic) keeps values across steps; guard (EphemeralValue,
	// UntrackedValue) refuses two writes in a step; names (NamedBarrierValue)
	// are the values the barrier waits for.
	accumulate bool
	guard      bool
	names      []string
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
// (map[string]any, []any, string, float64, bool, nil). The key is absent
// from the state until the first write; ReducerOf (or WithDefault) starts
// it from a value instead.
func Reducer(fn func(old, new any) any) *Channel { return &Channel{kind: kindReducer, reduce: fn} }

// ReducerOf is a reducer channel over values of type T, as LangGraph's
// BinaryOperatorAggregate over a type (Annotated[int, operator.add]): it
// starts from T's zero value (0 for numbers, [] for slices, {} for maps and
// structs, "" and false), present in the state before any write, and
// combines it with each write through fn. Values are converted between T
// and their JSON-native form through encoding/json; a write that does not
// decode as T fails the step with an InvalidUpdateError.
//
//	"total": graph.ReducerOf(func(a, b float64) float64 { return a + b }),
//	"tags":  graph.ReducerOf(func(a, b []string) []string { return append(a, b...) }),
func ReducerOf[T any](fn func(old, new T) T) *Channel {
	var zero T
	rv := reflect.ValueOf(&zero).Elem()
	switch rv.Kind() {
	case reflect.Slice:
		rv.Set(reflect.MakeSlice(rv.Type(), 0, 0))
	case reflect.Map:
		rv.Set(reflect.MakeMap(rv.Type()))
	}
	def := normalizeOrSelf(zero)
	if def == nil {
		// a pointer or interface type has no usable zero value: the key
		// stays absent until written, as BinaryOperatorAggregate's MISSING
		return &Channel{kind: kindReducer, reduce: typedReduce(fn)}
	}
	return &Channel{kind: kindReducer, reduce: typedReduce(fn), def: def, hasDef: true}
}

// typedReduce adapts fn to JSON-native values; a value that does not
// decode as T panics, which the channel reports as the step's error.
func typedReduce[T any](fn func(old, new T) T) func(old, new any) any {
	conv := func(v any) T {
		if t, ok := v.(T); ok {
			return t
		}
		var t T
		if v == nil {
			return t
		}
		b, err := json.Marshal(v)
		if err == nil {
			err = json.Unmarshal(b, &t)
		}
		if err != nil {
			panic(&NodeError{Name: "InvalidUpdateError", Message: fmt.Sprintf("value %s is not a %T: %v", b, t, err)})
		}
		return t
	}
	return func(old, new any) any { return fn(conv(old), conv(new)) }
}

// Topic is a publish/subscribe channel (LangGraph's Topic): its value is
// the list of the values written to it, a list write contributing its
// elements. Without accumulate it holds only the values written in the last
// step (it empties in a step that does not write it); with accumulate it
// keeps them all. The key is absent from the state while the list is empty.
func Topic(accumulate bool) *Channel { return &Channel{kind: kindTopic, accumulate: accumulate} }

// EphemeralValue is a channel holding the value written in the step just
// before, cleared in the next step that does not write it (LangGraph's
// EphemeralValue): a value meant for the next nodes only. With guard, two
// writes in one step fail it with an InvalidUpdateError; without, the last
// one is kept.
func EphemeralValue(guard bool) *Channel { return &Channel{kind: kindEphemeral, guard: guard} }

// UntrackedValue is a channel holding the last value written, never saved
// in a checkpoint (LangGraph's UntrackedValue): nodes of the same run read
// it, the thread's state and a later run do not see it (a client handle, a
// cache). With guard, two writes in one step fail it.
func UntrackedValue(guard bool) *Channel { return &Channel{kind: kindUntracked, guard: guard} }

// AnyValue is a channel holding the last value written, which may be
// written several times in one step (values assumed equal; the last one is
// kept), cleared in a step that does not write it (LangGraph's AnyValue).
func AnyValue() *Channel { return &Channel{kind: kindAny} }

// NamedBarrierValue is a channel waiting for every one of names to be
// written to it (LangGraph's NamedBarrierValue, which join edges use): a
// write of another value fails the step with an InvalidUpdateError; the
// key is absent from the state until all names were written, then reads
// null.
func NamedBarrierValue(names ...string) *Channel {
	ns := slices.Clone(names)
	slices.Sort(ns)
	return &Channel{kind: kindBarrier, names: slices.Compact(ns)}
}

// RemainingSteps is a managed value (LangGraph's RemainingSteps): not
// stored nor written, a node reads in it how many supersteps the run has
// left before its recursion limit, counting its own (a number). A ReAct
// agent stops calling tools when few remain.
func RemainingSteps() *Channel {
	return &Channel{kind: kindManaged, managed: func(step, stop int) any { return float64(stop - step) }}
}

// IsLastStep is a managed value (LangGraph's IsLastStep): true in the
// superstep the recursion limit allows last.
func IsLastStep() *Channel {
	return &Channel{kind: kindManaged, managed: func(step, stop int) any { return step == stop-1 }}
}

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
		out, appendOnly := l[:len(l):len(l)], true
		err := eachWrite(writes, func(w any, overwrite bool) error {
			if overwrite {
				out, appendOnly = nil, false
			}
			if wl, ok := w.([]any); ok {
				out = append(out, wl...)
			} else {
				out = append(out, w)
			}
			return nil
		})
		if err != nil {
			return nil, false, err
		}
		if out == nil {
			out = []any{}
		}
		return out, appendOnly, nil
	case kindMessages:
		v, appendOnly := old, true
		err := eachWrite(writes, func(w any, overwrite bool) error {
			if overwrite {
				v, appendOnly = nil, false
			}
			nv, ao, err := addMessages(v, w)
			if err != nil {
				return err
			}
			v, appendOnly = nv, appendOnly && ao
			return nil
		})
		if err != nil {
			return nil, false, err
		}
		if v == nil {
			v = []any{}
		}
		return v, appendOnly, nil
	case kindTopic:
		var out []any
		if l, ok := old.([]any); ok && c.accumulate {
			out = l[:len(l):len(l)]
		}
		for _, w := range writes {
			if wl, ok := w.([]any); ok {
				out = append(out, wl...)
			} else {
				out = append(out, w)
			}
		}
		return out, false, nil
	case kindEphemeral, kindUntracked:
		if len(writes) > 1 && c.guard {
			name := "EphemeralValue"
			if c.kind == kindUntracked {
				name = "UntrackedValue"
			}
			return nil, false, &NodeError{Name: "InvalidUpdateError", Message: fmt.Sprintf("At key '%s': %s(guard=True) can receive only one value per step. Use guard=False if you want to store any one of multiple values.", key, name)}
		}
		w := writes[len(writes)-1]
		if c.kind == kindUntracked {
			if v, ok := overwriteValue(w); ok {
				w = v
			}
			return w, false, nil
		}
		return []any{w}, false, nil
	case kindAny:
		return []any{writes[len(writes)-1]}, false, nil
	case kindBarrier:
		seen, _ := old.([]any)
		out := seen[:len(seen):len(seen)]
		for _, w := range writes {
			name, _ := w.(string)
			if !slices.Contains(c.names, name) {
				return nil, false, &NodeError{Name: "InvalidUpdateError", Message: fmt.Sprintf("At key '%s': Value %s not in %v", key, mustJSON(w), c.names)}
			}
			if !slices.Contains(out, any(name)) {
				out = append(out, name)
			}
		}
		slices.SortFunc(out, func(a, b any) int { return cmpString(a, b) })
		return out, false, nil
	default:
		v := old
		err := eachWrite(writes, func(w any, overwrite bool) error {
			if overwrite {
				v = w
				return nil
			}
			nv, err := safeReduce(c.reduce, v, w)
			v = nv
			return err
		})
		if err != nil {
			return nil, false, err
		}
		return normalizeOrSelf(v), false, nil
	}
}

// overwriteKey marks a write that replaces the value of a reducer channel
// instead of being reduced into it (LangGraph's Overwrite).
const overwriteKey = "__overwrite__"

// Overwrite is a write that replaces the value of a reducer channel
// (Append, AddMessages, Reducer) instead of being combined with it, as
// LangGraph's Overwrite: a node returns graph.Update{"items":
// graph.Overwrite{Value: []any{"only"}}}. Its JSON form, accepted in run
// input, Command.update and state updates, is {"__overwrite__": value}
// (or {"type": "__overwrite__", "value": value}). The writes to the channel
// before it in the same superstep are replaced, those after it ignored, and
// a second Overwrite of the channel in one superstep is an
// InvalidUpdateError. Written to a LastValue channel it is stored as is.
type Overwrite struct {
	Value any
}

// MarshalJSON writes {"__overwrite__": value}.
func (o Overwrite) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{overwriteKey: o.Value})
}

// overwriteValue reports whether w (JSON-native) is an Overwrite, and its
// value.
func overwriteValue(w any) (any, bool) {
	m, ok := w.(map[string]any)
	if !ok {
		return nil, false
	}
	if v, ok := m[overwriteKey]; ok && len(m) == 1 {
		return v, true
	}
	if v, ok := m["value"]; ok && m["type"] == overwriteKey {
		return v, true
	}
	return nil, false
}

// eachWrite calls fn for the writes of one step to a reducer channel as
// LangGraph's BinaryOperatorAggregate.update takes them: an Overwrite is
// passed unwrapped with overwrite set, the writes after it are skipped, and
// a second Overwrite is an InvalidUpdateError.
func eachWrite(writes []any, fn func(w any, overwrite bool) error) error {
	seen := false
	for _, w := range writes {
		if v, ok := overwriteValue(w); ok {
			if seen {
				return &NodeError{Name: "InvalidUpdateError", Message: "Can receive only one Overwrite value per super-step."}
			}
			seen = true
			if err := fn(v, true); err != nil {
				return err
			}
			continue
		}
		if seen {
			continue
		}
		if err := fn(w, false); err != nil {
			return err
		}
	}
	return nil
}

func safeReduce(fn func(old, new any) any, old, w any) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			if ne, ok := r.(*NodeError); ok {
				err = ne
				return
			}
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
	if out, ok := cloneNative(v, 0); ok {
		return out, nil
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

// maxNativeDepth bounds cloneNative's recursion: deeper values (or a map
// that holds itself) take the JSON round trip, which reports a cycle.
const maxNativeDepth = 100

// cloneNative returns a copy of v when v is made only of JSON-native values
// that a JSON round trip gives back unchanged (maps with string keys,
// slices of any, valid UTF-8 strings, finite float64s, bools and nils), so
// that normalize needs no round trip for what nodes mostly return; ok is
// false for anything else.
func cloneNative(v any, depth int) (out any, ok bool) {
	switch x := v.(type) {
	case nil, bool:
		return x, true
	case string:
		return x, utf8.ValidString(x)
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case map[string]any:
		if x == nil {
			return nil, true // null
		}
		if depth >= maxNativeDepth {
			return nil, false
		}
		m := make(map[string]any, len(x))
		for k, e := range x {
			c, ok := cloneNative(e, depth+1)
			if !ok || !utf8.ValidString(k) {
				return nil, false
			}
			m[k] = c
		}
		return m, true
	case []any:
		if x == nil {
			return nil, true // null
		}
		if depth >= maxNativeDepth {
			return nil, false
		}
		l := make([]any, len(x))
		for i, e := range x {
			c, ok := cloneNative(e, depth+1)
			if !ok {
				return nil, false
			}
			l[i] = c
		}
		return l, true
	}
	return nil, false
}

func normalizeOrSelf(v any) any {
	if n, err := normalize(v); err == nil {
		return n
	}
	return v
}

func cmpString(a, b any) int {
	x, _ := a.(string)
	y, _ := b.(string)
	return strings.Compare(x, y)
}

// clearsOnStep reports whether the channel empties in a step that does not
// write it (LangGraph calls update with no values on every available
// channel not written in a step: EphemeralValue, AnyValue and a Topic
// without accumulate then empty).
func (c *Channel) clearsOnStep() bool {
	return c.kind == kindEphemeral || c.kind == kindAny || (c.kind == kindTopic && !c.accumulate)
}

// read returns what the state shows of a stored value, and whether the key
// is present (a channel's get, absent on EmptyChannelError). A channel that
// can become empty again (Topic, EphemeralValue, AnyValue) stores a list,
// empty when the channel is: what a checkpoint stores of an empty channel
// must differ from any value, null included.
func (c *Channel) read(v any) (any, bool) {
	switch c.kind {
	case kindEphemeral, kindAny:
		l, _ := v.([]any)
		if len(l) == 0 {
			return nil, false
		}
		return l[0], true
	case kindTopic:
		l, _ := v.([]any)
		if len(l) == 0 {
			return nil, false
		}
		return l, true
	case kindBarrier:
		l, _ := v.([]any)
		if len(l) != len(c.names) {
			return nil, false
		}
		return nil, true
	}
	return v, true
}
