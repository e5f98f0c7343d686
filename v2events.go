package graphserver

import (
	"context"
	"encoding/json"
	"iter"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Protocol v2 ("thread-centric streaming", the SDKs' client.threads.stream
// and streamProtocol "v2"): a thread's runs are seen as one sequence of
// typed events, each on a channel, at a namespace, numbered by seq. They
// are derived from the stream parts of the thread's runs as the runs emit
// them (one event log per thread, see threadFeed), so that any number of
// subscribers, at any time, see the same events with the same seq.

// Thread event channels (protocol v2). A subscription names channels among
// these, or "custom:<name>" for the custom events whose data.name is name.
const (
	ChannelValues      = "values"      // the state after each step
	ChannelUpdates     = "updates"     // {node, values} per node and step
	ChannelMessages    = "messages"    // streamed chat messages as content blocks
	ChannelTools       = "tools"       // tool-started, tool-finished, ...
	ChannelLifecycle   = "lifecycle"   // running, completed, failed, interrupted; started for subgraphs
	ChannelInput       = "input"       // input.requested: an interrupt waiting for input.respond
	ChannelCheckpoints = "checkpoints" // {id, parent_id, step, source} per checkpoint
	ChannelTasks       = "tasks"       // task starts and results
	ChannelCustom      = "custom"      // what nodes write with a stream writer
)

// threadEventChannels are the channels a thread event subscription may name
// (besides "custom:<name>").
var threadEventChannels = []string{ChannelValues, ChannelUpdates, ChannelMessages, ChannelTools, ChannelLifecycle, ChannelInput, ChannelCheckpoints, ChannelTasks, ChannelCustom}

// Bounds on what a thread event subscription may ask for.
const (
	MaxSubscriptionChannels   = 32  // channels of one subscription
	MaxSubscriptionNamespaces = 64  // namespace prefixes of one subscription
	MaxNamespaceSegments      = 32  // segments of one namespace
	MaxNamespaceSegmentBytes  = 512 // bytes of one namespace segment or custom channel name
	MaxSubscriptionDepth      = 1000
)

// v2FeedMax bounds the protocol-v2 events a thread keeps for replay; the
// oldest go first.
const v2FeedMax = 20000

// v2RunModes are the stream modes of a run started with run.start or
// input.respond: everything the thread events are made of.
var v2RunModes = []string{"values", "updates", "messages-tuple", "custom", "tasks", "checkpoints", "tools"}

// ThreadEvent is one protocol-v2 event of a thread.
type ThreadEvent struct {
	// Seq orders the events of a thread: it grows with each event (it is
	// unique within this process, not dense within a thread; with a stored
	// thread log, it is made from the log's numbers, the same on every
	// process). Subscribe with Since to get the events after one.
	Seq int64
	// EventID is the event's unique id; clients de-duplicate by it.
	EventID string
	// Method is the channel, or "input.requested" for the input channel.
	Method string
	// Namespace is where the event happened: [] for the root graph,
	// "<node>:<task_id>" segments below.
	Namespace []string
	// Data is the channel's payload.
	Data json.RawMessage

	channel string // the channel a subscription names (custom:<name> for a named custom event)
	raw     json.RawMessage
}

// MarshalJSON writes the event as the wire carries it:
// {"type": "event", "event_id", "seq", "method", "params": {"namespace",
// "timestamp", "data"}}.
func (e ThreadEvent) MarshalJSON() ([]byte, error) {
	if e.raw != nil {
		return e.raw, nil
	}
	return encodeThreadEvent(e.Seq, e.EventID, e.Method, e.Namespace, "", time.Now().UnixMilli(), e.Data)
}

type wireEventParams struct {
	Namespace []string        `json:"namespace"`
	Timestamp int64           `json:"timestamp"`
	Node      string          `json:"node,omitempty"`
	Data      json.RawMessage `json:"data"`
}

type wireEvent struct {
	Type    string          `json:"type"`
	EventID string          `json:"event_id"`
	Seq     int64           `json:"seq"`
	Method  string          `json:"method"`
	Params  wireEventParams `json:"params"`
}

func encodeThreadEvent(seq int64, id, method string, ns []string, node string, ts int64, data json.RawMessage) ([]byte, error) {
	if ns == nil {
		ns = []string{}
	}
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	return json.Marshal(wireEvent{Type: "event", EventID: id, Seq: seq, Method: method,
		Params: wireEventParams{Namespace: ns, Timestamp: ts, Node: node, Data: data}})
}

// v2Entry is a retained thread event.
type v2Entry struct {
	ev      ThreadEvent
	expires time.Time
}

// v2Log is the protocol-v2 side of a thread's feed: the events derived from
// the thread's stream parts once a v2 client touched the thread. Guarded by
// the feed's mutex.
type v2Log struct {
	on      bool      // events are derived
	keep    time.Time // the feed is kept at least until then
	events  []v2Entry
	base    int // position of events[0]
	session int // position of the latest run's first event
	tr      v2Translator
}

// v2Raw is a thread event before it gets its seq.
type v2Raw struct {
	method string
	ns     []string
	node   string
	data   any
}

// v2Msg is a chat message being streamed.
type v2Msg struct {
	id   string
	ns   []string
	node string
	text strings.Builder
}

// v2Translator turns the stream parts of a thread's runs into protocol-v2
// events, following the LangGraph Python server: root-graph parts at the
// empty namespace, streamed AI message chunks as content blocks (messages
// that are only state writes are not on the messages channel), interrupts
// as input.requested {interrupt_id, value}, a child lifecycle "started"
// for each subgraph namespace seen (never for plain nodes of the root
// graph), tool events at the namespace of the graph running the tool node
// (the node's own task segment dropped).
type v2Translator struct {
	open       []*v2Msg
	children   []string        // announced child namespaces, in order
	childOpen  map[string]bool // key (segments joined by "|") -> not ended
	interrupts map[string]bool
	paused     bool
	errMsg     string
	runID      string
	// queued are runs whose first event (metadata, appended when a run is
	// created) came while another run of the thread was under way: a run
	// queued behind it (multitask enqueue, input.inject) or replacing it
	// (interrupt, rollback). Each starts, in order, when the run before
	// it ends, so that its events never cut into another run's.
	queued []string
}

func nsKey(ns []string) string { return strings.Join(ns, "|") }

// reset starts a new run.
func (t *v2Translator) reset(runID string) {
	*t = v2Translator{runID: runID, childOpen: map[string]bool{}, interrupts: map[string]bool{}, queued: t.queued}
}

// start is the root lifecycle "running" event of a run that starts.
func (t *v2Translator) start(runID string) []v2Raw {
	t.reset(runID)
	return []v2Raw{{method: ChannelLifecycle, data: map[string]any{"event": "running", "run_id": runID}}}
}

// translate returns the events one stream part of a run makes. status is
// the run's final status for the run_done marker.
func (t *v2Translator) translate(event string, data json.RawMessage, status string) []v2Raw {
	if t.childOpen == nil {
		t.reset("")
	}
	mode, nsPart, _ := strings.Cut(event, "|")
	var ns []string
	if nsPart != "" {
		ns = strings.Split(nsPart, "|")
	}
	var out []v2Raw
	switch mode {
	case "metadata":
		var m struct {
			RunID  string `json:"run_id"`
			Status string `json:"status"`
		}
		_ = json.Unmarshal(data, &m)
		if m.Status == "run_done" {
			if m.RunID != "" && t.runID != "" && m.RunID != t.runID {
				// A queued run ended (cancelled, deleted) before it started.
				t.queued = slices.DeleteFunc(t.queued, func(id string) bool { return id == m.RunID })
				return nil
			}
			out := t.end(status)
			if len(t.queued) > 0 {
				next := t.queued[0]
				t.queued = t.queued[1:]
				out = append(out, t.start(next)...)
			}
			return out
		}
		if m.Status != "" {
			return nil
		}
		if t.runID != "" && m.RunID != t.runID {
			if !slices.Contains(t.queued, m.RunID) {
				t.queued = append(t.queued, m.RunID)
			}
			return nil
		}
		t.queued = slices.DeleteFunc(t.queued, func(id string) bool { return id == m.RunID })
		return t.start(m.RunID)
	case "error":
		var e struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(data, &e)
		t.errMsg = strings.TrimSpace(e.Error + ": " + e.Message)
		if e.Message == "" {
			t.errMsg = e.Error
		}
	case "values":
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) == nil {
			if intr, ok := obj["__interrupt__"]; ok {
				return t.interrupt(ns, intr)
			}
		}
		out = t.announce(out, ns)
		out = t.closeMsgs(out, ns)
		out = append(out, v2Raw{method: ChannelValues, ns: ns, data: data})
	case "updates":
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil {
			return nil
		}
		if _, ok := obj["__interrupt__"]; ok {
			return nil
		}
		out = t.announce(out, ns)
		out = t.closeMsgs(out, ns)
		nodes := make([]string, 0, len(obj))
		for k := range obj {
			nodes = append(nodes, k)
		}
		sort.Strings(nodes)
		for _, n := range nodes {
			out = append(out, v2Raw{method: ChannelUpdates, ns: ns, node: n, data: map[string]any{"node": n, "values": obj[n]}})
		}
	case "messages":
		return t.message(ns, data)
	case "custom":
		out = t.announce(out, ns)
		out = append(out, v2Raw{method: ChannelCustom, ns: ns, data: data})
	case "tools":
		if len(ns) > 0 {
			ns = ns[:len(ns)-1]
		}
		out = t.announce(out, ns)
		out = append(out, v2Raw{method: ChannelTools, ns: ns, data: data})
	case "tasks":
		out = t.announce(out, ns)
		out = append(out, v2Raw{method: ChannelTasks, ns: ns, data: data})
		var task struct {
			ID     string          `json:"id"`
			Name   string          `json:"name"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(data, &task) == nil && task.Result != nil {
			out = t.endChild(out, append(slices.Clone(ns), task.Name+":"+task.ID))
		}
	case "checkpoints":
		var c struct {
			Config       map[string]any `json:"config"`
			ParentConfig map[string]any `json:"parent_config"`
			Metadata     map[string]any `json:"metadata"`
		}
		if json.Unmarshal(data, &c) != nil {
			return nil
		}
		env := map[string]any{"id": checkpointIDOf(c.Config)}
		if p := checkpointIDOf(c.ParentConfig); p != "" {
			env["parent_id"] = p
		}
		env["step"] = c.Metadata["step"]
		env["source"] = c.Metadata["source"]
		out = t.announce(out, ns)
		out = append(out, v2Raw{method: ChannelCheckpoints, ns: ns, data: env})
	}
	return out
}

func checkpointIDOf(cfg map[string]any) string {
	c, _ := cfg["configurable"].(map[string]any)
	id, _ := c["checkpoint_id"].(string)
	return id
}

// announce emits a lifecycle "started" for each level of ns not seen yet
// in this run: a subgraph (or a node's nested graph) shows itself.
func (t *v2Translator) announce(out []v2Raw, ns []string) []v2Raw {
	for i := 1; i <= len(ns); i++ {
		key := nsKey(ns[:i])
		if _, seen := t.childOpen[key]; seen {
			continue
		}
		t.childOpen[key] = true
		t.children = append(t.children, key)
		name, _, _ := strings.Cut(ns[i-1], ":")
		out = append(out, v2Raw{method: ChannelLifecycle, ns: slices.Clone(ns[:i]), data: map[string]any{"event": "started", "graph_name": name}})
	}
	return out
}

// endChild ends an announced child namespace (and what is below it): its
// task has a result.
func (t *v2Translator) endChild(out []v2Raw, child []string) []v2Raw {
	key := nsKey(child)
	if !t.childOpen[key] {
		return out
	}
	for _, k := range slices.Backward(t.children) {
		if (k == key || strings.HasPrefix(k, key+"|")) && t.childOpen[k] {
			t.childOpen[k] = false
			// No lifecycle event: the SDKs' lifecycle watchers take any
			// completed or failed lifecycle event, whatever its namespace,
			// for the run's end (LangGraph's Python server announces
			// children with started only; clients end them on their task's
			// result or the run's end).
			out = t.closeMsgsUnder(out, strings.Split(k, "|"))
		}
	}
	return out
}

// interrupt turns an __interrupt__ part into input.requested events, once
// per interrupt id.
func (t *v2Translator) interrupt(ns []string, data json.RawMessage) []v2Raw {
	var intrs []struct {
		ID    string          `json:"id"`
		Value json.RawMessage `json:"value"`
	}
	if json.Unmarshal(data, &intrs) != nil {
		return nil
	}
	var out []v2Raw
	for _, in := range intrs {
		if in.ID == "" || t.interrupts[in.ID] {
			continue
		}
		t.interrupts[in.ID] = true
		if len(ns) == 0 {
			t.paused = true
		}
		out = t.closeMsgs(out, ns)
		v := in.Value
		if len(v) == 0 {
			v = json.RawMessage("null")
		}
		// value as the Python server sends it, payload as the protocol
		// types (and the JS server) name it.
		out = append(out, v2Raw{method: "input.requested", ns: ns, data: map[string]any{"interrupt_id": in.ID, "value": v, "payload": v}})
	}
	return out
}

// message turns a messages-tuple part into content-block events. Only AI
// message chunks (a model streaming) are on the channel: whole messages a
// node returned are state writes.
func (t *v2Translator) message(ns []string, data json.RawMessage) []v2Raw {
	var tup []json.RawMessage
	if json.Unmarshal(data, &tup) != nil || len(tup) == 0 {
		return nil
	}
	var chunk struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		Content any    `json:"content"`
	}
	if json.Unmarshal(tup[0], &chunk) != nil || chunk.Type != "AIMessageChunk" || chunk.ID == "" {
		return nil
	}
	var meta map[string]any
	if len(tup) > 1 {
		_ = json.Unmarshal(tup[1], &meta)
	}
	var out []v2Raw
	var m *v2Msg
	for _, o := range t.open {
		if o.id == chunk.ID {
			m = o
		}
	}
	if m == nil {
		out = t.announce(out, ns)
		node, _ := meta["langgraph_node"].(string)
		m = &v2Msg{id: chunk.ID, ns: slices.Clone(ns), node: node}
		t.open = append(t.open, m)
		if meta == nil {
			meta = map[string]any{}
		}
		out = append(out,
			v2Raw{method: ChannelMessages, ns: ns, node: node, data: map[string]any{"event": "message-start", "role": "ai", "id": m.id, "metadata": meta}},
			v2Raw{method: ChannelMessages, ns: ns, node: node, data: map[string]any{"event": "content-block-start", "id": m.id, "index": 0, "content": map[string]any{"type": "text", "text": ""}}},
		)
	}
	text := contentText(chunk.Content)
	if text != "" {
		m.text.WriteString(text)
		out = append(out, v2Raw{method: ChannelMessages, ns: ns, node: m.node, data: map[string]any{"event": "content-block-delta", "id": m.id, "index": 0, "delta": map[string]any{"type": "text-delta", "text": text}}})
	}
	return out
}

// contentText is the text of a message content: a string, or the text
// blocks of a list.
func contentText(c any) string {
	switch c := c.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, blk := range c {
			if m, ok := blk.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					b.WriteString(s)
				}
			}
		}
		return b.String()
	}
	return ""
}

// closeMsgs finishes the messages streamed at namespace ns: the step that
// streamed them is over once its values or updates are out.
func (t *v2Translator) closeMsgs(out []v2Raw, ns []string) []v2Raw {
	return t.closeWhere(out, func(m *v2Msg) bool { return slices.Equal(m.ns, ns) })
}

func (t *v2Translator) closeMsgsUnder(out []v2Raw, ns []string) []v2Raw {
	return t.closeWhere(out, func(m *v2Msg) bool { return len(m.ns) >= len(ns) && slices.Equal(m.ns[:len(ns)], ns) })
}

func (t *v2Translator) closeWhere(out []v2Raw, match func(*v2Msg) bool) []v2Raw {
	kept := t.open[:0]
	for _, m := range t.open {
		if !match(m) {
			kept = append(kept, m)
			continue
		}
		out = append(out,
			v2Raw{method: ChannelMessages, ns: m.ns, node: m.node, data: map[string]any{"event": "content-block-finish", "id": m.id, "index": 0, "content": map[string]any{"type": "text", "text": m.text.String()}}},
			v2Raw{method: ChannelMessages, ns: m.ns, node: m.node, data: map[string]any{"event": "message-finish", "id": m.id}},
		)
	}
	clear(t.open[len(kept):])
	t.open = kept
	return out
}

// end closes what the run left open and emits the root lifecycle event of
// its outcome: interrupted when it paused at an interrupt, completed,
// or failed (errors, timeouts and cancellations).
func (t *v2Translator) end(status string) []v2Raw {
	out := t.closeWhere(nil, func(*v2Msg) bool { return true })
	phase, errMsg := "completed", ""
	switch {
	case t.paused && (status == RunSuccess || status == RunInterrupted):
		phase = "interrupted"
	case status == RunSuccess:
	case status == RunInterrupted:
		phase, errMsg = "failed", "Run was cancelled."
	case status == RunTimeout:
		phase, errMsg = "failed", "Run timed out."
	default:
		phase, errMsg = "failed", "Run failed."
	}
	if t.errMsg != "" && phase == "failed" {
		errMsg = t.errMsg
	}
	data := map[string]any{"event": phase, "run_id": t.runID}
	if errMsg != "" {
		data["error"] = errMsg
	}
	out = append(out, v2Raw{method: ChannelLifecycle, data: data})
	t.reset("")
	return out
}

// v2PerEntry bounds the thread events one entry of a stored thread log
// makes (a stream part, a run's end): their seqs are made from the
// entry's id, v2Seq. Past it (a part closing tens of thousands of
// messages at once), the rest are not sent.
const v2PerEntry = 1 << 16

// v2Seq is the seq of the i-th thread event made from the feed event id
// of a stored thread log: the same on every process, growing with the id
// (its sequence part is 0 or 1, see publishEntry). The log's numbers stay
// below 2^35, so that seqs are exact in JavaScript numbers (2^53).
func v2Seq(id feedID, i int) int64 {
	return id.ms<<18 | id.seq<<16 | int64(i)
}

// v2SeqAfter is the greatest seq of the thread events made from the
// entries of a stored thread log numbered up to last: a stream with since
// set to it gets those of the later entries.
func v2SeqAfter(last int64) int64 {
	return v2Seq(feedID{ms: last + 1}, 0) - 1
}

// appendV2 derives the thread events of one stream part, whose feed event
// id is id, and appends them; f.mu is held.
func (f *threadFeed) appendV2(h *threadHub, id feedID, event string, data json.RawMessage, status string, now, expires time.Time) {
	raws := f.v2.tr.translate(event, data, status)
	if h.stored && len(raws) > v2PerEntry {
		raws = raws[:v2PerEntry]
	}
	for i, r := range raws {
		b, err := json.Marshal(r.data)
		if err != nil {
			continue
		}
		var seq int64
		if h.stored {
			seq = v2Seq(id, i)
		} else {
			seq = h.seq.Add(1)
		}
		evID := strconv.FormatInt(seq, 10)
		ts := now.UnixMilli()
		ns := r.ns
		if ns == nil {
			ns = []string{}
		}
		raw, err := encodeThreadEvent(seq, evID, r.method, ns, r.node, ts, b)
		if err != nil {
			continue
		}
		ev := ThreadEvent{Seq: seq, EventID: evID, Method: r.method, Namespace: ns, Data: b, channel: eventChannel(r.method, r.data), raw: raw}
		if r.method == ChannelLifecycle && len(ns) == 0 && r.data.(map[string]any)["event"] == "running" {
			f.v2.session = f.v2.base + len(f.v2.events)
		}
		f.v2.events = append(f.v2.events, v2Entry{ev: ev, expires: expires})
	}
	if n := len(f.v2.events) - v2FeedMax; n > 0 {
		f.dropV2(n)
	}
}

// runStart returns the position of the root lifecycle "running" event of
// run runID, or the end of the events when the run has not started in
// them (its events all come later); the feed's mutex is held.
func (l *v2Log) runStart(runID string) int {
	for i, e := range slices.Backward(l.events) {
		if e.ev.Method != ChannelLifecycle || len(e.ev.Namespace) > 0 {
			continue
		}
		var d struct {
			Event string `json:"event"`
			RunID string `json:"run_id"`
		}
		if json.Unmarshal(e.ev.Data, &d) == nil && d.Event == "running" && d.RunID == runID {
			return l.base + i
		}
	}
	return l.base + len(l.events)
}

// dropV2 removes the n oldest thread events; f.mu is held.
func (f *threadFeed) dropV2(n int) {
	clear(f.v2.events[:n])
	f.v2.events = f.v2.events[n:]
	f.v2.base += n
}

// eventChannel is the channel of an event: its method, "input" for
// input.requested, custom:<name> for a custom event whose data has a name.
func eventChannel(method string, data any) string {
	switch method {
	case "input.requested":
		return ChannelInput
	case ChannelCustom:
		var name string
		switch d := data.(type) {
		case json.RawMessage:
			var m struct {
				Name any `json:"name"`
			}
			if json.Unmarshal(d, &m) == nil {
				name, _ = m.Name.(string)
			}
		case map[string]any:
			name, _ = d["name"].(string)
		}
		if name != "" {
			return "custom:" + name
		}
	}
	return method
}

// enableV2 turns on the thread events of a thread (creating its feed) and
// keeps the feed for at least ttl.
func (h *threadHub) enableV2(threadID string, ttl time.Duration) {
	now := h.clock()
	f := h.lockedFeed(threadID)
	defer f.mu.Unlock()
	f.v2.on = true
	if k := now.Add(ttl); k.After(f.v2.keep) {
		f.v2.keep = k
	}
}

// ThreadEventsRequest is a subscription to a thread's events (the body of
// POST /threads/{thread_id}/stream/events, and of subscription.subscribe
// over WebSocket).
type ThreadEventsRequest struct {
	// Channels to receive (the Channel* constants, or "custom:<name>"); required.
	Channels []string `json:"channels"`
	// Namespaces are prefixes; an event passes when its namespace starts
	// with one of them. A prefix segment without ":" also matches
	// "<segment>:<anything>". None: every namespace.
	Namespaces [][]string `json:"namespaces,omitempty"`
	// Depth bounds how many segments an event's namespace may have beyond
	// the prefix it matched; nil: any.
	Depth *int `json:"depth,omitempty"`
	// Since replays the retained events with a greater seq, then goes
	// live. Nil: the events of the thread's latest run from its start
	// (the run just started, however fast it was: the JS SDK subscribes
	// without since after run.start), then live.
	Since *int64 `json:"since,omitempty"`
}

// validate checks the request's bounds.
func (r *ThreadEventsRequest) validate() error {
	if len(r.Channels) == 0 {
		return Errorf(EINVALID, "channels must list at least one channel among %s (or custom:<name>).", strings.Join(threadEventChannels, ", "))
	}
	if len(r.Channels) > MaxSubscriptionChannels {
		return Errorf(EINVALID, "channels lists at most %d channels.", MaxSubscriptionChannels)
	}
	for _, c := range r.Channels {
		name, isCustom := strings.CutPrefix(c, "custom:")
		switch {
		case slices.Contains(threadEventChannels, c):
		case isCustom && name != "" && len(name) <= MaxNamespaceSegmentBytes:
		default:
			return Errorf(EINVALID, "Unknown channel %.100q: channels are %s, or custom:<name>.", c, strings.Join(threadEventChannels, ", "))
		}
	}
	if len(r.Namespaces) > MaxSubscriptionNamespaces {
		return Errorf(EINVALID, "namespaces lists at most %d namespaces.", MaxSubscriptionNamespaces)
	}
	for _, ns := range r.Namespaces {
		if err := checkNamespace(ns); err != nil {
			return err
		}
	}
	if r.Depth != nil && (*r.Depth < 0 || *r.Depth > MaxSubscriptionDepth) {
		return Errorf(EINVALID, "depth must be between 0 and %d.", MaxSubscriptionDepth)
	}
	if r.Since != nil && *r.Since < 0 {
		return Errorf(EINVALID, "since must be a seq (0 or more).")
	}
	return nil
}

// checkNamespace bounds a namespace a client sends.
func checkNamespace(ns []string) error {
	if len(ns) > MaxNamespaceSegments {
		return Errorf(EINVALID, "A namespace has at most %d segments.", MaxNamespaceSegments)
	}
	for _, s := range ns {
		if len(s) > MaxNamespaceSegmentBytes {
			return Errorf(EINVALID, "A namespace segment has at most %d bytes.", MaxNamespaceSegmentBytes)
		}
	}
	return nil
}

// matches reports whether ev passes the subscription (the SDKs'
// matches_subscription: channel, namespace prefix, depth).
func (r *ThreadEventsRequest) matches(ev *ThreadEvent) bool {
	ok := slices.Contains(r.Channels, ev.channel) ||
		(strings.HasPrefix(ev.channel, "custom:") && slices.Contains(r.Channels, ChannelCustom))
	if !ok {
		return false
	}
	if len(r.Namespaces) == 0 {
		return true
	}
	for _, p := range r.Namespaces {
		if !nsPrefix(ev.Namespace, p) {
			continue
		}
		if r.Depth == nil || len(ev.Namespace)-len(p) <= *r.Depth {
			return true
		}
	}
	return false
}

// nsPrefix reports whether prefix starts ns; a prefix segment without ":"
// matches a segment's name before its ":".
func nsPrefix(ns, prefix []string) bool {
	if len(prefix) > len(ns) {
		return false
	}
	for i, seg := range prefix {
		c := ns[i]
		if c == seg {
			continue
		}
		if strings.Contains(seg, ":") {
			return false
		}
		if name, _, _ := strings.Cut(c, ":"); name != seg {
			return false
		}
	}
	return true
}

// ThreadEventStream follows a thread's protocol-v2 events. Create it with
// SubscribeThreadEvents; it is owned by one consumer.
type ThreadEventStream struct {
	// ThreadID is the thread followed.
	ThreadID string

	s     *Server
	req   ThreadEventsRequest
	feed  *threadFeed
	pos   int   // position in feed's v2 events to start from
	since int64 // events with seq <= since are skipped
}

// SubscribeThreadEvents subscribes to a thread's protocol-v2 events
// (client.threads.stream in the SDKs). The thread need not exist yet: a
// client watches a thread id it made up before its first run.start
// creates it. The stream starts at req.Since (see ThreadEventsRequest) as
// of this call, and never ends on its own: see ThreadEventStream.Events.
//
// It returns EINVALID for a malformed thread id or request, and ENOTFOUND
// when the thread exists but the caller may not read it.
func (s *Server) SubscribeThreadEvents(ctx context.Context, threadID string, req ThreadEventsRequest) (*ThreadEventStream, error) {
	id, err := s.v2Thread(ctx, threadID, "read")
	if err != nil {
		return nil, err
	}
	if err := req.validate(); err != nil {
		return nil, err
	}
	hub := &s.rq.logs.hub
	hub.enableV2(id, s.v2Keep())
	if err := s.rq.catchUp(ctx, id); err != nil {
		return nil, err
	}
	// From a stored log, a run's events reach the feed once it executes:
	// the latest run may not be in it yet, and is looked up.
	latest := ""
	if hub.stored && req.Since == nil {
		runs, err := s.storage.ListRuns(ctx, id, &RunSearch{Limit: 1})
		if err != nil && ErrorCode(err) != ENOTFOUND {
			return nil, err
		}
		if len(runs) > 0 {
			latest = runs[0].RunID
		}
	}
	st := &ThreadEventStream{ThreadID: id, s: s, req: req, since: -1}
	hub.mu.Lock()
	f := hub.feed(id)
	hub.mu.Unlock()
	f.mu.Lock()
	switch {
	case req.Since != nil:
		st.since = *req.Since
		st.pos = f.v2.base + sort.Search(len(f.v2.events), func(i int) bool { return f.v2.events[i].ev.Seq > st.since })
	case latest != "":
		st.pos = f.v2.runStart(latest)
	default:
		st.pos = max(f.v2.session, f.v2.base)
	}
	f.mu.Unlock()
	st.feed = f
	return st, nil
}

// ThreadEventSeq returns the last thread event seq this process gave out,
// over all threads: a stream with Since set to it gets the events made
// from now on. With a stored thread log (the postgres driver), seqs are
// per thread: use ThreadEventsSeq.
func (s *Server) ThreadEventSeq() int64 { return s.rq.logs.hub.seq.Load() }

// ThreadEventsSeq returns a seq of the thread's events such that a stream
// of the thread with Since set to it gets the events made from now on,
// and none before: without a stored thread log, the last seq this process
// gave out (ThreadEventSeq); with one (the postgres driver), the greatest
// seq the thread's log as stored so far makes, the same on every process.
// It reads storage with a stored thread log.
func (s *Server) ThreadEventsSeq(ctx context.Context, threadID string) (int64, error) {
	if s.rq.mirror == nil {
		return s.rq.logs.hub.seq.Load(), nil
	}
	last, err := s.rq.mirror.log.LastThreadSeq(ctx, threadID)
	if err != nil {
		return 0, err
	}
	return v2SeqAfter(last), nil
}

// v2Keep is how long a thread's events are kept after a v2 client touched
// it.
func (s *Server) v2Keep() time.Duration {
	if s.rq.logs.hub.resumableTTL > 0 {
		return s.rq.logs.hub.resumableTTL
	}
	return ResumableStreamTTLDefault
}

// v2Thread validates a thread id for a protocol-v2 call and checks access
// when the thread exists: a missing thread is no error (clients make up
// the ids of new threads).
func (s *Server) v2Thread(ctx context.Context, threadID, action string) (string, error) {
	id, err := parseUUID("thread", threadID)
	if err != nil {
		return "", err
	}
	if _, err := s.storage.GetThread(ctx, id, nil); err != nil {
		if ErrorCode(err) == ENOTFOUND {
			return id, nil
		}
		return "", err
	}
	if _, err := s.stateThread(ctx, id, action); err != nil {
		return "", err
	}
	return id, nil
}

// Events returns the subscribed events, replayed then live, until ctx ends
// (it yields ctx's cause) or the server closes (ErrServerClosed). It never
// ends on its own: a run's end is an event (root lifecycle completed,
// failed or interrupted), and the thread's next run goes on the same
// stream.
func (st *ThreadEventStream) Events(ctx context.Context) iter.Seq2[ThreadEvent, error] {
	return func(yield func(ThreadEvent, error) bool) {
		hub := &st.s.rq.logs.hub
		f := hub.subscribe(st.ThreadID)
		defer hub.unsubscribe(st.ThreadID, f)
		defer st.s.rq.followThread(st.ThreadID)()
		pos := st.pos
		if f != st.feed {
			pos = 0 // the feed was dropped and made anew: since filters by seq
		}
		for {
			evs, next, wake := f.readV2(pos)
			pos = next
			for i := range evs {
				if evs[i].Seq <= st.since || !st.req.matches(&evs[i]) {
					continue
				}
				if !yield(evs[i], nil) {
					return
				}
			}
			if len(evs) > 0 {
				continue
			}
			select {
			case <-wake:
			case <-ctx.Done():
				yield(ThreadEvent{}, context.Cause(ctx))
				return
			case <-st.s.lifetime.Done():
				yield(ThreadEvent{}, ErrServerClosed)
				return
			}
		}
	}
}

// readV2 returns the thread events from position pos on (from the oldest
// retained when pos was dropped), the position after them, and a channel
// closed at the next change.
func (f *threadFeed) readV2(pos int) ([]ThreadEvent, int, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pos = max(pos, f.v2.base)
	end := f.v2.base + len(f.v2.events)
	if pos > end {
		pos = end
	}
	out := make([]ThreadEvent, 0, end-pos)
	for _, e := range f.v2.events[pos-f.v2.base:] {
		out = append(out, e.ev)
	}
	return out, end, f.wake
}
