package sqlite

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/graphserver/graphserver/record"
)

// A checkpoint's channels column is written with every checkpoint and read
// back for its parent at every put, on SQLite's single writer, so it has
// its own codec: encodeChannels writes what json.Marshal writes for the
// map, and decodeChannels reads the columns it wrote (plain names and
// versions, integers) without encoding/json's reflection, leaving anything
// else to json.Unmarshal.

// encodeChannels renders locs for the channels column: json.Marshal(locs),
// byte for byte.
func encodeChannels(locs map[string]chanLoc) string {
	keys := make([]string, 0, len(locs))
	for k := range locs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, strings.Compare)
	s, _ := record.EncodeString(func(b []byte) ([]byte, error) {
		for _, k := range keys {
			l := locs[k]
			b = append(record.AppendJSONKey(b, k), '[')
			b = record.AppendJSONString(b, l.version)
			if l.stored {
				b = append(b, ',')
				b = strconv.AppendInt(b, l.chain, 10)
				b = append(b, ',')
				b = strconv.AppendInt(b, l.seq, 10)
			}
			b = append(b, ']')
		}
		return record.EndJSONObject(b), nil
	})
	return s
}

// decodeChannels reads a channels column.
func decodeChannels(s string) (map[string]chanLoc, error) {
	if s == "" || s == "{}" {
		return map[string]chanLoc{}, nil
	}
	if locs, ok := decodeChannelsFast(s); ok {
		return locs, nil
	}
	locs := map[string]chanLoc{}
	if err := json.Unmarshal([]byte(s), &locs); err != nil {
		return nil, fmt.Errorf("decode checkpoint channels: %w", err)
	}
	return locs, nil
}

// decodeChannelsFast reads a channels column as encodeChannels writes it
// for plain names and versions; ok is false for anything else (escapes,
// non-ASCII, a location that is not [version] or [version, chain, seq]
// with integer chain and seq), which json.Unmarshal then reads.
func decodeChannelsFast(s string) (locs map[string]chanLoc, ok bool) {
	d := channelsDecoder{s: s}
	if !d.byte('{') {
		return nil, false
	}
	locs = make(map[string]chanLoc, strings.Count(s, "["))
	if d.byte('}') {
		return locs, d.end()
	}
	for {
		k, ok := d.str()
		if !ok || !d.byte(':') || !d.byte('[') {
			return nil, false
		}
		var l chanLoc
		if l.version, ok = d.str(); !ok {
			return nil, false
		}
		if d.byte(',') {
			if l.chain, ok = d.int(); !ok || !d.byte(',') {
				return nil, false
			}
			if l.seq, ok = d.int(); !ok {
				return nil, false
			}
			l.stored = true
		}
		if !d.byte(']') {
			return nil, false
		}
		locs[k] = l
		if d.byte('}') {
			return locs, d.end()
		}
		if !d.byte(',') {
			return nil, false
		}
	}
}

// channelsDecoder reads s from i, skipping JSON whitespace before each
// token.
type channelsDecoder struct {
	s string
	i int
}

func (d *channelsDecoder) space() {
	for d.i < len(d.s) && (d.s[d.i] == ' ' || d.s[d.i] == '\t' || d.s[d.i] == '\n' || d.s[d.i] == '\r') {
		d.i++
	}
}

// byte consumes c if it is next.
func (d *channelsDecoder) byte(c byte) bool {
	d.space()
	if d.i < len(d.s) && d.s[d.i] == c {
		d.i++
		return true
	}
	return false
}

// end reports whether only whitespace is left.
func (d *channelsDecoder) end() bool {
	d.space()
	return d.i == len(d.s)
}

// str reads a string of printable ASCII without escapes.
func (d *channelsDecoder) str() (string, bool) {
	if !d.byte('"') {
		return "", false
	}
	start := d.i
	for ; d.i < len(d.s); d.i++ {
		switch c := d.s[d.i]; {
		case c == '"':
			d.i++
			return d.s[start : d.i-1], true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return "", false
		}
	}
	return "", false
}

// int reads an integer of at most 15 digits (exact as the float64
// json.Unmarshal reads, which chanLoc.UnmarshalJSON converts).
func (d *channelsDecoder) int() (int64, bool) {
	d.space()
	start := d.i
	if d.i < len(d.s) && d.s[d.i] == '-' {
		d.i++
	}
	digits := d.i
	for d.i < len(d.s) && d.s[d.i] >= '0' && d.s[d.i] <= '9' {
		d.i++
	}
	n := d.i - digits
	if n == 0 || n > 15 || (n > 1 && d.s[digits] == '0') {
		return 0, false
	}
	if d.i < len(d.s) && (d.s[d.i] == '.' || d.s[d.i] == 'e' || d.s[d.i] == 'E') {
		return 0, false
	}
	v, err := strconv.ParseInt(d.s[start:d.i], 10, 64)
	return v, err == nil
}
