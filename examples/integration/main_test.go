package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/internal/sse"
)

// These tests drive the protocol-v2 endpoints over HTTP as the SDKs'
// client.threads.stream does (a lifecycle watcher opened on a thread id
// made up by the client, run.start, streams opened with since =
// applied_through_seq, input.respond), on the integration graphs whose
// expected events come from LangGraph's Python server (see
// sdk-integration-graphs.md §5).

// v2Event is a decoded protocol-v2 event.
type v2Event struct {
	Type    string `json:"type"`
	EventID string `json:"event_id"`
	Seq     int64  `json:"seq"`
	Method  string `json:"method"`
	Params  struct {
		Namespace []string       `json:"namespace"`
		Timestamp int64          `json:"timestamp"`
		Data      map[string]any `json:"data"`
		RawData   json.RawMessage
	} `json:"params"`
}

// testServer serves the integration graphs over httptest.
func testServer(t *testing.T) string {
	t.Helper()
	ctx := t.Context()
	srv, db, err := newServer(ctx, filepath.Join(t.TempDir(), "gs.db"), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	ts := httptest.NewServer(httpapi.New(srv, httpapi.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		require.NoError(t, srv.Close(cctx))
		db.Close()
	})
	return ts.URL
}

// command posts one command and returns its reply.
func command(t *testing.T, base, threadID string, id int, method string, params any) map[string]any {
	t.Helper()
	body, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	require.NoError(t, err)
	resp, err := http.Post(base+"/threads/"+threadID+"/commands", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %v", method, out)
	require.Equal(t, "success", out["type"], "%v", out)
	require.EqualValues(t, id, out["id"])
	return out
}

// eventStream is an open SSE event stream.
type eventStream struct {
	ch     chan v2Event
	cancel context.CancelFunc
}

// openEvents opens POST /threads/{id}/stream/events with req and reads it
// in the background.
func openEvents(t *testing.T, base, threadID string, req map[string]any) *eventStream {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	body, err := json.Marshal(req)
	require.NoError(t, err)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/threads/"+threadID+"/stream/events", bytes.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(hr)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/event-stream")
	es := &eventStream{ch: make(chan v2Event, 1000), cancel: cancel}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer resp.Body.Close()
		dec := sse.NewDecoder(resp.Body, 1<<20)
		for {
			f, err := dec.Next()
			if err != nil {
				close(es.ch)
				return
			}
			var ev v2Event
			if json.Unmarshal(f.Data, &ev) != nil {
				continue
			}
			var raw struct {
				Params struct {
					Data json.RawMessage `json:"data"`
				} `json:"params"`
			}
			_ = json.Unmarshal(f.Data, &raw)
			ev.Params.RawData = raw.Params.Data
			es.ch <- ev
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return es
}

// until reads events up to and including the first one stop accepts.
func (es *eventStream) until(t *testing.T, stop func(v2Event) bool) []v2Event {
	t.Helper()
	var out []v2Event
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-es.ch:
			require.True(t, ok, "the stream ended after %d events", len(out))
			out = append(out, ev)
			if stop(ev) {
				return out
			}
		case <-timeout:
			t.Fatalf("no stop event after %d events: %v", len(out), methods(out))
		}
	}
}

// quiet asserts that no event comes within d.
func (es *eventStream) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case ev, ok := <-es.ch:
		if ok {
			t.Fatalf("unexpected event %s %v", ev.Method, ev.Params.Data)
		}
	case <-time.After(d):
	}
}

func methods(evs []v2Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Method+":"+strings.Join(e.Params.Namespace, "/")+":"+string(e.Params.RawData))
	}
	return out
}

func rootLifecycle(phases ...string) func(v2Event) bool {
	return func(ev v2Event) bool {
		if ev.Method != "lifecycle" || len(ev.Params.Namespace) != 0 {
			return false
		}
		for _, p := range phases {
			if ev.Params.Data["event"] == p {
				return true
			}
		}
		return false
	}
}

func isInput(ev v2Event) bool { return ev.Method == "input.requested" }

var agentInput = map[string]any{"messages": []any{}, "value": "init", "items": []any{}}

// TestAgentInterruptRespond is the agent's whole path: the client watches
// a thread that does not exist yet, starts a run (which creates it),
// subscribes after run.start with since = applied_through_seq and loses
// none of the five progress events before the interrupt; the streamed
// message's deltas join to "Hello, world!" at the root namespace; no child
// lifecycle shows for the root graph's plain nodes; input.respond resumes
// and the run completes with the terminal values. A second subscriber
// opened with since=0 (full replay) got the same events, each once.
func TestAgentInterruptRespond(t *testing.T) {
	t.Parallel()
	base := testServer(t)
	thread := uuid.NewString()
	watcher := openEvents(t, base, thread, map[string]any{"channels": []string{"lifecycle", "input"}})

	rep := command(t, base, thread, 1, "run.start", map[string]any{"assistant_id": "agent", "input": agentInput})
	runID := rep["result"].(map[string]any)["run_id"].(string)
	require.NotEmpty(t, runID)
	since := rep["meta"].(map[string]any)["applied_through_seq"].(float64)

	// The thread exists once run.start answered.
	resp, err := http.Get(base + "/threads/" + thread + "/state")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	all := []string{"values", "updates", "messages", "tools", "lifecycle", "input", "tasks", "custom", "checkpoints"}
	live := openEvents(t, base, thread, map[string]any{"channels": all, "since": since})
	first := live.until(t, isInput)

	var steps []string
	var text strings.Builder
	starts := 0
	for _, ev := range first {
		switch ev.Method {
		case "custom":
			require.Empty(t, ev.Params.Namespace)
			require.Equal(t, "progress", ev.Params.Data["name"])
			steps = append(steps, ev.Params.Data["step"].(string))
		case "messages":
			require.Empty(t, ev.Params.Namespace, "root-level node messages are at []")
			switch ev.Params.Data["event"] {
			case "message-start":
				starts++
				require.Equal(t, "ai-msg-1", ev.Params.Data["id"])
				require.Equal(t, "stream_message", ev.Params.Data["metadata"].(map[string]any)["langgraph_node"])
			case "content-block-delta":
				text.WriteString(ev.Params.Data["delta"].(map[string]any)["text"].(string))
			}
		case "lifecycle":
			if len(ev.Params.Namespace) == 1 {
				t.Fatalf("a plain node announced a child: %v", ev.Params.Data)
			}
		case "tasks":
			require.Empty(t, ev.Params.Namespace)
		case "tools":
			t.Fatalf("call_tool's messages are state writes, not tool events: %v", ev.Params.Data)
		}
	}
	require.Equal(t, []string{"stream_message", "stream_message", "call_tool", "call_tool", "ask_human"}, steps)
	require.Equal(t, 1, starts)
	require.Equal(t, "Hello, world!", text.String())
	in := first[len(first)-1]
	require.Empty(t, in.Params.Namespace)
	require.Equal(t, "Are we good?", in.Params.Data["value"])
	interruptID := in.Params.Data["interrupt_id"].(string)
	require.NotEmpty(t, interruptID)

	// The watcher saw running, then the interrupt.
	w := watcher.until(t, isInput)
	require.Equal(t, "running", w[0].Params.Data["event"])
	require.Equal(t, interruptID, w[len(w)-1].Params.Data["interrupt_id"])
	watcher.until(t, rootLifecycle("interrupted"))

	command(t, base, thread, 2, "input.respond", map[string]any{"interrupt_id": interruptID, "namespace": []string{}, "response": "yes"})
	second := live.until(t, rootLifecycle("completed", "failed"))
	require.Equal(t, "completed", second[len(second)-1].Params.Data["event"], "%v", methods(second))
	var resumed []string
	for _, ev := range second {
		if ev.Method == "custom" && len(ev.Params.Namespace) == 0 {
			resumed = append(resumed, ev.Params.Data["step"].(string)+"/"+ev.Params.Data["phase"].(string))
		}
	}
	// ask_human runs again from its start (LangGraph re-executes an
	// interrupted node on resume).
	require.Equal(t, []string{"ask_human/start", "ask_human/end", "run_subgraph/start", "run_subgraph/end"}, resumed)
	watcher.until(t, rootLifecycle("completed"))

	var state struct {
		Values map[string]any `json:"values"`
	}
	resp, err = http.Get(base + "/threads/" + thread + "/state")
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&state))
	resp.Body.Close()
	require.Equal(t, []any{"streamed", "tool", "asked", "sub"}, state.Values["items"])
	require.Equal(t, "x", state.Values["value"])

	// A full replay holds exactly what the live stream got, in order.
	replay := openEvents(t, base, thread, map[string]any{"channels": all, "since": 0})
	got := replay.until(t, func(ev v2Event) bool { return ev.EventID == second[len(second)-1].EventID })
	liveAll := append(first, second...)
	require.Equal(t, ids(liveAll), ids(got[len(got)-len(liveAll):]))
	seen := map[string]bool{}
	for _, ev := range got {
		require.False(t, seen[ev.EventID], "event %s twice", ev.EventID)
		seen[ev.EventID] = true
	}
	live.quiet(t, 200*time.Millisecond)
}

func ids(evs []v2Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.EventID
	}
	return out
}

// TestToolsAgentToolsAtRoot: a real tool call through the agent loop puts
// tool-started and tool-finished on the tools channel at the root
// namespace (LangGraph's Python server drops the tool node's own task
// segment), then the run completes.
func TestToolsAgentToolsAtRoot(t *testing.T) {
	t.Parallel()
	base := testServer(t)
	thread := uuid.NewString()
	rep := command(t, base, thread, 1, "run.start", map[string]any{"assistant_id": "tools_agent",
		"input": map[string]any{"messages": []any{map[string]any{"role": "human", "content": "search for v3"}}}})
	since := rep["meta"].(map[string]any)["applied_through_seq"]
	es := openEvents(t, base, thread, map[string]any{"channels": []string{"tools", "lifecycle"}, "namespaces": [][]string{{}}, "depth": 0, "since": since})
	evs := es.until(t, rootLifecycle("completed", "failed"))
	var tools []map[string]any
	for _, ev := range evs {
		require.Empty(t, ev.Params.Namespace, "depth 0 keeps only the root")
		if ev.Method == "tools" {
			tools = append(tools, ev.Params.Data)
		}
	}
	require.Len(t, tools, 2, "%v", methods(evs))
	require.Equal(t, "tool-started", tools[0]["event"])
	require.Equal(t, "tc-1", tools[0]["tool_call_id"])
	require.Equal(t, "search", tools[0]["tool_name"])
	require.Equal(t, map[string]any{"query": "v3"}, tools[0]["input"])
	require.Equal(t, "tool-finished", tools[1]["event"])
	require.Equal(t, "success", tools[1]["output"].(map[string]any)["status"])
	require.Equal(t, "result for 'v3'", tools[1]["output"].(map[string]any)["content"])
	require.Equal(t, "completed", evs[len(evs)-1].Params.Data["event"])
}

// TestDeepAgentSubagentNamespace: the researcher subagent, run by the task
// tool, shows as a child of one segment tools:<task_id>, announced by a
// lifecycle started (and its tasks) before the run ends.
func TestDeepAgentSubagentNamespace(t *testing.T) {
	t.Parallel()
	base := testServer(t)
	thread := uuid.NewString()
	rep := command(t, base, thread, 1, "run.start", map[string]any{"assistant_id": "deep_agent",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "research the v3 spec"}}}})
	since := rep["meta"].(map[string]any)["applied_through_seq"]
	es := openEvents(t, base, thread, map[string]any{"channels": []string{"messages", "tasks", "tools", "lifecycle"}, "namespaces": [][]string{{}}, "since": since})
	evs := es.until(t, rootLifecycle("completed", "failed"))
	require.Equal(t, "completed", evs[len(evs)-1].Params.Data["event"])
	var child []string
	var childText strings.Builder
	for _, ev := range evs {
		ns := ev.Params.Namespace
		if ev.Method == "lifecycle" && len(ns) == 1 && ev.Params.Data["event"] == "started" {
			child = ns
		}
		if ev.Method == "messages" && len(ns) == 1 && ev.Params.Data["event"] == "content-block-delta" {
			childText.WriteString(ev.Params.Data["delta"].(map[string]any)["text"].(string))
		}
	}
	require.Len(t, child, 1, "%v", methods(evs))
	require.True(t, strings.HasPrefix(child[0], "tools:"), child[0])
	require.Equal(t, "v3 streaming is event-typed and thread-centric.", childText.String())

	var state struct {
		Values map[string]any `json:"values"`
	}
	resp, err := http.Get(base + "/threads/" + thread + "/state")
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&state))
	resp.Body.Close()
	msgs := state.Values["messages"].([]any)
	require.Len(t, msgs, 4)
	require.Equal(t, "Research complete.", msgs[3].(map[string]any)["content"])
}

// TestFactoryAgentAccessContext: the factory builds the graph per call and
// is told why: a run sees threads.create_run, for execution.
func TestFactoryAgentAccessContext(t *testing.T) {
	t.Parallel()
	base := testServer(t)
	body := `{"assistant_id":"factory_agent","input":{"text":"hi"}}`
	resp, err := http.Post(base+"/runs/wait", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	resp.Body.Close()
	require.Equal(t, map[string]any{"text": "hi echoed", "access_context": "threads.create_run", "is_for_execution": true}, out)
	resp, err = http.Get(base + "/assistants/factory_agent/graph")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestCancelEndsStream: cancelling the run run.start started (an ordinary
// run) ends it with a root lifecycle failed; two subscribers each get
// every event once, the same as a full replay.
func TestCancelEndsStream(t *testing.T) {
	t.Parallel()
	base := testServer(t)
	thread := uuid.NewString()
	a := openEvents(t, base, thread, map[string]any{"channels": []string{"lifecycle", "input", "custom", "values"}})
	b := openEvents(t, base, thread, map[string]any{"channels": []string{"lifecycle", "input", "custom", "values"}})
	rep := command(t, base, thread, 1, "run.start", map[string]any{"assistant_id": "agent", "input": agentInput})
	runID := rep["result"].(map[string]any)["run_id"].(string)
	ea := a.until(t, isInput)
	eb := b.until(t, isInput)
	require.Equal(t, ids(ea), ids(eb))
	a.until(t, rootLifecycle("interrupted"))
	b.until(t, rootLifecycle("interrupted"))

	// Resume, and cancel the resumed run.
	rep = command(t, base, thread, 2, "run.start", map[string]any{"assistant_id": "agent", "input": "yes"})
	runID2 := rep["result"].(map[string]any)["run_id"].(string)
	require.NotEqual(t, runID, runID2)
	resp, err := http.Post(base+"/threads/"+thread+"/runs/"+runID2+"/cancel", "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	ea2 := a.until(t, rootLifecycle("completed", "failed"))
	eb2 := b.until(t, rootLifecycle("completed", "failed"))
	require.Equal(t, ids(ea2), ids(eb2))
}

// wsConn is a protocol-v2 WebSocket client, as the JS SDK's
// ProtocolWebSocketTransportAdapter is: commands and replies over the
// socket, events as frames.
type wsConn struct {
	c       *websocket.Conn
	events  chan v2Event
	replies chan map[string]any
}

func dialWS(t *testing.T, base, threadID string) *wsConn {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/threads/"+threadID+"/stream/events", nil)
	require.NoError(t, err)
	ws := &wsConn{c: c, events: make(chan v2Event, 1000), replies: make(chan map[string]any, 10)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				close(ws.events)
				return
			}
			var m map[string]any
			if json.Unmarshal(b, &m) != nil {
				continue
			}
			if m["type"] == "event" {
				var ev v2Event
				_ = json.Unmarshal(b, &ev)
				ws.events <- ev
				continue
			}
			ws.replies <- m
		}
	}()
	t.Cleanup(func() { cancel(); c.CloseNow(); <-done })
	return ws
}

func (ws *wsConn) send(t *testing.T, id int, method string, params any) map[string]any {
	t.Helper()
	b, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	require.NoError(t, err)
	require.NoError(t, ws.c.Write(t.Context(), websocket.MessageText, b))
	select {
	case r := <-ws.replies:
		require.EqualValues(t, id, r["id"])
		require.Equal(t, "success", r["type"], "%v", r)
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no reply")
		return nil
	}
}

func (ws *wsConn) until(t *testing.T, stop func(v2Event) bool) []v2Event {
	t.Helper()
	es := &eventStream{ch: ws.events}
	return es.until(t, stop)
}

// TestWebSocket: the v2 WebSocket transport (streamProtocol
// "v2-websocket"): subscription.subscribe, then run.start over the same
// socket; events as frames; two subscriptions on one socket matching the
// same event send it once; a second socket on the thread gets every event
// too; input.respond resumes to completion.
func TestWebSocket(t *testing.T) {
	t.Parallel()
	base := testServer(t)
	thread := uuid.NewString()
	a := dialWS(t, base, thread)
	b := dialWS(t, base, thread)
	sub1 := a.send(t, 1, "subscription.subscribe", map[string]any{"channels": []string{"lifecycle", "input"}})["result"].(map[string]any)["subscription_id"].(string)
	a.send(t, 2, "subscription.subscribe", map[string]any{"channels": []string{"lifecycle", "custom"}})
	b.send(t, 1, "subscription.subscribe", map[string]any{"channels": []string{"lifecycle", "input", "custom"}})
	a.send(t, 3, "run.start", map[string]any{"assistant_id": "agent", "input": agentInput})
	// Each subscription's events come in order; across the subscriptions
	// of one socket they may interleave (socket a's input.requested can
	// follow the interrupted lifecycle its other subscription sent), so
	// read until both are in and compare the sets.
	untilBoth := func() func(v2Event) bool {
		var interrupted, input bool
		return func(ev v2Event) bool {
			interrupted = interrupted || rootLifecycle("interrupted")(ev)
			input = input || isInput(ev)
			return interrupted && input
		}
	}
	ea := a.until(t, untilBoth())
	eb := b.until(t, untilBoth())
	require.ElementsMatch(t, ids(eb), ids(ea), "each socket gets every event once")
	require.Len(t, eb, len(ea))
	var intr string
	customs := 0
	for _, ev := range ea {
		if ev.Method == "input.requested" {
			intr = ev.Params.Data["interrupt_id"].(string)
		}
		if ev.Method == "custom" {
			customs++
		}
	}
	require.Equal(t, 5, customs)
	require.NotEmpty(t, intr)
	a.send(t, 4, "input.respond", map[string]any{"interrupt_id": intr, "namespace": []string{}, "response": "yes"})
	done := a.until(t, rootLifecycle("completed", "failed"))
	require.Equal(t, "completed", done[len(done)-1].Params.Data["event"])
	b.until(t, rootLifecycle("completed"))

	// Unsubscribing twice: the second is no_such_subscription.
	r := a.send(t, 5, "subscription.unsubscribe", map[string]any{"subscription_id": sub1})
	require.Equal(t, "success", r["type"])
	raw, _ := json.Marshal(map[string]any{"id": 6, "method": "subscription.unsubscribe", "params": map[string]any{"subscription_id": sub1}})
	require.NoError(t, a.c.Write(t.Context(), websocket.MessageText, raw))
	rep := <-a.replies
	require.Equal(t, "error", rep["type"])
	require.Equal(t, "no_such_subscription", rep["error"])

	// Without an upgrade the route says so.
	resp, err := http.Get(base + "/threads/" + thread + "/stream/events")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUpgradeRequired, resp.StatusCode)
}

// wsReply sends a command on the socket and returns its reply, success or
// error.
func (ws *wsConn) reply(t *testing.T, id int, method string, params any) map[string]any {
	t.Helper()
	b, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	require.NoError(t, err)
	require.NoError(t, ws.c.Write(t.Context(), websocket.MessageText, b))
	select {
	case r := <-ws.replies:
		require.EqualValues(t, id, r["id"])
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no reply")
		return nil
	}
}

// TestWebSocketReconnect: subscription.reconnect (protocol spec: "For
// WebSocket, subscription.reconnect serves the same purpose" as since on
// SSE). A socket subscribes, starts the agent and breaks after a few
// events; a new socket restores the subscription by id with the last event
// id it processed and gets the rest: the events before the break plus
// those after it are, in order, exactly a full replay's, none lost or
// repeated; the run then resumes to completion on the new socket.
func TestWebSocketReconnect(t *testing.T) {
	t.Parallel()
	base := testServer(t)
	thread := uuid.NewString()
	filter := map[string]any{"channels": []string{"lifecycle", "input", "custom", "messages", "values"}}
	a := dialWS(t, base, thread)
	sub := a.send(t, 1, "subscription.subscribe", filter)["result"].(map[string]any)["subscription_id"].(string)
	runID := a.send(t, 2, "run.start", map[string]any{"assistant_id": "agent", "input": agentInput})["result"].(map[string]any)["run_id"].(string)
	n := 0
	before := a.until(t, func(v2Event) bool { n++; return n == 4 })
	a.c.CloseNow()

	// Wait for the interrupt on a full replay (since 0), the reference.
	full := openEvents(t, base, thread, map[string]any{"channels": filter["channels"], "since": 0}).until(t, rootLifecycle("interrupted"))

	b := dialWS(t, base, thread)
	r := b.send(t, 1, "subscription.reconnect", map[string]any{"run_id": runID, "last_event_id": before[len(before)-1].EventID, "subscriptions": []string{sub, "sub-unknown"}})
	res := r["result"].(map[string]any)
	require.Equal(t, false, res["restored"], "one of the two is unknown")
	require.Equal(t, []any{sub}, res["subscriptions"])
	after := b.until(t, rootLifecycle("interrupted"))
	require.Equal(t, ids(full), append(ids(before), ids(after)...), "no event lost or repeated")

	// The restored subscription stays live: the resumed run's events come.
	var intr string
	for _, ev := range full {
		if ev.Method == "input.requested" {
			intr = ev.Params.Data["interrupt_id"].(string)
		}
	}
	b.send(t, 2, "input.respond", map[string]any{"interrupt_id": intr, "namespace": []string{}, "response": "yes"})
	done := b.until(t, rootLifecycle("completed", "failed"))
	require.Equal(t, "completed", done[len(done)-1].Params.Data["event"])

	// Restoring all that was asked for says restored; a subscription of
	// another thread is not restored here; bad params are refused.
	c := dialWS(t, base, thread)
	r = c.send(t, 1, "subscription.reconnect", map[string]any{"run_id": runID, "last_event_id": full[len(full)-1].EventID, "subscriptions": []string{sub}})
	require.Equal(t, true, r["result"].(map[string]any)["restored"])
	other := dialWS(t, base, uuid.NewString())
	r = other.reply(t, 1, "subscription.reconnect", map[string]any{"run_id": runID, "subscriptions": []string{sub}})
	require.Equal(t, "error", r["type"], "the run is not on that thread: %v", r)
	require.Equal(t, "no_such_run", r["error"])
	for _, bad := range []map[string]any{{}, {"run_id": runID, "last_event_id": "x"}, {"run_id": runID, "subscriptions": make([]string, 65)}} {
		r = c.reply(t, 2, "subscription.reconnect", bad)
		require.Equal(t, "invalid_argument", r["error"], "%v: %v", bad, r)
	}
}

// TestInputInject: input.inject {namespace: [], message} adds a message to
// a thread while its agent runs, as a run with input {messages: [message]}
// queued after the active one (the protocol's "unsolicited user input
// injection while the agent is running"). Bad params and a thread that
// waits at an interrupt are refused and change nothing.
func TestInputInject(t *testing.T) {
	t.Parallel()
	base := testServer(t)
	thread := uuid.NewString()
	ev := openEvents(t, base, thread, map[string]any{"channels": []string{"lifecycle"}})
	command(t, base, thread, 1, "run.start", map[string]any{"assistant_id": "tools_agent", "input": map[string]any{"messages": []any{map[string]any{"role": "human", "content": "search for v3"}}}})
	rep := command(t, base, thread, 2, "input.inject", map[string]any{"namespace": []string{}, "message": map[string]any{"role": "user", "content": "and be brief", "name": "ann"}})
	injected := rep["result"].(map[string]any)["run_id"].(string)
	first := ev.until(t, rootLifecycle("completed", "failed"))
	require.Equal(t, rep["result"], map[string]any{"run_id": injected})
	require.NotEqual(t, injected, first[len(first)-1].Params.Data["run_id"])
	done := ev.until(t, rootLifecycle("completed", "failed"))
	require.Equal(t, "completed", done[len(done)-1].Params.Data["event"])
	require.Equal(t, injected, done[len(done)-1].Params.Data["run_id"], "the injected run ran after the first")

	var state struct {
		Values struct {
			Messages []map[string]any `json:"messages"`
		} `json:"values"`
	}
	getJSON(t, base+"/threads/"+thread+"/state", &state)
	var human []string
	for _, m := range state.Values.Messages {
		if m["type"] == "human" {
			human = append(human, m["content"].(string))
			if m["content"] == "and be brief" {
				require.Equal(t, "ann", m["name"])
			}
		}
	}
	require.Equal(t, []string{"search for v3", "and be brief"}, human)

	bad := []struct {
		thread string
		params map[string]any
		code   string
		status int
	}{
		{thread, map[string]any{"namespace": []string{"tools:1"}, "message": map[string]any{"role": "user", "content": "x"}}, "not_supported", http.StatusBadRequest},
		{thread, map[string]any{"namespace": []string{}, "message": map[string]any{"role": "assistant", "content": "x"}}, "invalid_argument", http.StatusUnprocessableEntity},
		{thread, map[string]any{"namespace": []string{}}, "invalid_argument", http.StatusUnprocessableEntity},
		{thread, map[string]any{"message": "x"}, "invalid_argument", http.StatusUnprocessableEntity},
		{uuid.NewString(), map[string]any{"namespace": []string{}, "message": map[string]any{"role": "user", "content": "x"}}, "no_such_run", http.StatusNotFound},
	}
	for _, b := range bad {
		status, out := commandError(t, base, b.thread, 3, "input.inject", b.params)
		require.Equal(t, b.status, status, "%v: %v", b.params, out)
		require.Equal(t, b.code, out["error"], "%v: %v", b.params, out)
	}
	var runs []map[string]any
	getJSON(t, base+"/threads/"+thread+"/runs", &runs)
	require.Len(t, runs, 2, "refused commands made no run")

	// A thread waiting at an interrupt takes input.respond, not input.inject.
	paused := uuid.NewString()
	w := openEvents(t, base, paused, map[string]any{"channels": []string{"lifecycle"}})
	command(t, base, paused, 1, "run.start", map[string]any{"assistant_id": "agent", "input": agentInput})
	w.until(t, rootLifecycle("interrupted"))
	status, out := commandError(t, base, paused, 2, "input.inject", map[string]any{"namespace": []string{}, "message": map[string]any{"role": "user", "content": "x"}})
	require.Equal(t, http.StatusConflict, status, "%v", out)
	require.Equal(t, "invalid_argument", out["error"])
}

// TestRunStartMultitaskStrategy: run.start honours multitaskStrategy (the
// JS SDK's submit sends it) and refuses an unknown one.
func TestRunStartMultitaskStrategy(t *testing.T) {
	t.Parallel()
	base := testServer(t)
	thread := uuid.NewString()
	status, out := commandError(t, base, thread, 1, "run.start", map[string]any{"assistant_id": "agent", "input": agentInput, "multitaskStrategy": "sometimes"})
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", out)
	require.Equal(t, "invalid_argument", out["error"])
	rep := command(t, base, thread, 2, "run.start", map[string]any{"assistant_id": "agent", "input": agentInput, "multitaskStrategy": "reject"})
	var run map[string]any
	getJSON(t, base+"/threads/"+thread+"/runs/"+rep["result"].(map[string]any)["run_id"].(string), &run)
	require.Equal(t, "reject", run["multitask_strategy"])
}

// commandError posts a command expected to fail and returns the status and
// the error reply.
func commandError(t *testing.T, base, threadID string, id int, method string, params any) (int, map[string]any) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	require.NoError(t, err)
	resp, err := http.Post(base+"/threads/"+threadID+"/commands", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, "error", out["type"], "%v", out)
	require.EqualValues(t, id, out["id"])
	return resp.StatusCode, out
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, url)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
}
