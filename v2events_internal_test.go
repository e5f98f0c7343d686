package graphserver

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNamespaceMatching reproduces the SDKs' matches_subscription
// (langgraph_sdk/stream/subscription.py, which mirrors langgraph-api's
// protocol/namespace.py): a prefix segment without ":" matches any task of
// that node, depth counts the segments past the prefix, custom matches
// every custom:<name>.
func TestNamespaceMatching(t *testing.T) {
	t.Parallel()
	depth0, depth1 := 0, 1
	ev := func(method string, data string, ns ...string) *ThreadEvent {
		if ns == nil {
			ns = []string{}
		}
		var d any
		_ = json.Unmarshal([]byte(data), &d)
		return &ThreadEvent{Method: method, Namespace: ns, channel: eventChannel(method, d)}
	}
	cases := []struct {
		name string
		req  ThreadEventsRequest
		ev   *ThreadEvent
		want bool
	}{
		{"channel", ThreadEventsRequest{Channels: []string{"values"}}, ev("values", `{}`), true},
		{"other channel", ThreadEventsRequest{Channels: []string{"values"}}, ev("updates", `{}`), false},
		{"input", ThreadEventsRequest{Channels: []string{"input"}}, ev("input.requested", `{}`), true},
		{"custom takes named", ThreadEventsRequest{Channels: []string{"custom"}}, ev("custom", `{"name":"progress"}`), true},
		{"named", ThreadEventsRequest{Channels: []string{"custom:progress"}}, ev("custom", `{"name":"progress"}`), true},
		{"other name", ThreadEventsRequest{Channels: []string{"custom:a2a"}}, ev("custom", `{"name":"progress"}`), false},
		{"unnamed", ThreadEventsRequest{Channels: []string{"custom:progress"}}, ev("custom", `"x"`), false},
		{"root prefix, any depth", ThreadEventsRequest{Channels: []string{"tasks"}, Namespaces: [][]string{{}}}, ev("tasks", `{}`, "tools:1"), true},
		{"root prefix, depth 0", ThreadEventsRequest{Channels: []string{"tasks"}, Namespaces: [][]string{{}}, Depth: &depth0}, ev("tasks", `{}`, "tools:1"), false},
		{"node name prefix", ThreadEventsRequest{Channels: []string{"tasks"}, Namespaces: [][]string{{"tools"}}, Depth: &depth1}, ev("tasks", `{}`, "tools:1", "model:2"), true},
		{"exact segment", ThreadEventsRequest{Channels: []string{"tasks"}, Namespaces: [][]string{{"tools:2"}}}, ev("tasks", `{}`, "tools:1"), false},
		{"too deep", ThreadEventsRequest{Channels: []string{"tasks"}, Namespaces: [][]string{{"tools"}}, Depth: &depth0}, ev("tasks", `{}`, "tools:1", "model:2"), false},
	}
	for _, c := range cases {
		require.Equal(t, c.want, c.req.matches(c.ev), c.name)
	}
}

// TestThreadEventsRequestBounds: every size a client sends is bounded.
func TestThreadEventsRequestBounds(t *testing.T) {
	t.Parallel()
	neg := -1
	since := int64(-1)
	long := make([]byte, MaxNamespaceSegmentBytes+1)
	for i := range long {
		long[i] = 'a'
	}
	many := make([]string, MaxSubscriptionChannels+1)
	for i := range many {
		many[i] = "values"
	}
	bad := []ThreadEventsRequest{
		{},
		{Channels: many},
		{Channels: []string{"nope"}},
		{Channels: []string{"custom:"}},
		{Channels: []string{"custom:" + string(long)}},
		{Channels: []string{"values"}, Namespaces: [][]string{{string(long)}}},
		{Channels: []string{"values"}, Namespaces: make([][]string, MaxSubscriptionNamespaces+1)},
		{Channels: []string{"values"}, Namespaces: [][]string{make([]string, MaxNamespaceSegments+1)}},
		{Channels: []string{"values"}, Depth: &neg},
		{Channels: []string{"values"}, Since: &since},
	}
	for i, r := range bad {
		require.Equal(t, EINVALID, ErrorCode(r.validate()), "request %d", i)
	}
	require.NoError(t, (&ThreadEventsRequest{Channels: []string{"values", "custom:progress"}, Namespaces: [][]string{{}, {"tools"}}}).validate())
}

// TestTranslatorMessages: streamed AI chunks become content blocks closed
// at the step's end; whole messages a node returns are not on the channel;
// an interrupt is input.requested once, then the run ends interrupted.
func TestTranslatorMessages(t *testing.T) {
	t.Parallel()
	var tr v2Translator
	var got []string
	feed := func(event, data, status string) {
		for _, r := range tr.translate(event, json.RawMessage(data), status) {
			b, _ := json.Marshal(r.data)
			got = append(got, r.method+" "+nsKey(r.ns)+" "+string(b))
		}
	}
	feed("metadata", `{"run_id":"r1","attempt":1}`, "")
	feed("messages", `[{"type":"AIMessageChunk","id":"m1","content":"Hel"},{"langgraph_node":"n"}]`, "")
	feed("messages", `[{"type":"AIMessageChunk","id":"m1","content":"lo"},{"langgraph_node":"n"}]`, "")
	feed("messages", `[{"type":"ai","id":"m2","content":"whole"},{"langgraph_node":"n"}]`, "")
	feed("values", `{"x":1}`, "")
	feed("values", `{"__interrupt__":[{"id":"i1","value":"q?"}]}`, "")
	feed("updates", `{"__interrupt__":[{"id":"i1","value":"q?"}]}`, "")
	feed("metadata", `{"status":"run_done","run_id":"r1"}`, RunSuccess)
	require.Equal(t, []string{
		`lifecycle  {"event":"running","run_id":"r1"}`,
		`messages  {"event":"message-start","id":"m1","metadata":{"langgraph_node":"n"},"role":"ai"}`,
		`messages  {"content":{"text":"","type":"text"},"event":"content-block-start","id":"m1","index":0}`,
		`messages  {"delta":{"text":"Hel","type":"text-delta"},"event":"content-block-delta","id":"m1","index":0}`,
		`messages  {"delta":{"text":"lo","type":"text-delta"},"event":"content-block-delta","id":"m1","index":0}`,
		`messages  {"content":{"text":"Hello","type":"text"},"event":"content-block-finish","id":"m1","index":0}`,
		`messages  {"event":"message-finish","id":"m1"}`,
		`values  {"x":1}`,
		`input.requested  {"interrupt_id":"i1","payload":"q?","value":"q?"}`,
		`lifecycle  {"event":"interrupted","run_id":"r1"}`,
	}, got)

	// A subgraph is announced once; tool events drop the tool node's own
	// task segment; a cancelled run fails.
	got = nil
	feed("metadata", `{"run_id":"r2","attempt":1}`, "")
	feed("tasks|tools:t1", `{"id":"a","name":"model","input":{},"triggers":[]}`, "")
	feed("custom|tools:t1", `{"name":"x"}`, "")
	feed("tools|tools:t1", `{"event":"tool-started","tool_call_id":"c"}`, "")
	feed("metadata", `{"status":"run_done","run_id":"r2"}`, RunInterrupted)
	require.Equal(t, []string{
		`lifecycle  {"event":"running","run_id":"r2"}`,
		`lifecycle tools:t1 {"event":"started","graph_name":"tools"}`,
		`tasks tools:t1 {"id":"a","name":"model","input":{},"triggers":[]}`,
		`custom tools:t1 {"name":"x"}`,
		`tools  {"event":"tool-started","tool_call_id":"c"}`,
		`lifecycle  {"error":"Run was cancelled.","event":"failed","run_id":"r2"}`,
	}, got)
}
