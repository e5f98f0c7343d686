package jsoncol

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
)

// decodeCases are objects decodeObjectFast reads itself (fast true) or
// leaves to encoding/json (fast false); DecodeObject must give
// json.Unmarshal's result, or fail as it does, for every one.
var decodeCases = []struct {
	in   string
	fast bool
}{
	{`{"text":"the quick brown fox","n":7}`, true},
	{` { "a" : [ 1 , -2.5e3 , 0 , -0 , 1E+2 , 3e-2 ] , "b" : { } , "c" : [ ] } `, true},
	{`{"nested":{"deeper":{"list":[true,false,null,{"x":"y"}]}}}`, true},
	{`{"esc":"q\" b\\ s\/ \b\f\n\r\t","html":"\u003cb\u003e \u0026 \u2028","nul":"\u0000"}`, true},
	{`{"utf8":"héllo wörld ✓ 𝄞","kéy":1}`, true},
	{`{"dup":1,"dup":2}`, true},
	{`{"big":12345678901234567890,"small":1e-320,"max":1.7976931348623157e308}`, true},
	{"{\"raw\":\"a\xffb\"}", false},     // invalid UTF-8: replaced by encoding/json
	{`{"pair":"\ud834\udd1e"}`, false},  // escaped surrogate pair
	{`{"lone":"\ud834x"}`, false},       // lone surrogate: U+FFFD
	{`{"inf":1e400}`, false},            // out of range: an error
	{`{"ctl":"a` + "\n" + `b"}`, false}, // control character: invalid
	{`{"a":01}`, false},                 // leading zero: invalid
	{`{"a":1.}`, false},                 // invalid number
	{`{"a":-}`, false},                  // invalid number
	{`{"a":tru}`, false},                // invalid literal
	{`{"a":1,}`, false},                 // trailing comma
	{`{"a":1} x`, false},                // trailing data
	{`{"a" 1}`, false},                  // missing colon
	{`{a:1}`, false},                    // unquoted key
	{`{"a":"\x"}`, false},               // invalid escape
	{`{"a":"\u12"}`, false},             // short escape
	{`{"a":[1 2]}`, false},              // missing comma
	{`[1,2]`, false},                    // not an object
	{`{"a":"unterminated}`, false},      // unterminated string
	{`{"a":{"b":1}`, false},             // unterminated object
}

func TestDecodeObjectFast(t *testing.T) {
	t.Parallel()
	for _, c := range decodeCases {
		_, ok := decodeObjectFast(c.in)
		require.Equal(t, c.fast, ok, "decodeObjectFast(%q) ok", c.in)
		requireDecodesAsJSON(t, c.in)
	}
}

// valueCases are values other than objects: DecodeValue must give
// json.Unmarshal's result for them too, or fail as it does.
var valueCases = []struct {
	in   string
	fast bool
}{
	{`[1,"two",{"three":3},[],null]`, true},
	{` "a string" `, true},
	{`-12.5e-3`, true},
	{`true`, true},
	{`null`, true},
	{`{}`, true},
	{`""`, true},
	{`"\ud834\udd1e"`, false},
	{`[1,2`, false},
	{`1 2`, false},
	{``, false},
	{` `, false},
}

func TestDecodeValueFast(t *testing.T) {
	t.Parallel()
	for _, c := range decodeCases {
		// The objects read fast are values read fast; of the others, some
		// are values (an array), which the value cases cover.
		if _, ok := decodeValueFast(c.in); c.fast {
			require.True(t, ok, "decodeValueFast(%q) ok", c.in)
		}
		requireDecodesValueAsJSON(t, c.in)
	}
	for _, c := range valueCases {
		_, ok := decodeValueFast(c.in)
		require.Equal(t, c.fast, ok, "decodeValueFast(%q) ok", c.in)
		requireDecodesValueAsJSON(t, c.in)
	}
}

func TestDecodeObjectFastDepth(t *testing.T) {
	t.Parallel()
	deep := func(n int) string {
		s := `{"a":1}`
		for range n {
			s = `{"a":[` + s + `]}`
		}
		return s
	}
	_, ok := decodeObjectFast(deep(fastDepthMax/2 - 1))
	require.True(t, ok)
	_, ok = decodeObjectFast(deep(fastDepthMax))
	require.False(t, ok, "too deep: left to encoding/json")
	requireDecodesAsJSON(t, deep(fastDepthMax))
	_, ok = decodeValueFast(deep(fastDepthMax))
	require.False(t, ok, "too deep: left to encoding/json")
	requireDecodesValueAsJSON(t, deep(fastDepthMax))
}

// requireDecodesAsJSON checks that DecodeObject(s) gives what
// json.Unmarshal gives, or fails when it does.
func requireDecodesAsJSON(t testing.TB, s string) {
	t.Helper()
	want := graphserver.Object{}
	wantErr := json.Unmarshal([]byte(s), &want)
	got, err := DecodeObject(s)
	if wantErr != nil {
		require.Error(t, err, "DecodeObject(%q)", s)
		return
	}
	require.NoError(t, err, "DecodeObject(%q)", s)
	require.Equal(t, want, got, "DecodeObject(%q)", s)
}

// requireDecodesValueAsJSON checks that DecodeValue(s) gives what
// json.Unmarshal gives for an any, or fails when it does.
func requireDecodesValueAsJSON(t testing.TB, s string) {
	t.Helper()
	var want any
	wantErr := json.Unmarshal([]byte(s), &want)
	got, err := DecodeValue([]byte(s))
	if wantErr != nil {
		require.Error(t, err, "DecodeValue(%q)", s)
		return
	}
	require.NoError(t, err, "DecodeValue(%q)", s)
	require.Equal(t, want, got, "DecodeValue(%q)", s)
}

// FuzzDecodeObject checks DecodeObject, and DecodeValue on the same text,
// against json.Unmarshal.
func FuzzDecodeObject(f *testing.F) {
	for _, c := range append(decodeCases, valueCases...) {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		requireDecodesValueAsJSON(t, s)
		if s == "" || s == "null" || s == "{}" {
			return // DecodeObject's empty cases
		}
		requireDecodesAsJSON(t, s)
	})
}
