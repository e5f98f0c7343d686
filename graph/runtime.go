package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/record"
)

// runCtx is shared by the runners of one run (root and subgraphs).
type runCtx struct {
	req            *graphserver.GraphRun
	emitFn         func(graphserver.StreamPart)
	mu             sync.Mutex
	modes          map[string]bool
	cp             driver.Checkpointer
	threadID       string
	durability     string
	recursionLimit int
	config         graphserver.Object
	configurable   map[string]any
	wg             sync.WaitGroup
	root           *runner

	seenMsg  map[string]bool
	streamed map[string]bool // ids streamed by a MessageStream, not yet completed
	partial  map[string]*Message
	nodeRun  map[string]string // task id -> events run id
}

func newRunCtx(req *graphserver.GraphRun, emit func(graphserver.StreamPart)) *runCtx {
	rc := &runCtx{req: req, emitFn: emit, modes: map[string]bool{}, cp: req.Checkpointer, threadID: req.ThreadID,
		durability: req.Durability, recursionLimit: 25, config: req.Config, seenMsg: map[string]bool{}, streamed: map[string]bool{}, partial: map[string]*Message{}, nodeRun: map[string]string{}}
	for _, m := range req.StreamModes {
		rc.modes[m] = true
	}
	if rc.cp == nil {
		rc.cp = NewMemoryCheckpointer()
	}
	if rc.threadID == "" {
		rc.threadID = uuid.NewString()
	}
	switch rc.durability {
	case "sync", "exit":
	default:
		rc.durability = "async"
	}
	if rc.config == nil {
		rc.config = graphserver.Object{}
	}
	rc.configurable, _ = rc.config["configurable"].(map[string]any)
	if c, ok := rc.config["configurable"].(graphserver.Object); ok {
		rc.configurable = c
	}
	if rc.configurable == nil {
		rc.configurable = map[string]any{}
	}
	switch l := rc.config["recursion_limit"].(type) {
	case float64:
		rc.recursionLimit = int(l)
	case int:
		rc.recursionLimit = l
	}
	if emit == nil {
		rc.emitFn = func(graphserver.StreamPart) {}
	}
	return rc
}

func (rc *runCtx) send(ns []string, event string, data any) {
	b, err := record.MarshalJSON(data)
	if err != nil {
		b = []byte("null")
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.emitFn(graphserver.StreamPart{Event: event, Namespace: slices.Clone(ns), Data: b})
}

// sendRaw emits an already encoded part.
func (rc *runCtx) sendRaw(ns []string, event string, data []byte) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.emitFn(graphserver.StreamPart{Event: event, Namespace: slices.Clone(ns), Data: data})
}

func (rc *runCtx) before(r *runner) []string {
	if r == rc.root {
		return append(slices.Clone(r.g.before), rc.req.InterruptBefore...)
	}
	return r.g.before
}

func (rc *runCtx) after(r *runner) []string {
	if r == rc.root {
		return append(slices.Clone(r.g.after), rc.req.InterruptAfter...)
	}
	return r.g.after
}

// taskMeta is the metadata attached to message and event parts of a task.
func (rc *runCtx) taskMeta(r *runner, t *task, step int) map[string]any {
	m := map[string]any{}
	for k, v := range rc.configurable {
		if strings.HasPrefix(k, "__") {
			continue
		}
		switch v.(type) {
		case string, float64, int, bool:
			m[k] = v
		}
	}
	maps.Copy(m, rc.req.Metadata)
	m["langgraph_step"] = step
	m["langgraph_node"] = t.name
	m["langgraph_triggers"] = t.triggers
	m["langgraph_path"] = t.path
	m["langgraph_checkpoint_ns"] = t.ns
	m["checkpoint_ns"] = t.ns
	return m
}

func (rc *runCtx) taskStart(r *runner, t *task, step int, state State) {
	if t.hidden() {
		return
	}
	var input any = r.g.nodeInput(t.name, state)
	if t.push || t.name == r.g.entry {
		input = t.arg
	}
	payload := map[string]any{"id": t.id, "name": t.name, "input": input, "triggers": t.triggers}
	r.emit("tasks", payload)
	r.emit("debug", map[string]any{"type": "task", "step": step, "timestamp": timestamp(time.Now()), "payload": payload})
	if rc.modes["messages-tuple"] || rc.modes["messages"] {
		// messages already in the input are not re-emitted from the output
		// (StreamMessagesHandler.on_chain_start marks the ids of the
		// messages in every input value)
		in, _ := input.(State)
		if t.push {
			in, _ = t.arg.(map[string]any)
		}
		rc.mu.Lock()
		for k, v := range in {
			if c := r.g.channels[k]; c != nil && c.kind == kindMessages {
				for _, m := range Messages(v) {
					if m.ID != "" {
						rc.seenMsg[m.ID] = true
					}
				}
				continue
			}
			for _, m := range messagesIn(v) {
				if m.ID != "" {
					rc.seenMsg[m.ID] = true
				}
			}
		}
		rc.mu.Unlock()
	}
	if rc.modes["events"] && r.visible() {
		runID := uuid.NewString()
		rc.mu.Lock()
		rc.nodeRun[t.id] = runID
		rc.mu.Unlock()
		r.emit("events", map[string]any{"event": "on_chain_start", "name": t.name, "run_id": runID, "parent_ids": []string{rc.req.RunID},
			"tags": []string{"graph:step:" + strconv.Itoa(step)}, "metadata": rc.taskMeta(r, t, step), "data": map[string]any{"input": input}})
	}
}

func (rc *runCtx) taskEnd(r *runner, t *task, step int, out any) {
	if t.hidden() {
		return
	}
	switch {
	case t.interrupts != nil:
		// emitted with the step's end (see run)
	case t.errRec == nil:
		r.emit("updates", map[string]any{t.name: r.g.outputUpdates(t.writes)})
		rc.outputMessages(r, t, step, out)
	}
	var errStr any
	if t.errRec != nil {
		errStr = pyRepr(t.errRec)
	}
	intr := t.interrupts
	if intr == nil {
		intr = []graphserver.Interrupt{}
	}
	payload := map[string]any{"id": t.id, "name": t.name, "error": errStr, "result": r.g.taskResult(t.writes), "interrupts": intr}
	r.emit("tasks", payload)
	r.emit("debug", map[string]any{"type": "task_result", "step": step, "timestamp": timestamp(time.Now()), "payload": payload})
	if rc.modes["events"] && r.visible() {
		rc.mu.Lock()
		runID := rc.nodeRun[t.id]
		rc.mu.Unlock()
		r.emit("events", map[string]any{"event": "on_chain_end", "name": t.name, "run_id": runID, "parent_ids": []string{rc.req.RunID},
			"tags": []string{"graph:step:" + strconv.Itoa(step)}, "metadata": rc.taskMeta(r, t, step), "data": map[string]any{"output": t.update}})
	}
}

func pyRepr(rec map[string]any) string {
	name, _ := rec["error"].(string)
	msg, _ := rec["message"].(string)
	b, _ := json.Marshal(msg)
	s := string(b)
	return name + "(" + "'" + strings.ReplaceAll(s[1:len(s)-1], "'", "\\'") + "')"
}

// messagesIn returns the messages a value holds, as LangGraph's
// StreamMessagesHandler finds them in a node's output: the value itself
// when it is a message, or the messages of a list. A message is an object
// with a message "type" (human, ai, system, tool) and a "content", the
// form LangChain serializes messages in.
func messagesIn(v any) []Message {
	one := func(v any) (Message, bool) {
		o, ok := v.(map[string]any)
		if !ok {
			return Message{}, false
		}
		typ, _ := o["type"].(string)
		if _, ok := o["content"]; !ok || typ == RemoveMessage || roleTypes[typ] != typ {
			return Message{}, false
		}
		m, err := messageFromMap(o)
		return m, err == nil
	}
	if m, ok := one(v); ok {
		return []Message{m}
	}
	var out []Message
	if l, ok := v.([]any); ok {
		for _, e := range l {
			if m, ok := one(e); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

// outputMessages emits the messages a node returned that were not streamed
// (StreamMessagesHandler.on_chain_end): those it wrote to a messages
// channel, and those found in any other value of its update (each update
// of a list of Commands), whether or not a channel keeps them. A task of
// the functional API writes no channel: its result out is searched the
// same way (the handler's on_chain_end sees every task's output: a
// message, a list of messages, or the values of an object).
func (rc *runCtx) outputMessages(r *runner, t *task, step int, out any) {
	if !(rc.modes["messages-tuple"] || rc.modes["messages"]) || !r.visible() {
		return
	}
	var found []Message
	for _, w := range t.writes {
		c := r.g.channels[w.ch]
		if c == nil || c.kind != kindMessages {
			continue
		}
		found = append(found, Messages(w.v)...)
	}
	updates, ok := t.update.([]any)
	if !ok {
		updates = []any{t.update}
	}
	// whole is true when the output is a value, not channel updates: a
	// task's result, or the update of a graph whose state is one value (an
	// entrypoint's return)
	whole := t.call != nil || r.g.root
	if t.call != nil {
		updates = []any{out}
	}
	for _, u := range updates {
		o, isObject := u.(map[string]any)
		if !isObject || (whole && len(messagesIn(u)) > 0) {
			found = append(found, messagesIn(u)...)
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(o)) {
			if c := r.g.channels[k]; !whole && c != nil && c.kind == kindMessages {
				continue // counted with the writes
			}
			found = append(found, messagesIn(o[k])...)
		}
	}
	for _, m := range found {
		if m.Type == RemoveMessage {
			continue
		}
		if m.ID != "" {
			rc.mu.Lock()
			seen := rc.seenMsg[m.ID]
			rc.seenMsg[m.ID] = true
			streamed := rc.streamed[m.ID]
			delete(rc.streamed, m.ID)
			rc.mu.Unlock()
			if streamed {
				// the legacy mode completes a message it streamed in parts
				rc.emitLegacy(r, "messages/complete", []any{messageValue(m)})
			}
			if seen {
				continue
			}
		} else {
			// the reducer gives it an id in the state; the stream needs one too
			m.ID = uuid.NewString()
		}
		meta := rc.taskMeta(r, t, step)
		meta["tags"] = []string{}
		mv := messageValue(m)
		r.emit("messages-tuple", []any{mv, meta})
		rc.emitLegacy(r, "messages/metadata", map[string]any{m.ID: map[string]any{"metadata": meta}})
		rc.emitLegacy(r, "messages/complete", []any{mv})
	}
}

func (rc *runCtx) emitLegacy(r *runner, event string, data any) {
	if rc.modes["messages"] && r.visible() {
		rc.send(r.nsParts, event, data)
	}
}

// emitCheckpoint emits the checkpoints and debug parts of a new checkpoint.
func (rc *runCtx) emitCheckpoint(r *runner, c *ckpt) {
	if !(rc.modes["checkpoints"] || rc.modes["debug"]) || !r.visible() {
		return
	}
	snap := r.g.snapshot(rc.threadID, c, snapLive, nil)
	payload := map[string]any{
		"config":        map[string]any{"configurable": map[string]any{"thread_id": rc.threadID, "checkpoint_ns": c.ns, "checkpoint_id": c.id}},
		"parent_config": nil,
		"values":        snap.Values,
		"metadata":      r.metadata(c.metadata),
		"next":          orEmptyStrings(snap.Next),
		"tasks":         checkpointTasks(snap.Tasks, false),
	}
	if c.parentID != "" {
		payload["parent_config"] = map[string]any{"configurable": map[string]any{"thread_id": rc.threadID, "checkpoint_ns": c.ns, "checkpoint_id": c.parentID}}
	}
	if rc.modes["checkpoints"] && r.visible() {
		rc.send(r.nsParts, "checkpoints", payload)
	}
	if rc.modes["debug"] && r.visible() {
		// the server adds the checkpoint objects state and history carry
		debug := maps.Clone(payload)
		debug["tasks"] = checkpointTasks(snap.Tasks, true)
		id := c.id
		debug["checkpoint"] = graphserver.Checkpoint{ThreadID: rc.threadID, CheckpointNS: c.ns, CheckpointID: &id}
		debug["parent_checkpoint"] = nil
		if c.parentID != "" {
			parent := c.parentID
			debug["parent_checkpoint"] = graphserver.Checkpoint{ThreadID: rc.threadID, CheckpointNS: c.ns, CheckpointID: &parent}
		}
		rc.send(r.nsParts, "debug", map[string]any{"type": "checkpoint", "step": c.step, "timestamp": timestamp(c.createdAt), "payload": debug})
	}
}

func orEmptyStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// checkpointTasks renders the tasks of a checkpoint payload as LangGraph's
// map_debug_checkpoint does: a failed task as {id, name, error, state}, else
// {id, name, interrupts, state} plus its result when it has a non-empty one.
// state is always present: null, or for a subgraph task the config of its
// namespace. For the debug mode (debug set), the server turns that config
// into a checkpoint ({thread_id, checkpoint_ns}) in place of state, as
// LangGraph's API server does (_preproces_debug_checkpoint_task).
func checkpointTasks(ts []graphserver.Task, debug bool) []map[string]any {
	out := make([]map[string]any, 0, len(ts))
	for _, t := range ts {
		m := map[string]any{"id": t.ID, "name": t.Name}
		if t.Error != nil {
			m["error"] = *t.Error
		} else {
			intr := t.Interrupts
			if intr == nil {
				intr = []graphserver.Interrupt{}
			}
			m["interrupts"] = intr
			if truthy(t.Result) {
				m["result"] = t.Result
			}
		}
		var ref map[string]any
		if t.Checkpoint != nil {
			ref = map[string]any{"thread_id": t.Checkpoint.ThreadID, "checkpoint_ns": t.Checkpoint.CheckpointNS}
		}
		switch {
		case ref == nil:
			m["state"] = nil
		case debug:
			m["checkpoint"] = ref
		default:
			m["state"] = map[string]any{"configurable": ref}
		}
		out = append(out, m)
	}
	return out
}

// taskKey keys the taskRuntime in a node's ctx.
type taskKey struct{}

type taskRuntime struct {
	r       *runner
	t       *task
	step    int
	cs      *ckpt
	mu      sync.Mutex
	idx     int
	usedMap bool
	// subgraphs counts the graphs invoked by this execution of the task
	subgraphs int
	// callIdx counts the task calls made by this execution of the task;
	// calls are the step's
	callIdx int
	calls   *stepCalls
}

func taskFrom(ctx context.Context) *taskRuntime {
	tr, _ := ctx.Value(taskKey{}).(*taskRuntime)
	return tr
}

// takeNullResume consumes the run's single resume value (once per run and
// namespace), falling back to the parent graph's.
func (tr *taskRuntime) takeNullResume() (any, bool) {
	r := tr.r
	r.resumeMu.Lock()
	if r.hasNull && !r.nullUsed {
		r.nullUsed = true
		v := r.nullValue
		r.resumeMu.Unlock()
		return v, true
	}
	r.resumeMu.Unlock()
	if r.nullResume != nil {
		return r.nullResume()
	}
	return nil, false
}

// Interrupt pauses the graph inside a node, surfacing value to the client
// (in the state's tasks[].interrupts and the __interrupt__ stream parts).
//
// The first time, it returns (nil, err) where errors.Is(err, ErrInterrupt):
// the node must return err. When the run is resumed with Command{resume},
// the node runs again from the start and Interrupt returns the resume value
// (the n-th call in a node gets the n-th resume value). A resume map
// {interrupt_id: value} targets one interrupt.
func Interrupt(ctx context.Context, value any) (any, error) {
	tr := taskFrom(ctx)
	if tr == nil {
		return nil, errors.New("graph.Interrupt called outside a graph node")
	}
	id := interruptID(tr.t.ns)
	return tr.interrupt([]string{id}, func(found map[string]any) any { return found[id] }, func() ([]graphserver.Interrupt, error) {
		nv, err := normalize(value)
		if err != nil {
			return nil, err
		}
		return []graphserver.Interrupt{{Value: nv, ID: id}}, nil
	})
}

// InterruptWith pauses the graph inside a node with the given interrupts,
// their values and ids kept as given: those another graph raised, which
// the node forwards (a remote graph run as a node, whose interrupt must
// pause the local graph and be resumed by the ids the remote gave it).
//
// It works as Interrupt does: the first time it returns an error matching
// ErrInterrupt, which the node must return; when the run is resumed, the
// node runs again and InterruptWith returns the resume value meant for
// these interrupts: the run's plain resume value as it is, or, when the run
// was resumed with a map {interrupt_id: value}, the entries of the map
// naming these interrupts (as a map id -> value), ready to be sent on as
// the other graph's Command{resume}. An interrupt without an id gets the
// one Interrupt would give.
func InterruptWith(ctx context.Context, interrupts []graphserver.Interrupt) (any, error) {
	tr := taskFrom(ctx)
	if tr == nil {
		return nil, errors.New("graph.InterruptWith called outside a graph node")
	}
	intrs := make([]graphserver.Interrupt, len(interrupts))
	ids := make([]string, len(interrupts))
	for i, in := range interrupts {
		if in.ID == "" {
			in.ID = interruptID(tr.t.ns)
		}
		intrs[i], ids[i] = in, in.ID
	}
	return tr.interrupt(ids, func(found map[string]any) any { return found }, func() ([]graphserver.Interrupt, error) {
		for i := range intrs {
			v, err := normalize(intrs[i].Value)
			if err != nil {
				return nil, err
			}
			intrs[i].Value = v
		}
		return intrs, nil
	})
}

// interrupt is Interrupt and InterruptWith: the resume value of the call
// (saved from an earlier execution of the task, the entries of the run's
// resume map naming ids, shaped by pick, or the run's plain resume value),
// else the interrupts raise builds, as an error pausing the graph.
func (tr *taskRuntime) interrupt(ids []string, pick func(map[string]any) any, raise func() ([]graphserver.Interrupt, error)) (any, error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	i := tr.idx
	tr.idx++
	if i < len(tr.t.resume) {
		return tr.t.resume[i], nil
	}
	if !tr.usedMap && tr.r.resumeMap != nil {
		found := map[string]any{}
		for _, id := range ids {
			if v, ok := tr.r.resumeMap[id]; ok {
				found[id] = v
			}
		}
		if len(found) > 0 {
			tr.usedMap = true
			v := pick(found)
			tr.t.resume = append(tr.t.resume, v)
			return v, nil
		}
	}
	if v, ok := tr.takeNullResume(); ok {
		tr.t.resume = append(tr.t.resume, v)
		return v, nil
	}
	intrs, err := raise()
	if err != nil {
		return nil, err
	}
	return nil, &interruptError{interrupts: intrs}
}

// Config returns the run's config (with "configurable"); nil outside a run.
func Config(ctx context.Context) graphserver.Object {
	if tr := taskFrom(ctx); tr != nil {
		return tr.r.rc.config
	}
	return nil
}

// Configurable returns config["configurable"] of the run (never nil in a run).
func Configurable(ctx context.Context) map[string]any {
	if tr := taskFrom(ctx); tr != nil {
		return tr.r.rc.configurable
	}
	return nil
}

// RuntimeContext returns the run's context object (GraphRun.Context).
func RuntimeContext(ctx context.Context) graphserver.Object {
	if tr := taskFrom(ctx); tr != nil {
		return tr.r.rc.req.Context
	}
	return nil
}

// GetStore returns the run's store, nil if it has none.
func GetStore(ctx context.Context) graphserver.Store {
	if tr := taskFrom(ctx); tr != nil {
		return tr.r.rc.req.Store
	}
	return nil
}

// NodeName returns the name of the running node ("" outside a node).
func NodeName(ctx context.Context) string {
	if tr := taskFrom(ctx); tr != nil {
		return tr.t.name
	}
	return ""
}

// Step returns the current superstep.
func Step(ctx context.Context) int {
	if tr := taskFrom(ctx); tr != nil {
		return tr.step
	}
	return 0
}

// Namespace returns the checkpoint namespace of the running task
// ("<node>:<task_id>", nested levels joined by "|").
func Namespace(ctx context.Context) string {
	if tr := taskFrom(ctx); tr != nil {
		return tr.t.ns
	}
	return ""
}

// TaskID returns the id of the running task.
func TaskID(ctx context.Context) string {
	if tr := taskFrom(ctx); tr != nil {
		return tr.t.id
	}
	return ""
}

// TaskInput returns the argument of a task started by Send (nil for a task
// triggered by an edge).
func TaskInput(ctx context.Context) any {
	if tr := taskFrom(ctx); tr != nil {
		return tr.t.arg
	}
	return nil
}

// StreamWriter returns a function emitting its argument as a "custom" stream
// part (a no-op outside a node or when custom is not streamed).
func StreamWriter(ctx context.Context) func(any) {
	tr := taskFrom(ctx)
	if tr == nil {
		return func(any) {}
	}
	return func(v any) { tr.r.emit("custom", v) }
}

// ThreadID returns the id of the thread the run executes on ("" outside a
// node).
func ThreadID(ctx context.Context) string {
	if tr := taskFrom(ctx); tr != nil {
		return tr.r.rc.threadID
	}
	return ""
}

// StreamModes returns the stream modes the run emits (as
// GraphRun.StreamModes names them: values, updates, messages-tuple,
// messages, custom, events, debug, tasks, checkpoints) and whether it
// streams the parts of subgraphs: what a node forwarding another graph's
// stream (see EmitPart) asks that graph for. It returns nil, false outside
// a node.
func StreamModes(ctx context.Context) (modes []string, subgraphs bool) {
	tr := taskFrom(ctx)
	if tr == nil {
		return nil, false
	}
	return slices.Clone(tr.r.rc.req.StreamModes), tr.r.rc.req.Subgraphs
}

// EmitPart emits a part another graph produced into the run's stream, as a
// part of the running task's subgraph, as a LangGraph RemoteGraph run as a
// node forwards its remote stream: the part's Namespace (the other graph's
// own nesting, empty for its root) is put under the task's namespace
// ("<node>:<task_id>", see Namespace), so its SSE event reads
// "<event>|<node>:<task_id>[|...]". part.Event is the SSE event name
// (values, updates, messages, messages/partial, custom, ...); part.Data must
// be valid JSON. The part is dropped, like any subgraph part, unless the run
// streams subgraphs and the mode producing that event ("messages" comes from
// messages-tuple, "messages/..." from messages); invalid JSON is dropped
// too. It is a no-op outside a node; it is safe for concurrent use.
func EmitPart(ctx context.Context, part graphserver.StreamPart) {
	tr := taskFrom(ctx)
	if tr == nil || !json.Valid(part.Data) {
		return
	}
	rc := tr.r.rc
	if !rc.req.Subgraphs || !rc.modes[modeOfEvent(part.Event)] {
		return
	}
	ns := append(strings.Split(tr.t.ns, "|"), part.Namespace...)
	rc.sendRaw(ns, part.Event, slices.Clone(part.Data))
}

// modeOfEvent returns the stream mode that produces an event.
func modeOfEvent(event string) string {
	switch {
	case event == "messages":
		return "messages-tuple"
	case strings.HasPrefix(event, "messages/"):
		return "messages"
	}
	return event
}

// MessageStream streams one chat-model reply token by token: it feeds the
// messages-tuple, legacy messages and events stream modes. Get one from
// StreamMessage; it is not safe for concurrent use.
//
// A chunk costs time in proportion to its own size whatever the length of
// the reply so far, except in the legacy messages mode, whose
// messages/partial parts carry the whole reply so far by definition.
type MessageStream struct {
	tr    *taskRuntime
	id    string
	text  strings.Builder // the content so far
	runID string

	tuple, legacy, events bool            // the modes wanted (and visible)
	first                 bool            // no chunk streamed yet
	metaJSON              json.RawMessage // the messages-tuple metadata
	eventHead             []byte          // an on_chat_model_stream part up to its chunk
	eventTail             []byte          // and after it
	meta                  map[string]any
}

// StreamMessage starts streaming an AI message with the given id (a UUID
// when empty) from the running node. Call Chunk for each piece of content,
// then End for the assembled message, which the node returns in its update.
func StreamMessage(ctx context.Context, id string) *MessageStream {
	if id == "" {
		id = uuid.NewString()
	}
	s := &MessageStream{tr: taskFrom(ctx), id: id, runID: uuid.NewString(), first: true}
	if s.tr == nil {
		return s
	}
	r, rc := s.tr.r, s.tr.r.rc
	visible := r.visible()
	s.tuple = visible && rc.modes["messages-tuple"]
	s.legacy = visible && rc.modes["messages"]
	s.events = visible && rc.modes["events"]
	if !s.tuple && !s.legacy && !s.events {
		return s
	}
	s.meta = rc.taskMeta(r, s.tr.t, s.tr.step)
	s.meta["tags"] = []string{}
	s.meta["ls_provider"] = "graphserver"
	s.meta["ls_model_type"] = "chat"
	s.metaJSON = mustJSON(s.meta)
	if s.events {
		parents := s.parents()
		r.emit("events", map[string]any{"event": "on_chat_model_start", "name": "ChatModel", "run_id": s.runID, "parent_ids": parents,
			"tags": []string{}, "metadata": s.meta, "data": map[string]any{"input": map[string]any{"messages": [][]any{{}}}}})
		// the keys of an on_chat_model_stream part, in encoding/json's order
		s.eventHead = []byte(`{"data":{"chunk":`)
		s.eventTail = fmt.Appendf(nil, `},"event":"on_chat_model_stream","metadata":%s,"name":"ChatModel","parent_ids":%s,"run_id":%s,"tags":[]}`,
			s.metaJSON, mustJSON(parents), mustJSON(s.runID))
	}
	return s
}

func (s *MessageStream) parents() []string {
	rc := s.tr.r.rc
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return []string{rc.req.RunID, rc.nodeRun[s.tr.t.id]}
}

// chunkJSON appends the AIMessageChunk of one piece of content to b, with
// the keys LangChain writes, in encoding/json's order.
func (s *MessageStream) chunkJSON(b []byte, content string) []byte {
	b = append(b, `{"additional_kwargs":{},"content":`...)
	b = appendJSONString(b, content)
	b = append(b, `,"example":false,"id":`...)
	b = appendJSONString(b, s.id)
	return append(b, `,"invalid_tool_calls":[],"name":null,"response_metadata":{},"tool_call_chunks":[],"tool_calls":[],"type":"AIMessageChunk","usage_metadata":null}`...)
}

// appendJSONString appends v encoded as a JSON string, as encoding/json
// encodes it.
func appendJSONString(b []byte, v string) []byte {
	plain := true
	for i := 0; i < len(v) && plain; i++ {
		c := v[i]
		plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	if plain {
		return append(append(append(b, '"'), v...), '"')
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return append(b, `""`...)
	}
	return append(b, enc...)
}

// Chunk streams one piece of the message's content.
func (s *MessageStream) Chunk(content string) {
	s.text.WriteString(content)
	if s.tr == nil || (!s.tuple && !s.legacy && !s.events) {
		return
	}
	r, rc := s.tr.r, s.tr.r.rc
	if s.first {
		// the message is streamed: not emitted again from the node's
		// output, and completed there in the legacy mode
		rc.mu.Lock()
		rc.seenMsg[s.id] = true
		rc.streamed[s.id] = true
		rc.mu.Unlock()
	}
	var chunk []byte
	if s.tuple {
		// [chunk, metadata], encoded in one buffer
		b := make([]byte, 0, 256+len(content)+len(s.metaJSON))
		b = s.chunkJSON(append(b, '['), content)
		chunk = b[1:]
		b = append(append(append(b, ','), s.metaJSON...), ']')
		rc.sendRaw(r.nsParts, "messages", b)
	}
	if s.legacy {
		if s.first {
			rc.emitLegacy(r, "messages/metadata", map[string]any{s.id: map[string]any{"metadata": s.meta}})
		}
		rc.emitLegacy(r, "messages/partial", []any{s.message()})
	}
	if s.events {
		if chunk == nil {
			chunk = s.chunkJSON(make([]byte, 0, 256+len(content)), content)
		}
		b := make([]byte, 0, len(s.eventHead)+len(chunk)+len(s.eventTail))
		b = append(append(append(b, s.eventHead...), chunk...), s.eventTail...)
		rc.sendRaw(r.nsParts, "events", b)
	}
	s.first = false
}

// message returns the message assembled so far.
func (s *MessageStream) message() Message {
	return Message{Type: AIMessage, Content: s.text.String(), ID: s.id, Chunks: true}
}

// End finishes the stream and returns the assembled AI message.
func (s *MessageStream) End() Message {
	m := s.message()
	if s.events {
		s.tr.r.emit("events", map[string]any{"event": "on_chat_model_end", "name": "ChatModel", "run_id": s.runID, "parent_ids": s.parents(),
			"tags": []string{}, "metadata": s.meta, "data": map[string]any{"output": messageValue(m)}})
	}
	return m
}
