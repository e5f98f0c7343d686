package record

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// The encoders below append what json.Marshal gives, byte for byte (map
// keys sorted, <, > and & escaped, raw JSON compacted), for the records the
// HTTP API answers most (a thread, a store item) and the JSON values
// decoding yields (nil, bool, float64, string, []any, map[string]any).
// json.Marshal reaches each value through reflection and copies a
// MarshalJSON result once more to check it; these do neither. A value of
// another type is encoded by json.Marshal.

// appendJSONDepthMax is how deeply appendJSONValue nests before it leaves
// the rest to json.Marshal (which reports cyclic values).
const appendJSONDepthMax = 100

// AppendJSON appends o's JSON encoding to b: what MarshalJSON gives.
func (o Object) AppendJSON(b []byte) ([]byte, error) {
	if len(o) == 0 {
		return append(b, '{', '}'), nil
	}
	return appendJSONMap(b, o, 0)
}

// AppendJSON appends v's JSON encoding to b: what json.Marshal(v) gives,
// byte for byte. The values decoding yields and the maps and slices of
// strings and ints are encoded without reflection; any other value (a
// struct, a type with its own MarshalJSON) is json.Marshal's.
func AppendJSON(b []byte, v any) ([]byte, error) {
	return appendJSONValue(b, v, 0)
}

// MarshalJSON returns json.Marshal(v), byte for byte, encoded as
// AppendJSON encodes it into a pooled buffer and copied out: one
// allocation of the result's size for the values AppendJSON encodes
// itself.
func MarshalJSON(v any) ([]byte, error) {
	return pooled(func(b []byte) ([]byte, error) { return appendJSONValue(b, v, 0) }, bytes.Clone)
}

// EncodeString returns what appendTo appends to an empty buffer, as a
// string, appended to a pooled buffer: one allocation, the string's. The
// drivers encode their JSON columns with it.
func EncodeString(appendTo func([]byte) ([]byte, error)) (string, error) {
	return pooled(appendTo, func(b []byte) string { return string(b) })
}

// pooled appends to a pooled buffer with appendTo and returns the copy out
// makes of the result; the buffer goes back to the pool unless it grew
// past encodeBufferMax.
func pooled[T any](appendTo func([]byte) ([]byte, error), out func([]byte) T) (T, error) {
	bp := encodeBuffers.Get().(*[]byte)
	b, err := appendTo((*bp)[:0])
	var res T
	if err == nil {
		res = out(b)
	}
	if cap(b) <= encodeBufferMax {
		*bp = b
		encodeBuffers.Put(bp)
	}
	return res, err
}

// encodeBuffers are pooled's; one grown past encodeBufferMax is left to
// the collector.
var encodeBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const encodeBufferMax = 64 << 10

// appendJSONValue appends v as json.Marshal encodes it.
func appendJSONValue(b []byte, v any, depth int) ([]byte, error) {
	if depth > appendJSONDepthMax {
		return appendMarshal(b, v)
	}
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendJSONString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case float64:
		return appendJSONFloat(b, v)
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case map[string]any:
		if v == nil {
			return append(b, "null"...), nil
		}
		return appendJSONMap(b, v, depth)
	case Object:
		if len(v) == 0 {
			return append(b, '{', '}'), nil // Object.MarshalJSON: nil is {}
		}
		return appendJSONMap(b, v, depth)
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSONValue(b, e, depth+1); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case json.RawMessage:
		return appendJSONRaw(b, v)
	case []string:
		return appendJSONStrings(b, v), nil
	case map[string]string:
		if v == nil {
			return append(b, "null"...), nil
		}
		return appendJSONSorted(b, v, func(b []byte, s string) ([]byte, error) { return appendJSONString(b, s), nil })
	case map[string]int:
		if v == nil {
			return append(b, "null"...), nil
		}
		return appendJSONSorted(b, v, func(b []byte, n int) ([]byte, error) { return strconv.AppendInt(b, int64(n), 10), nil })
	case map[string]json.RawMessage:
		if v == nil {
			return append(b, "null"...), nil
		}
		return appendJSONSorted(b, v, appendJSONRaw)
	}
	return appendMarshal(b, v)
}

// appendJSONSorted appends a non-nil map with its keys sorted.
func appendJSONSorted[V any](b []byte, m map[string]V, appendValue func([]byte, V) ([]byte, error)) ([]byte, error) {
	var buf [16]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, strings.Compare)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendValue(b, m[k]); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendJSONMap appends a non-nil map with its keys sorted.
func appendJSONMap(b []byte, m map[string]any, depth int) ([]byte, error) {
	return appendJSONSorted(b, m, func(b []byte, v any) ([]byte, error) { return appendJSONValue(b, v, depth+1) })
}

// appendMarshal appends json.Marshal(v).
func appendMarshal(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}

// appendJSONFloat appends f as encoding/json does (ES6 number formatting);
// NaN and infinities are json.Marshal's error.
func appendJSONFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return appendMarshal(b, f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

const hexDigits = "0123456789abcdef"

// AppendJSONKey appends the start of the object member "k": to b, which
// holds the members before it: '{' first when b is empty, ',' otherwise.
// The caller appends the member's value, and EndJSONObject ends the object.
func AppendJSONKey(b []byte, k string) []byte {
	if len(b) == 0 {
		b = append(b, '{')
	} else {
		b = append(b, ',')
	}
	return append(appendJSONString(b, k), ':')
}

// EndJSONObject ends the object whose members AppendJSONKey began in b:
// "{}" when b is empty (no member).
func EndJSONObject(b []byte) []byte {
	if len(b) == 0 {
		b = append(b, '{')
	}
	return append(b, '}')
}

// AppendJSONString appends s quoted as json.Marshal quotes it.
func AppendJSONString(b []byte, s string) []byte { return appendJSONString(b, s) }

// appendJSONString appends s quoted as encoding/json quotes it, escaping
// HTML characters, U+2028 and U+2029, and replacing invalid UTF-8.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendJSONTime appends t as time.Time.MarshalJSON does (RFC 3339 with
// nanoseconds); a time it refuses (a year outside 0-9999, an offset that
// is not whole minutes) is its error.
func appendJSONTime(b []byte, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		return appendMarshal(b, t)
	}
	if _, off := t.Zone(); off%60 != 0 {
		return appendMarshal(b, t)
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}

// appendJSONRaw appends raw JSON as json.Marshal encodes a RawMessage:
// null when empty, else compacted with HTML characters escaped; invalid
// JSON is its error.
func appendJSONRaw(b []byte, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return append(b, "null"...), nil
	}
	buf := bytes.NewBuffer(b)
	start := len(b)
	if err := json.Compact(buf, raw); err != nil {
		return appendMarshal(b, raw)
	}
	b = buf.Bytes()
	if needsHTMLEscape(b[start:]) {
		var esc bytes.Buffer
		json.HTMLEscape(&esc, b[start:])
		b = append(b[:start], esc.Bytes()...)
	}
	return b, nil
}

// needsHTMLEscape reports whether compact JSON holds a character
// json.HTMLEscape escapes. It searches bytes (bytes.ContainsAny with the
// two non-ASCII characters would decode every rune): a run's input passes
// here on SQLite's single writer (RunKwargs.AppendJSON).
func needsHTMLEscape(b []byte) bool {
	return bytes.ContainsAny(b, "<>&") || bytes.Contains(b, lineSep) || bytes.Contains(b, paraSep)
}

// lineSep and paraSep are U+2028 and U+2029 in UTF-8.
var lineSep, paraSep = []byte("\u2028"), []byte("\u2029")

// AppendJSON appends k's JSON encoding to b: what json.Marshal gives. A
// run's insertion encodes its kwargs with it, on SQLite inside the single
// writer's transaction.
func (k *RunKwargs) AppendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"input":`...)
	if b, err = appendJSONRaw(b, k.Input); err != nil {
		return b, err
	}
	b = append(b, `,"command":`...)
	if k.Command == nil {
		b = append(b, "null"...)
	} else if b, err = appendMarshal(b, k.Command); err != nil {
		return b, err
	}
	b = append(b, `,"config":`...)
	if b, err = k.Config.AppendJSON(b); err != nil {
		return b, err
	}
	b = append(b, `,"context":`...)
	if b, err = k.Context.AppendJSON(b); err != nil {
		return b, err
	}
	b = append(b, `,"stream_mode":`...)
	b = appendJSONStrings(b, k.StreamMode)
	b = append(b, `,"interrupt_before":`...)
	b = appendJSONBreakpoints(b, k.InterruptBefore)
	b = append(b, `,"interrupt_after":`...)
	b = appendJSONBreakpoints(b, k.InterruptAfter)
	b = append(b, `,"webhook":`...)
	if k.Webhook == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, *k.Webhook)
	}
	b = append(b, `,"feedback_keys":`...)
	b = appendJSONStrings(b, k.FeedbackKeys)
	b = append(b, `,"temporary":`...)
	b = strconv.AppendBool(b, k.Temporary)
	b = append(b, `,"subgraphs":`...)
	b = strconv.AppendBool(b, k.Subgraphs)
	b = append(b, `,"resumable":`...)
	b = strconv.AppendBool(b, k.Resumable)
	b = append(b, `,"durability":`...)
	b = appendJSONString(b, k.Durability)
	return append(b, '}'), nil
}

// appendJSONStrings appends a string slice (nil is null).
func appendJSONStrings(b []byte, l []string) []byte {
	if l == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

// appendJSONBreakpoints appends bp as Breakpoints.MarshalJSON does.
func appendJSONBreakpoints(b []byte, bp Breakpoints) []byte {
	if bp.All() {
		return append(b, `"*"`...)
	}
	return appendJSONStrings(b, bp)
}
