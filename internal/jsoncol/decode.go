package jsoncol

import (
	"strconv"
	"unicode/utf8"
)

// The decoder below reads the JSON objects the drivers stored (a store
// item's value, a thread's metadata) and the channel values the graph
// engine reads back, into what json.Unmarshal gives for a map[string]any
// or an any: nil, bool, float64, string, []any and map[string]any. It
// skips encoding/json's reflection and its copy of every string (keys and
// strings without escapes are substrings of the column text). It gives up
// (ok false) on whatever it does not read exactly as json.Unmarshal does
// (invalid JSON, invalid UTF-8, an escaped surrogate, a number out of
// range, deep nesting), and DecodeObject or DecodeValue then asks
// encoding/json, so the result and the error are always json.Unmarshal's.

// fastDepthMax is how deeply decodeObjectFast nests before it gives up.
const fastDepthMax = 200

// decodeObjectFast decodes s, a JSON object, into a new map; ok is false
// when s is not something it decodes exactly as json.Unmarshal would.
func decodeObjectFast(s string) (m map[string]any, ok bool) {
	d := fastDecoder{s: s}
	d.space()
	if d.i >= len(s) || s[d.i] != '{' {
		return nil, false
	}
	m, ok = d.object(0)
	if !ok {
		return nil, false
	}
	d.space()
	return m, d.i == len(s)
}

// decodeValueFast decodes s, any JSON value, as decodeObjectFast decodes
// an object.
func decodeValueFast(s string) (v any, ok bool) {
	d := fastDecoder{s: s}
	if v, ok = d.value(0); !ok {
		return nil, false
	}
	d.space()
	return v, d.i == len(s)
}

// fastDecoder reads s from i.
type fastDecoder struct {
	s string
	i int
}

// space skips JSON whitespace.
func (d *fastDecoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// value reads the value at i (after whitespace).
func (d *fastDecoder) value(depth int) (any, bool) {
	d.space()
	if d.i >= len(d.s) {
		return nil, false
	}
	switch c := d.s[d.i]; c {
	case '{':
		m, ok := d.object(depth + 1)
		return m, ok
	case '[':
		return d.array(depth + 1)
	case '"':
		return d.string()
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	case 'n':
		return nil, d.literal("null")
	default:
		return d.number()
	}
}

// literal reads the literal lit at i.
func (d *fastDecoder) literal(lit string) bool {
	if len(d.s)-d.i < len(lit) || d.s[d.i:d.i+len(lit)] != lit {
		return false
	}
	d.i += len(lit)
	return true
}

// object reads the object whose '{' is at i.
func (d *fastDecoder) object(depth int) (map[string]any, bool) {
	if depth > fastDepthMax {
		return nil, false
	}
	d.i++ // '{'
	m := map[string]any{}
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			return nil, false
		}
		k, ok := d.string()
		if !ok {
			return nil, false
		}
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			return nil, false
		}
		d.i++
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		m[k] = v // a repeated key: the last one wins, as in encoding/json
		d.space()
		if d.i >= len(d.s) {
			return nil, false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return m, true
		default:
			return nil, false
		}
	}
}

// array reads the array whose '[' is at i.
func (d *fastDecoder) array(depth int) ([]any, bool) {
	if depth > fastDepthMax {
		return nil, false
	}
	d.i++ // '['
	a := []any{}
	d.space()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		d.space()
		if d.i >= len(d.s) {
			return nil, false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return a, true
		default:
			return nil, false
		}
	}
}

// string reads the string whose '"' is at i. Without escapes it is a
// substring of s.
func (d *fastDecoder) string() (string, bool) {
	start := d.i + 1
	ascii := true
	for j := start; j < len(d.s); j++ {
		switch c := d.s[j]; {
		case c == '"':
			d.i = j + 1
			raw := d.s[start:j]
			return raw, ascii || utf8.ValidString(raw)
		case c == '\\':
			return d.escaped(start, j)
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// escaped reads the rest of a string that starts at start and has its
// first backslash at j.
func (d *fastDecoder) escaped(start, j int) (string, bool) {
	b := make([]byte, 0, j-start+16)
	b = append(b, d.s[start:j]...)
	for j < len(d.s) {
		c := d.s[j]
		switch {
		case c == '"':
			d.i = j + 1
			return string(b), utf8.Valid(b)
		case c < 0x20:
			return "", false
		case c != '\\':
			b = append(b, c)
			j++
			continue
		}
		if j+1 >= len(d.s) {
			return "", false
		}
		switch d.s[j+1] {
		case '"', '\\', '/':
			b = append(b, d.s[j+1])
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			if j+6 > len(d.s) {
				return "", false
			}
			r, err := strconv.ParseUint(d.s[j+2:j+6], 16, 32)
			// A surrogate (a pair, or one alone that encoding/json
			// replaces) is left to encoding/json.
			if err != nil || (r >= 0xD800 && r < 0xE000) {
				return "", false
			}
			b = utf8.AppendRune(b, rune(r))
			j += 6
			continue
		default:
			return "", false
		}
		j += 2
	}
	return "", false
}

// number reads the number at i, as JSON writes it, into a float64 as
// encoding/json does (an out-of-range number is left to encoding/json,
// which fails).
func (d *fastDecoder) number() (any, bool) {
	s, i := d.s, d.i
	start := i
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return nil, false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return nil, false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return nil, false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	f, err := strconv.ParseFloat(s[start:i], 64)
	if err != nil {
		return nil, false
	}
	d.i = i
	return f, true
}
