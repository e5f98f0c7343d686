package record_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver/record"
)

// jsonValues are values of every kind AppendJSON encodes itself, and some
// it leaves to json.Marshal, with the strings encoding/json escapes.
var jsonValues = []any{
	nil, true, false, "", "plain", `quote " backslash \ slash /`, "<b>&amp;</b>", "tab\tnew\nline\rcr\bbs\fff\x00\x1f\x7f",
	"é ü 漢字 🎉", "line\u2028sep\u2029para", "bad \xff utf8 \xe2\x80", float64(0), math.Copysign(0, -1), 1.0, -1.5, 1e20, 1e21,
	123456789012345680000.0, 1e-6, 1e-7, -2.5e-9, 1.7976931348623157e308, 5e-324, 0.1, 3, int64(-7), []any{}, []any(nil),
	[]any{1.0, "x", nil, []any{true}}, map[string]any{}, map[string]any(nil), record.Object(nil), record.Object{"z": 1.0},
	map[string]any{"b": 1.0, "a": map[string]any{"<k>": "v", "": []any{}}, "A": "upper", "é": "accent", "a\x00": 0.0},
	[]string{"typed", "slice"}, []string(nil), map[string]string{"b": "<2>", "a": "1"}, map[string]string(nil),
	map[string]int{"z": -3, "y": 0, "x\u2028": 1 << 40}, map[string]int(nil), json.RawMessage(nil),
	map[string]json.RawMessage{"r": json.RawMessage(` [ "<x>" ] `), "": json.RawMessage(`1`)}, map[string]json.RawMessage(nil), struct {
		X int `json:"x"`
	}{1}, json.RawMessage(` { "raw" : [1, 2] } `), time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
}

// TestObjectAppendJSON checks that an Object encodes byte for byte as
// json.Marshal encodes the same map.
func TestObjectAppendJSON(t *testing.T) {
	t.Parallel()
	for i, v := range jsonValues {
		o := record.Object{"v": v, "n": i, "nested": map[string]any{"v": v, "list": []any{v, v}}}
		want, err := json.Marshal(map[string]any{"v": v, "n": i, "nested": map[string]any{"v": v, "list": []any{v, v}}})
		require.NoError(t, err)
		got, err := o.AppendJSON([]byte("prefix"))
		require.NoError(t, err)
		require.Equal(t, "prefix"+string(want), string(got), "value %d: %#v", i, v)
		got, err = json.Marshal(o)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
	got, err := record.Object(nil).AppendJSON(nil)
	require.NoError(t, err)
	require.Equal(t, "{}", string(got))

	for _, bad := range []any{math.NaN(), math.Inf(1), make(chan int)} {
		_, err := record.Object{"x": bad}.AppendJSON(nil)
		_, want := json.Marshal(map[string]any{"x": bad})
		require.Equal(t, want.Error(), err.Error())
	}
	// A cyclic value is json.Marshal's error, not a stack overflow.
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	_, err = record.Object(cyclic).AppendJSON(nil)
	require.Error(t, err)
}

// TestAppendJSON checks that AppendJSON encodes every value byte for byte
// as json.Marshal does, and fails where it fails.
func TestAppendJSON(t *testing.T) {
	t.Parallel()
	for i, v := range jsonValues {
		want, err := json.Marshal(v)
		require.NoError(t, err)
		got, err := record.AppendJSON([]byte("prefix"), v)
		require.NoError(t, err)
		require.Equal(t, "prefix"+string(want), string(got), "value %d: %#v", i, v)
		got, err = record.MarshalJSON(v)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "value %d: %#v", i, v)
	}
	for _, bad := range []any{math.NaN(), json.RawMessage(`{"open":`), []any{make(chan int)}, map[string]json.RawMessage{"bad": json.RawMessage(`[`)}} {
		_, want := json.Marshal(bad)
		require.Error(t, want)
		_, err := record.AppendJSON(nil, bad)
		require.EqualError(t, err, want.Error())
		_, err = record.MarshalJSON(bad)
		require.EqualError(t, err, want.Error())
	}
	// A result is the caller's: the pooled buffer is not handed out.
	a, err := record.MarshalJSON(map[string]any{"a": "first"})
	require.NoError(t, err)
	_, err = record.MarshalJSON(map[string]any{"b": "second"})
	require.NoError(t, err)
	require.Equal(t, `{"a":"first"}`, string(a))

	// EncodeString shares MarshalJSON's buffers: its string is the
	// appended bytes, and an error is appendTo's, with no string.
	for i, v := range jsonValues {
		want, err := json.Marshal(v)
		require.NoError(t, err)
		got, err := record.EncodeString(func(b []byte) ([]byte, error) { return record.AppendJSON(b, v) })
		require.NoError(t, err)
		require.Equal(t, string(want), got, "value %d: %#v", i, v)
	}
	// AppendJSONKey opens the object at its first member and separates
	// the others: the members of a map in key order are json.Marshal's.
	m := map[string]any{"<a>": 1.0, "b\u2028": "x", "c": []any{nil}}
	var obj []byte
	for _, k := range []string{"<a>", "b\u2028", "c"} {
		obj, err = record.AppendJSON(record.AppendJSONKey(obj, k), m[k])
		require.NoError(t, err)
	}
	want, err := json.Marshal(m)
	require.NoError(t, err)
	require.Equal(t, string(want), string(record.EndJSONObject(obj)))
	require.Equal(t, "{}", string(record.EndJSONObject(nil)), "no member: an empty object")

	errAppend := errors.New("append failed")
	s, err := record.EncodeString(func(b []byte) ([]byte, error) { return append(b, "partial"...), errAppend })
	require.ErrorIs(t, err, errAppend)
	require.Empty(t, s)
	big := strings.Repeat("x", 100<<10) // past the pool's bound: left to the collector
	s, err = record.EncodeString(func(b []byte) ([]byte, error) { return append(b, big...), nil })
	require.NoError(t, err)
	require.Equal(t, big, s)
	require.Equal(t, `{"a":"first"}`, string(a), "an earlier result is not overwritten")
}

// plainThread is record.Thread encoded by reflection, as before
// Thread.AppendJSON.
type plainThread struct {
	ThreadID       string                        `json:"thread_id"`
	CreatedAt      time.Time                     `json:"created_at"`
	UpdatedAt      time.Time                     `json:"updated_at"`
	StateUpdatedAt time.Time                     `json:"state_updated_at"`
	Metadata       map[string]any                `json:"metadata"`
	Config         map[string]any                `json:"config"`
	Context        map[string]any                `json:"context"`
	Status         string                        `json:"status"`
	Values         json.RawMessage               `json:"values"`
	Interrupts     map[string][]record.Interrupt `json:"interrupts"`
	Error          json.RawMessage               `json:"error"`
	TTL            *record.ThreadTTLInfo         `json:"ttl,omitempty"`
	Extracted      map[string]any                `json:"extracted,omitempty"`
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func TestThreadAppendJSON(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 24, 3, 53, 9, 123456000, time.UTC)
	exp := now.Add(time.Hour)
	threads := []record.Thread{
		{ThreadID: "1f0c2b9e-0000-7000-8000-000000000001", CreatedAt: now, UpdatedAt: now, StateUpdatedAt: now, Status: "idle"},
		{ThreadID: "<id>&", CreatedAt: now.In(time.FixedZone("x", 5*3600+30*60)), UpdatedAt: now.Truncate(time.Second),
			StateUpdatedAt: time.Time{}, Metadata: record.Object{"graph_id": "echo", "owner": "<ann>"}, Config: record.Object{"configurable": map[string]any{"k": 1.0}},
			Context: record.Object{}, Status: "interrupted", Values: json.RawMessage("{\n  \"messages\": [ \"<hi>\", \"\u2028\" ]\n}"),
			Interrupts: map[string][]record.Interrupt{"task": {{Value: "v", ID: "i"}}}, Error: json.RawMessage(`{"error": "E", "message": "m"}`),
			TTL: &record.ThreadTTLInfo{Strategy: "delete", TTLMinutes: 1.5, ExpiresAt: &exp}, Extracted: map[string]any{"last": nil, "a": []any{1.0}}},
		{ThreadID: "x", Values: json.RawMessage("null"), Interrupts: map[string][]record.Interrupt{}, Extracted: map[string]any{}},
	}
	for i, th := range threads {
		want, err := json.Marshal(plainThread{th.ThreadID, th.CreatedAt, th.UpdatedAt, th.StateUpdatedAt, orEmpty(th.Metadata), orEmpty(th.Config),
			orEmpty(th.Context), th.Status, th.Values, func() map[string][]record.Interrupt {
				if th.Interrupts == nil {
					return map[string][]record.Interrupt{}
				}
				return th.Interrupts
			}(), th.Error, th.TTL, th.Extracted})
		require.NoError(t, err)
		got, err := json.Marshal(th)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "thread %d", i)
		got, err = th.AppendJSON(nil)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "thread %d", i)
	}
	got, err := (*record.Thread)(nil).AppendJSON(nil)
	require.NoError(t, err)
	require.Equal(t, "null", string(got))

	_, err = (&record.Thread{Values: json.RawMessage(`{bad`)}).AppendJSON(nil)
	require.Error(t, err)
	_, err = (&record.Thread{CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}).AppendJSON(nil)
	require.Error(t, err)
}

func TestItemAppendJSON(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 24, 3, 53, 9, 123000000, time.UTC)
	score := 0.25
	for i, it := range []record.SearchItem{
		{Item: record.Item{Namespace: []string{"a", "<b>"}, Key: "k&", Value: record.Object{"text": "the quick brown fox", "n": 1.0}, CreatedAt: now, UpdatedAt: now}},
		{Item: record.Item{Namespace: []string{}, Key: "k"}, Score: &score},
		{},
	} {
		type plainItem struct {
			Namespace []string       `json:"namespace"`
			Key       string         `json:"key"`
			Value     map[string]any `json:"value"`
			CreatedAt time.Time      `json:"created_at"`
			UpdatedAt time.Time      `json:"updated_at"`
		}
		plain := plainItem{it.Namespace, it.Key, orEmpty(it.Value), it.CreatedAt, it.UpdatedAt}
		want, err := json.Marshal(plain)
		require.NoError(t, err)
		got, err := it.Item.AppendJSON(nil)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "item %d", i)

		want, err = json.Marshal(struct {
			plainItem
			Score *float64 `json:"score"`
		}{plain, it.Score})
		require.NoError(t, err)
		got, err = it.AppendJSON(nil)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "search item %d", i)
		got, err = json.Marshal(it)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "search item %d", i)
	}
	got, err := (*record.Item)(nil).AppendJSON(nil)
	require.NoError(t, err)
	require.Equal(t, "null", string(got))
}

// FuzzObjectAppendJSON checks, on any JSON document decoded as the HTTP API
// decodes request bodies (float64 numbers, and json.Number too), and on
// strings of any bytes, that Object.AppendJSON gives exactly what
// json.Marshal gives.
func FuzzObjectAppendJSON(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `[1,"a",{"b":[true,null]}]`, `{"<k>":"é\u2028","n":-1.5e-7}`, `"\u0000\ud800"`, `1e21`, `[[[[[[]]]]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		for _, useNumber := range []bool{false, true} {
			var v any
			dec := json.NewDecoder(bytes.NewReader(doc))
			if useNumber {
				dec.UseNumber()
			}
			if dec.Decode(&v) != nil {
				v = string(doc) // not JSON: encode its bytes as a string
			}
			want, wantErr := json.Marshal(map[string]any{"v": v})
			got, err := record.Object{"v": v}.AppendJSON(nil)
			if wantErr != nil {
				require.Error(t, err)
				continue
			}
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		}
	})
}

// TestRunKwargsAppendJSON checks that run kwargs encode byte for byte as
// json.Marshal encodes them.
func TestRunKwargsAppendJSON(t *testing.T) {
	t.Parallel()
	hook := "https://example.com/<hook>?a=1&b=2"
	for i, k := range []record.RunKwargs{
		{},
		{Input: json.RawMessage("null"), Config: record.Object{}, Context: record.Object{}, StreamMode: []string{}, FeedbackKeys: []string{}},
		{Input: json.RawMessage(" {\n \"messages\" : [ {\"role\": \"user\", \"content\": \"<hi> & \u2028\"} ] } "),
			Command: &record.RunCommand{Resume: json.RawMessage(` "yes" `), Goto: json.RawMessage(`["a"]`)},
			Config: record.Object{"configurable": map[string]any{"thread_id": "t", "user_id": nil, "n": 1.5, "list": []any{"x", true}},
				"metadata": record.Object{"graph_id": "g", "é": "<>"}, "recursion_limit": 25.0},
			Context: record.Object{"k": "v"}, StreamMode: []string{"values", "messages-tuple"},
			InterruptBefore: record.Breakpoints{"*"}, InterruptAfter: record.Breakpoints{"a", "b<"}, Webhook: &hook,
			FeedbackKeys: []string{"score"}, Temporary: true, Subgraphs: true, Resumable: true, Durability: "async"},
		{Input: json.RawMessage(`[1,2]`), InterruptBefore: record.Breakpoints{}, InterruptAfter: record.Breakpoints{"*", "x"}, Durability: "exit"},
		{Input: json.RawMessage("[\"\u2029\"]")}, {Input: json.RawMessage(`">"`)}, {Input: json.RawMessage("\"é \u2027 \u202a\"")},
	} {
		want, err := json.Marshal(k)
		require.NoError(t, err)
		got, err := k.AppendJSON([]byte("prefix"))
		require.NoError(t, err)
		require.Equal(t, "prefix"+string(want), string(got), "kwargs %d", i)
	}
	_, err := (&record.RunKwargs{Input: json.RawMessage(`{bad`)}).AppendJSON(nil)
	require.Error(t, err)
}
