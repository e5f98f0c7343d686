// Package jsoncol encodes and decodes the JSON columns the storage drivers
// (sqlite, postgres) share, so both store and read values the same way and
// refuse what cannot be encoded with the same EINVALID error.
package jsoncol

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/record"
)

// ArrayInner returns the text between the brackets of a JSON array (its
// elements, trimmed); ok is false when data is not an array.
func ArrayInner(data []byte) (inner []byte, ok bool) {
	data = bytes.TrimSpace(data)
	if len(data) < 2 || data[0] != '[' || data[len(data)-1] != ']' {
		return nil, false
	}
	return bytes.TrimSpace(data[1 : len(data)-1]), true
}

// Object renders an object for a JSON column; nil gives "{}". The text is
// json.Marshal's (graphserver.Object.AppendJSON).
func Object(o map[string]any) (string, error) {
	if len(o) == 0 {
		return "{}", nil
	}
	s, err := record.EncodeString(graphserver.Object(o).AppendJSON)
	if err != nil {
		return "", graphserver.Errorf(graphserver.EINVALID, "The object cannot be encoded as JSON: %v.", err)
	}
	return s, nil
}

// DecodeObject reads a JSON object column; "", "null" and "{}" give an
// empty object. The result is json.Unmarshal's, without its reflection for
// the objects the drivers store (see decodeObjectFast).
func DecodeObject(s string) (graphserver.Object, error) {
	if s == "" || s == "null" || s == "{}" {
		return graphserver.Object{}, nil
	}
	if m, ok := decodeObjectFast(s); ok {
		return m, nil
	}
	o := graphserver.Object{}
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		return nil, fmt.Errorf("decode stored object: %w", err)
	}
	return o, nil
}

// DecodeValue reads a JSON value into what json.Unmarshal gives for an
// any (nil, bool, float64, string, []any or map[string]any), without its
// reflection for the values decodeValueFast reads. Strings may share the
// memory of data's copy.
func DecodeValue(data []byte) (any, error) {
	if v, ok := decodeValueFast(string(data)); ok {
		return v, nil
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// Value renders any value for a JSON column.
func Value(v any) (string, error) {
	s, err := record.EncodeString(func(b []byte) ([]byte, error) { return record.AppendJSON(b, v) })
	if err != nil {
		return "", graphserver.Errorf(graphserver.EINVALID, "The value cannot be encoded as JSON: %v.", err)
	}
	return s, nil
}

// Kwargs renders a run's kwargs for their column (RunKwargs.AppendJSON).
func Kwargs(k *graphserver.RunKwargs) (string, error) {
	s, err := record.EncodeString(k.AppendJSON)
	if err != nil {
		return "", graphserver.Errorf(graphserver.EINVALID, "The value cannot be encoded as JSON: %v.", err)
	}
	return s, nil
}

// Interrupts returns m, or an empty map for nil, so a thread's interrupts
// column always holds an object.
func Interrupts(m map[string][]graphserver.Interrupt) map[string][]graphserver.Interrupt {
	if m == nil {
		return map[string][]graphserver.Interrupt{}
	}
	return m
}

// Raw checks an optional raw JSON value for a nullable column: nil for an
// absent value (NULL), EINVALID when it is not valid JSON.
func Raw(r json.RawMessage) (*string, error) {
	if len(r) == 0 {
		return nil, nil
	}
	if !json.Valid(r) {
		return nil, graphserver.Errorf(graphserver.EINVALID, "The value is not valid JSON.")
	}
	s := string(r)
	return &s, nil
}

// Encoded is Raw for a value the Server encoded itself (json.Marshal's
// output), which is not checked again: nil for an absent value (NULL).
// Checking it would cost a pass over it, inside the write transaction.
func Encoded(r json.RawMessage) *string {
	if len(r) == 0 {
		return nil
	}
	s := string(r)
	return &s
}

// ThreadColumns are a thread's JSON columns as both drivers store them.
type ThreadColumns struct {
	Metadata, Config, Context, Interrupts string
	Values, Error                         *string // nil: NULL
}

// Thread encodes t's JSON columns.
func Thread(t *graphserver.Thread) (*ThreadColumns, error) {
	var c ThreadColumns
	var err error
	if c.Metadata, err = Object(t.Metadata); err != nil {
		return nil, err
	}
	if c.Config, err = Object(t.Config); err != nil {
		return nil, err
	}
	if c.Context, err = Object(t.Context); err != nil {
		return nil, err
	}
	if c.Values, err = Raw(t.Values); err != nil {
		return nil, err
	}
	if c.Error, err = Raw(t.Error); err != nil {
		return nil, err
	}
	if len(t.Interrupts) == 0 {
		c.Interrupts = "{}" // a new thread's: no reflection for it
	} else if c.Interrupts, err = Value(t.Interrupts); err != nil {
		return nil, err
	}
	return &c, nil
}
