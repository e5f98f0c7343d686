package graph

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTriggerNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ long, short string }{
		{"branch:to:agent", "agent"},
		{Start, Start},
		{"branch:to:" + Start, "branch:to:" + Start},
		{"branch:to:", "branch:to:"},
		{"branch:to:a:b", "branch:to:a:b"},
		{"plain", ":plain"},
		{":x", "::x"},
		{"a:b", "a:b"},
	} {
		require.Equal(t, c.short, shortTrigger(c.long), c.long)
		require.Equal(t, c.long, longTrigger(c.short), c.short)
	}
}

func TestBodyRoundTrip(t *testing.T) {
	t.Parallel()
	c := emptyCkpt("")
	c.versions = map[string]string{"messages": "10.ee", "other": "8.cc"}
	c.triggers = map[string]string{"branch:to:bot": "12.ab", Start: "11.cd"}
	c.seen = map[string]map[string]string{
		Start:       {Start: "10.aa"},
		"bot":       {"branch:to:bot": "9.bb"},
		"two":       {"branch:to:two": "3.x", "branch:to:bot": "4.y"},
		chInterrupt: {"messages": "8.cc", "branch:to:bot": "12.ab"},
	}
	c.sends = []Send{{Node: "bot", Arg: map[string]any{"k": "v"}}}
	c.start, c.hasStart = map[string]any{"messages": []any{"hi"}}, true
	raw, err := encodeBody(c)
	require.NoError(t, err)
	// counters are stored relative to the greatest channel version (10)
	require.JSONEq(t, `{"t":{"bot":-2,"__start__":-1},
		"s":{"__start__":0,"bot":1,"two":{"branch:to:two":7,"branch:to:bot":6},"__interrupt__":{"messages":2,"branch:to:bot":-2}},
		"sends":[{"node":"bot","arg":{"k":"v"}}],"start":{"messages":["hi"]}}`, string(raw))

	d := emptyCkpt("")
	d.versions = c.versions
	require.NoError(t, decodeBody(d, raw))
	require.Equal(t, map[string]string{"branch:to:bot": "12", Start: "11"}, d.triggers)
	require.Equal(t, map[string]map[string]string{
		Start:       {Start: "10"},
		"bot":       {"branch:to:bot": "9"},
		"two":       {"branch:to:two": "3", "branch:to:bot": "4"},
		chInterrupt: {"messages": "8", "branch:to:bot": "12"},
	}, d.seen)
	require.Equal(t, c.start, d.start)
	require.True(t, d.hasStart)
	require.Len(t, d.sends, 1)

	// counters alone compare like the full versions they stand for
	require.Zero(t, vcmp("12", "12.ab"))
	require.Positive(t, vcmp("12.ab", "9"))
	require.Negative(t, vcmp("", "1"))

	// an input of null is kept
	e := emptyCkpt("")
	e.hasStart = true
	raw, err = encodeBody(e)
	require.NoError(t, err)
	require.JSONEq(t, `{"start":null}`, string(raw))
	f := emptyCkpt("")
	require.NoError(t, decodeBody(f, raw))
	require.True(t, f.hasStart)
	require.NoError(t, decodeBody(f, json.RawMessage(nil)))
}

// TestBodyMarshal checks that body.marshal encodes as json.Marshal does:
// a checkpoint's body column holds the same bytes as before it.
func TestBodyMarshal(t *testing.T) {
	t.Parallel()
	for _, b := range []body{
		{},
		{T: map[string]int{"agent": 0, "__start__": 2}},
		{S: map[string]json.RawMessage{"echo": json.RawMessage(`1`), "tools": json.RawMessage(`{"agent":2}`)}, F: []string{"x"}},
		{Sends: []Send{{Node: "n", Arg: map[string]any{"<a>": 1.0}}}, Start: json.RawMessage(`{"x":"hi"}`), J: map[string][]string{"join": {"a", "b"}}},
		{T: map[string]int{}, S: map[string]json.RawMessage{}, F: []string{}},
	} {
		want, err := json.Marshal(b)
		require.NoError(t, err)
		got, err := b.marshal()
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
}
