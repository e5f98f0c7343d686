package sqlite

import (
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/jsoncol"
)

// TestChannelsCodec checks that encodeChannels writes what json.Marshal
// writes for the map, and that decodeChannels reads it back, with and
// without its fast path.
func TestChannelsCodec(t *testing.T) {
	t.Parallel()
	for _, locs := range []map[string]chanLoc{
		{},
		{"__root__": {version: "300.e42bcb1d", chain: 199, seq: 0, stored: true}},
		{"messages": {version: "00000000000000000000000000000002.0.1", chain: 3, seq: 41, stored: true}, "branch:to:agent": {version: "2.ab"}},
		{"<tag>&": {version: "é"}, "quote\"back\\slash": {version: "line\u2028", chain: -1, seq: 1 << 52, stored: true}, "": {version: ""}},
	} {
		oracle := map[string][]any{}
		for k, l := range locs {
			oracle[k] = []any{l.version}
			if l.stored {
				oracle[k] = append(oracle[k], l.chain, l.seq)
			}
		}
		want, err := json.Marshal(oracle)
		require.NoError(t, err)
		got := encodeChannels(locs)
		require.Equal(t, string(want), got)
		back, err := decodeChannels(got)
		require.NoError(t, err)
		require.Equal(t, locs, back)
	}
}

// FuzzDecodeChannels checks that decodeChannelsFast, where it reads a
// column, reads what json.Unmarshal reads.
func FuzzDecodeChannels(f *testing.F) {
	for _, s := range []string{
		`{}`, ` { } `, `{"__root__":["300.e42bcb1d",199,0]}`, `{"a":["1"],"b":["2",1,2]}`, `{"a":["1",1]}`,
		`{"a":["1",1.5,2]}`, `{"a":["1",01,2]}`, `{"a":["\u00e9"]}`, `{"a":["1"],}`, `{"a":["1",-0,1e3]}`,
		`{"a":["1"]} x`, `{"a":["1"],"a":["2",3,4]}`, `{"a":[1]}`, `{"a":["1",9999999999999999,1]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fast, ok := decodeChannelsFast(s)
		if !ok {
			return
		}
		slow := map[string]chanLoc{}
		require.NoError(t, json.Unmarshal([]byte(s), &slow), "the fast path read %q", s)
		require.Equal(t, slow, fast, "%q", s)
	})
}

// TestSplitMetadata checks that splitMetadata encodes each part as
// jsoncol.Object encodes the map of its keys, and leaves run_id out of the
// shared part only when it is the checkpoint's run id.
func TestSplitMetadata(t *testing.T) {
	t.Parallel()
	md := graphserver.Object{
		"source": "loop", "step": 1.0, "parents": map[string]any{}, "writes": map[string]any{"echo": map[string]any{"x": "<hi>"}},
		"graph_id": "echo", "assistant_id": "a", "thread_id": "t", "run_id": "r1", "user_id": "", "x-tag": []any{1.0, "é"},
	}
	for _, c := range []struct {
		md     graphserver.Object
		runID  string
		inline []string
		flag   bool
	}{
		{md, "r1", []string{"source", "step", "parents", "writes"}, true},
		{md, "r2", []string{"source", "step", "parents", "writes"}, false},
		{graphserver.Object{"step": -1.0}, "", []string{"step"}, false},
		{graphserver.Object{"graph_id": "g"}, "", nil, false},
		{nil, "", nil, false},
	} {
		in, sh := map[string]any{}, map[string]any{}
		for k, v := range c.md {
			switch {
			case slices.Contains(c.inline, k):
				in[k] = v
			case k == "run_id" && c.flag:
			default:
				sh[k] = v
			}
		}
		wantIn, err := jsoncol.Object(in)
		require.NoError(t, err)
		wantSh := ""
		if len(sh) > 0 {
			wantSh, err = jsoncol.Object(sh)
			require.NoError(t, err)
		}
		got, err := splitMetadata(c.md, c.runID)
		require.NoError(t, err)
		require.Equal(t, splitMD{inline: wantIn, shared: wantSh, runFlag: c.flag}, got)
	}
	_, err := splitMetadata(graphserver.Object{"step": math.NaN()}, "")
	require.Equal(t, graphserver.EINVALID, graphserver.ErrorCode(err), "%v", err)
}
