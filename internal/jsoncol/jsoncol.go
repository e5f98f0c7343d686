// Package jsoncol encodes and decodes the JSON columns the storage drivers
// (sqlite, postgres) share, so both store and read values the same way and
// refuse what cannot be encoded with the same EINVALID error.
package jsoncol

import (
	"encoding/json"
	"fmt"

	"github.com/graphserver/graphserver"
)

// Object renders an object for a JSON column; nil gives "{}".
func Object(o map[string]any) (string, error) {
	if o == nil {
		return "{}", nil
	}
	b, err := json.Marshal(o)
	if err != nil {
		return "", graphserver.Errorf(graphserver.EINVALID, "The object cannot be encoded as JSON: %v.", err)
	}
	return string(b), nil
}

// DecodeObject reads a JSON object column; "", "null" and "{}" give an
// empty object.
func DecodeObject(s string) (graphserver.Object, error) {
	o := graphserver.Object{}
	if s == "" || s == "null" || s == "{}" {
		return o, nil
	}
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		return nil, fmt.Errorf("decode stored object: %w", err)
	}
	return o, nil
}

// Value renders any value for a JSON column.
func Value(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", graphserver.Errorf(graphserver.EINVALID, "The value cannot be encoded as JSON: %v.", err)
	}
	return string(b), nil
}

// Interrupts returns m, or an empty map for nil, so a thread's interrupts
// column always holds an object.
func Interrupts(m map[string][]graphserver.Interrupt) map[string][]graphserver.Interrupt {
	if m == nil {
		return map[string][]graphserver.Interrupt{}
	}
	return m
}
