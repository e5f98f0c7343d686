package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"maps"
	"slices"
	"strings"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
)

// RemoteOptions configure a RemoteGraph.
type RemoteOptions struct {
	// AssistantID is the remote assistant's id or the remote graph's name
	// (required).
	AssistantID string

	// Client talks to the remote server. When nil, one is built from URL,
	// APIKey and Headers (with Options' defaults: the API key is read from
	// the environment when APIKey is empty). One of Client and URL is
	// required; Client wins when both are set.
	Client  *Client
	URL     string
	APIKey  string
	Headers map[string]string

	// Config is merged under the config of every run (its configurable and
	// metadata key by key), as LangGraph's RemoteGraph config.
	Config graphserver.Object
	// Name names the graph (Name); default AssistantID.
	Name string
	// InterruptBefore and InterruptAfter are the breakpoints of runs that
	// set none of their own.
	InterruptBefore, InterruptAfter graphserver.Breakpoints
	// StreamResumable asks the remote server to keep each run's events so a
	// broken stream can resume (the JS RemoteGraph's streamResumable; the
	// Python Platform replays only such runs).
	StreamResumable bool
}

// RemoteGraph is a graph hosted by a LangGraph-compatible server (a
// graphserver, the Python Platform, the JS dev server), used locally as
// LangGraph's RemoteGraph is:
//
//   - Invoke and Stream run it (POST /threads/{id}/runs/stream with a thread,
//     POST /runs/stream without one), always with if_not_exists "create" so
//     the remote thread is created under the caller's thread id.
//   - It implements graphserver.Graph, so a graphserver can host it: Run
//     streams a remote run and forwards its parts; State, History and
//     UpdateState read and write the remote thread of the same id; Drawing,
//     Schemas and Subgraphs come from the remote assistant.
//   - Node runs it as a node of a graph built with package graph (see Node).
//
// Create it with NewRemoteGraph. It is safe for concurrent use.
type RemoteGraph struct {
	c         *Client
	assistant string
	name      string
	config    graphserver.Object
	before    graphserver.Breakpoints
	after     graphserver.Breakpoints
	resumable bool
}

var _ graphserver.Graph = (*RemoteGraph)(nil)

// NewRemoteGraph returns a RemoteGraph for opts. It does no I/O. It fails
// when AssistantID is empty, when neither Client nor URL is set, or when
// building the client fails.
func NewRemoteGraph(opts RemoteOptions) (*RemoteGraph, error) {
	if opts.AssistantID == "" {
		return nil, errors.New("client: RemoteOptions.AssistantID is required (an assistant id or a graph name)")
	}
	c := opts.Client
	if c == nil {
		if opts.URL == "" {
			return nil, errors.New("client: RemoteGraph needs a URL or a Client (RemoteOptions.URL or RemoteOptions.Client)")
		}
		var err error
		if c, err = New(Options{URL: opts.URL, APIKey: opts.APIKey, Headers: opts.Headers}); err != nil {
			return nil, err
		}
	}
	name := opts.Name
	if name == "" {
		name = opts.AssistantID
	}
	return &RemoteGraph{
		c: c, assistant: opts.AssistantID, name: name, config: cloneObject(opts.Config),
		before: slices.Clone(opts.InterruptBefore), after: slices.Clone(opts.InterruptAfter), resumable: opts.StreamResumable,
	}, nil
}

// Name returns the graph's name.
func (r *RemoteGraph) Name() string { return r.name }

// Client returns the client the graph talks through.
func (r *RemoteGraph) Client() *Client { return r.c }

// RunOptions tune one Invoke or Stream call.
type RunOptions struct {
	// ThreadID runs on that remote thread, created when missing; "" uses
	// config.configurable.thread_id, and without one the run is stateless.
	ThreadID string
	// Command, when set, is sent instead of the input (resume, update,
	// goto).
	Command *graphserver.RunCommand
	// Config is merged over RemoteOptions.Config.
	Config   graphserver.Object
	Context  graphserver.Object
	Metadata graphserver.Metadata
	// StreamMode lists the modes Stream yields; default ["updates"].
	// "updates" is always requested from the server, so interrupts are seen.
	StreamMode []string
	// Subgraphs asks for the parts of the remote graph's subgraphs too.
	Subgraphs bool
	// InterruptBefore and InterruptAfter override RemoteOptions'.
	InterruptBefore, InterruptAfter graphserver.Breakpoints
	// Headers go out with the run request (x-* ones reach the run's
	// configurable).
	Headers map[string]string
}

// Stream runs the graph and yields the parts of the requested modes:
// Event is the mode's event name ("values", "updates", "messages" for
// messages-tuple, "custom", ...), Namespace the subgraph path (only with
// opts.Subgraphs). A remote failure is yielded as a *RunError and ends the
// iteration; so is a request error. The run is created when the iterator
// is ranged over, once.
func (r *RemoteGraph) Stream(ctx context.Context, input any, opts RunOptions) iter.Seq2[graphserver.StreamPart, error] {
	requested := opts.StreamMode
	if len(requested) == 0 {
		requested = []string{"updates"}
	}
	return func(yield func(graphserver.StreamPart, error) bool) {
		threadID, rc, err := r.runCreate(input, opts, requested)
		if err != nil {
			yield(graphserver.StreamPart{}, err)
			return
		}
		for ev, err := range r.c.Runs.Stream(ctx, threadID, rc, StreamOptions{}) {
			if err != nil {
				yield(graphserver.StreamPart{}, err)
				return
			}
			part, ok := splitEvent(ev)
			switch {
			case !ok:
				continue
			case part.Event == "error":
				yield(graphserver.StreamPart{}, runError(ev.Data))
				return
			case !wants(requested, part.Event) || (len(part.Namespace) > 0 && !opts.Subgraphs):
				continue
			}
			if !yield(part, nil) {
				return
			}
		}
	}
}

// Invoke runs the graph and returns its final state: the last values the
// root graph streamed. A run paused by an interrupt returns the state it
// paused in (State tells what it waits for); a remote failure is a
// *RunError.
func (r *RemoteGraph) Invoke(ctx context.Context, input any, opts RunOptions) (json.RawMessage, error) {
	opts.StreamMode = []string{"values"}
	opts.Subgraphs = false
	var last json.RawMessage
	for part, err := range r.Stream(ctx, input, opts) {
		if err != nil {
			return nil, err
		}
		if part.Event == "values" && !isInterruptChunk(part.Data) {
			last = part.Data
		}
	}
	return last, nil
}

// runCreate builds the run request of a call: the thread, and the body
// with the merged, sanitized config and the modes asked of the server.
func (r *RemoteGraph) runCreate(input any, opts RunOptions, requested []string) (string, graphserver.RunCreate, error) {
	cfg := sanitizeConfig(mergeConfig(r.config, opts.Config))
	threadID := opts.ThreadID
	if conf, ok := cfg["configurable"].(map[string]any); ok {
		if tid, ok := conf["thread_id"].(string); ok && threadID == "" {
			threadID = tid
		}
		delete(conf, "thread_id")
	}
	rc := graphserver.RunCreate{
		AssistantID:     r.assistant,
		Command:         opts.Command,
		Config:          cfg,
		Context:         opts.Context,
		Metadata:        opts.Metadata,
		StreamMode:      serverModes(requested),
		StreamSubgraphs: opts.Subgraphs,
		StreamResumable: r.resumable,
		InterruptBefore: cmpBreakpoints(opts.InterruptBefore, r.before),
		InterruptAfter:  cmpBreakpoints(opts.InterruptAfter, r.after),
		Headers:         opts.Headers,
	}
	if threadID != "" {
		rc.IfNotExists = graphserver.IfNotExistsCreate
	}
	if opts.Command == nil && input != nil {
		b, err := marshalInput(input)
		if err != nil {
			return "", rc, err
		}
		rc.Input = b
	}
	return threadID, rc, nil
}

// Run implements graphserver.Graph: it streams a remote run of the same
// thread (stateless when the run has no Checkpointer, as temporary runs
// do), forwarding the parts of req.StreamModes to emit. A remote failure
// is returned as a *RunError, so the local run fails with the remote
// exception's name and message.
func (r *RemoteGraph) Run(ctx context.Context, req *graphserver.GraphRun, emit func(graphserver.StreamPart)) error {
	cfg := sanitizeConfig(mergeConfig(r.config, req.Config))
	rc := graphserver.RunCreate{
		AssistantID:     r.assistant,
		Input:           req.Input,
		Command:         req.Command,
		Config:          cfg,
		Context:         req.Context,
		Metadata:        req.Metadata,
		StreamMode:      serverModes(req.StreamModes),
		StreamSubgraphs: req.Subgraphs,
		StreamResumable: r.resumable,
		InterruptBefore: cmpBreakpoints(req.InterruptBefore, r.before),
		InterruptAfter:  cmpBreakpoints(req.InterruptAfter, r.after),
		Durability:      req.Durability,
	}
	if id, ok := asMap(req.Config["configurable"])["checkpoint_id"].(string); ok && id != "" {
		rc.CheckpointID = id // a fork point: the remote thread holds the checkpoints
	}
	if conf, ok := cfg["configurable"].(map[string]any); ok {
		delete(conf, "thread_id") // the thread goes in the path
	}
	threadID := ""
	if req.Checkpointer != nil {
		threadID = req.ThreadID
		rc.IfNotExists = graphserver.IfNotExistsCreate
	}
	if rc.Command != nil {
		rc.Input = nil
	}
	for ev, err := range r.c.Runs.Stream(ctx, threadID, rc, StreamOptions{}) {
		if err != nil {
			return err
		}
		part, ok := splitEvent(ev)
		switch {
		case !ok:
			continue
		case part.Event == "error":
			re := runError(ev.Data)
			return &graph.NodeError{Name: re.Name, Message: re.Message}
		case !wants(req.StreamModes, part.Event) || (len(part.Namespace) > 0 && !req.Subgraphs):
			continue
		}
		if emit != nil {
			emit(part)
		}
	}
	return nil
}

// State implements graphserver.Graph: the remote thread's state at
// req.Checkpoint (GET /threads/{id}/state, or POST .../state/checkpoint for
// a checkpoint or namespace). A remote thread that does not exist yet
// reads as an empty state.
func (r *RemoteGraph) State(ctx context.Context, req *graphserver.StateRequest) (*graphserver.ThreadState, error) {
	cp := req.Checkpoint
	threadID := cp.ThreadID
	cp.ThreadID = ""
	st, err := r.c.Threads.GetState(ctx, threadID, graphserver.ThreadStateQuery{Checkpoint: cp, Subgraphs: req.Subgraphs})
	if graphserver.ErrorCode(err) == graphserver.ENOTFOUND && cp.CheckpointID == nil {
		return &graphserver.ThreadState{Values: map[string]any{}}, nil
	}
	return st, err
}

// History implements graphserver.Graph: the remote thread's checkpoints,
// newest first (POST /threads/{id}/history). A remote thread that does not
// exist yet has none.
func (r *RemoteGraph) History(ctx context.Context, req *graphserver.HistoryRequest) ([]*graphserver.ThreadState, error) {
	cp := req.Checkpoint
	threadID := cp.ThreadID
	cp.ThreadID = ""
	hist, err := r.c.Threads.GetHistory(ctx, threadID, graphserver.ThreadHistoryQuery{
		Limit: req.Limit, Before: req.Before, Metadata: req.Metadata, Checkpoint: cp,
	})
	if graphserver.ErrorCode(err) == graphserver.ENOTFOUND {
		return []*graphserver.ThreadState{}, nil
	}
	return hist, err
}

// UpdateState implements graphserver.Graph: it writes req.Values to the
// remote thread as node req.AsNode (POST /threads/{id}/state), creating the
// remote thread first when it does not exist. A Command cannot be applied
// remotely: EBADREQUEST.
func (r *RemoteGraph) UpdateState(ctx context.Context, req *graphserver.UpdateStateRequest) (*graphserver.Checkpoint, error) {
	if req.Command != nil {
		return nil, graphserver.Errorf(graphserver.EBADREQUEST, "A RemoteGraph state update cannot carry a command")
	}
	threadID := req.Checkpoint.ThreadID
	u := graphserver.ThreadStateUpdate{Values: req.Values, AsNode: req.AsNode}
	if cp := req.Checkpoint; cp.CheckpointID != nil || cp.CheckpointNS != "" {
		cp.ThreadID = ""
		u.Checkpoint = &cp
	}
	res, err := r.c.Threads.UpdateState(ctx, threadID, u)
	if graphserver.ErrorCode(err) == graphserver.ENOTFOUND {
		if err := r.ensureThread(ctx, threadID); err != nil {
			return nil, err
		}
		res, err = r.c.Threads.UpdateState(ctx, threadID, u)
	}
	if err != nil {
		return nil, err
	}
	if res.Checkpoint == nil {
		return nil, graphserver.Errorf(graphserver.EINTERNAL, "The remote server returned no checkpoint for the state update")
	}
	return res.Checkpoint, nil
}

// ensureThread creates the remote thread bound to the remote assistant's
// graph (a state update needs metadata.graph_id).
func (r *RemoteGraph) ensureThread(ctx context.Context, threadID string) error {
	a, err := r.c.Assistants.Get(ctx, r.assistant)
	if err != nil {
		return err
	}
	_, err = r.c.Threads.Create(ctx, graphserver.ThreadCreate{
		ThreadID: threadID, IfExists: graphserver.IfExistsDoNothing,
		Metadata: graphserver.Metadata{"graph_id": a.GraphID, "assistant_id": a.AssistantID},
	})
	return err
}

// Drawing implements graphserver.Graph: the remote assistant's graph (GET
// /assistants/{id}/graph).
func (r *RemoteGraph) Drawing(ctx context.Context, config graphserver.Object, xray int) (*graphserver.Drawing, error) {
	return r.c.Assistants.GetGraph(ctx, r.assistant, xray)
}

// Schemas implements graphserver.Graph: the remote assistant's schemas.
func (r *RemoteGraph) Schemas(ctx context.Context, config graphserver.Object) (*graphserver.GraphSchemas, error) {
	return r.c.Assistants.GetSchemas(ctx, r.assistant)
}

// Subgraphs implements graphserver.Graph: the remote assistant's subgraph
// schemas.
func (r *RemoteGraph) Subgraphs(ctx context.Context, config graphserver.Object, namespace string, recurse bool) (map[string]*graphserver.GraphSchemas, error) {
	return r.c.Assistants.GetSubgraphs(ctx, r.assistant, namespace, recurse)
}

// Node runs the remote graph as a node of a local graph built with package
// graph: g.AddNode("remote", rg.Node). As LangGraph's RemoteGraph added as
// a node:
//
//   - The remote run is on the remote thread with the local run's thread
//     id (created when missing), its input the node's state, its config the
//     local run's (sanitized) merged over RemoteOptions.Config.
//   - Its parts go into the local run's stream under the node's namespace
//     ("updates|remote:<task_id>|..."), for the modes and subgraph setting
//     the local run streams (graph.EmitPart).
//   - An interrupt() in the remote graph pauses the local graph with the
//     remote interrupts, ids kept (graph.InterruptWith). Resuming the local
//     run — with a plain value, or a map keyed by those ids — runs the node
//     again, which resumes the remote run with that value instead of
//     starting it over (LangGraph issue #4879, PR #7181).
//   - A remote failure fails the node with the remote exception's name and
//     message.
//   - The node's update is the remote run's final values: keys naming the
//     local graph's channels are written through their reducers (a
//     messages channel merges by id; an append channel would append the
//     whole remote list again).
//
// The remote server must not be the one running the local graph on the
// same thread: the remote run would wait for the local one.
func (r *RemoteGraph) Node(ctx context.Context, state graph.State) (any, error) {
	threadID := graph.ThreadID(ctx)
	modes, subgraphs := graph.StreamModes(ctx)
	var cmd *graphserver.RunCommand
	if pending, err := r.pendingInterrupts(ctx, threadID); err != nil {
		return nil, err
	} else if len(pending) > 0 {
		// A resumed run answers them: the resume values the task already
		// consumed come first (the remote run had them), the run's own
		// value last. A fresh run has none, and starts the remote run over.
		var last any
		found := false
		for {
			v, err := graph.InterruptWith(ctx, pending)
			if err != nil {
				break
			}
			last, found = v, true
		}
		if found {
			b, err := json.Marshal(last)
			if err != nil {
				return nil, err
			}
			cmd = &graphserver.RunCommand{Resume: b}
		}
	}
	var input any = map[string]any(state)
	if in := graph.TaskInput(ctx); in != nil {
		input = in
	}
	for {
		// the remote graph's own subgraphs only matter when the local run
		// streams subgraphs (its parts are dropped otherwise)
		opts := RunOptions{ThreadID: threadID, Command: cmd, Config: graph.Config(ctx), Subgraphs: subgraphs}
		_, rc, err := r.runCreate(input, opts, nodeModes(modes))
		if err != nil {
			return nil, err
		}
		values, interrupts, err := r.runAsNode(ctx, threadID, rc)
		if err != nil {
			return nil, err
		}
		if len(interrupts) == 0 {
			if values == nil {
				return nil, nil
			}
			return values, nil
		}
		v, err := graph.InterruptWith(ctx, interrupts)
		if err != nil {
			return nil, err // pauses the local graph
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		cmd = &graphserver.RunCommand{Resume: b}
	}
}

// runAsNode streams one remote run for Node, forwarding its parts into the
// local stream, and returns its final values and the interrupts it paused
// on.
func (r *RemoteGraph) runAsNode(ctx context.Context, threadID string, rc graphserver.RunCreate) (map[string]any, []graphserver.Interrupt, error) {
	var values map[string]any
	var interrupts []graphserver.Interrupt
	for ev, err := range r.c.Runs.Stream(ctx, threadID, rc, StreamOptions{}) {
		if err != nil {
			return nil, nil, err
		}
		part, ok := splitEvent(ev)
		switch {
		case !ok:
			continue
		case part.Event == "error":
			re := runError(ev.Data)
			return nil, nil, &graph.NodeError{Name: re.Name, Message: re.Message}
		case part.Event == "updates":
			for _, in := range interruptsOf(part.Data) {
				if !slices.ContainsFunc(interrupts, func(x graphserver.Interrupt) bool { return x.ID == in.ID && in.ID != "" }) {
					interrupts = append(interrupts, in)
				}
			}
		case part.Event == "values" && len(part.Namespace) == 0 && !isInterruptChunk(part.Data):
			values = nil
			_ = json.Unmarshal(part.Data, &values)
		}
		graph.EmitPart(ctx, part)
	}
	return values, interrupts, nil
}

// pendingInterrupts returns the interrupts the remote thread waits on
// (none when it does not exist or is not interrupted).
func (r *RemoteGraph) pendingInterrupts(ctx context.Context, threadID string) ([]graphserver.Interrupt, error) {
	if threadID == "" {
		return nil, nil
	}
	th, err := r.c.Threads.Get(ctx, threadID)
	if graphserver.ErrorCode(err) == graphserver.ENOTFOUND {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if th.Status != graphserver.ThreadInterrupted {
		return nil, nil
	}
	var out []graphserver.Interrupt
	for _, task := range slices.Sorted(maps.Keys(th.Interrupts)) {
		out = append(out, th.Interrupts[task]...)
	}
	return out, nil
}

// splitEvent turns an SSE event into a stream part: "mode|ns1|ns2" gives
// Event mode and Namespace [ns1 ns2]. metadata events are dropped (ok
// false).
func splitEvent(ev graphserver.StreamEvent) (graphserver.StreamPart, bool) {
	if ev.Event == "metadata" || ev.Event == "" {
		return graphserver.StreamPart{}, false
	}
	parts := strings.Split(ev.Event, "|")
	p := graphserver.StreamPart{Event: parts[0], Data: ev.Data}
	if len(parts) > 1 {
		p.Namespace = parts[1:]
	}
	return p, true
}

// modeOf returns the stream mode producing an event name.
func modeOf(event string) string {
	switch {
	case event == "messages":
		return "messages-tuple"
	case strings.HasPrefix(event, "messages/"):
		return "messages"
	}
	return event
}

// wants reports whether an event belongs to one of modes.
func wants(modes []string, event string) bool {
	return slices.Contains(modes, modeOf(event)) || slices.Contains(modes, event)
}

// serverModes is what a call asks the server for: the requested modes,
// "events" dropped (not a graph mode), "updates" added (interrupts).
func serverModes(requested []string) []string {
	out := []string{}
	for _, m := range requested {
		if m != "events" && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	if !slices.Contains(out, "updates") {
		out = append(out, "updates")
	}
	return out
}

// nodeModes is what a node asks for: the local run's modes and "values"
// (the node's output).
func nodeModes(local []string) []string {
	out := slices.Clone(local)
	if !slices.Contains(out, "values") {
		out = append(out, "values")
	}
	return out
}

// interruptsOf returns the interrupts of an {"__interrupt__": [...]}
// chunk.
func interruptsOf(data json.RawMessage) []graphserver.Interrupt {
	if !bytes.Contains(data, []byte(`"__interrupt__"`)) {
		return nil
	}
	var chunk struct {
		Interrupt []graphserver.Interrupt `json:"__interrupt__"`
	}
	if json.Unmarshal(data, &chunk) != nil {
		return nil
	}
	return chunk.Interrupt
}

// isInterruptChunk reports whether a values payload is the
// {"__interrupt__": ...} chunk rather than a state.
func isInterruptChunk(data json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return false
	}
	_, ok := m["__interrupt__"]
	return ok && len(m) == 1
}

// cmpBreakpoints returns a unless it is nil, else b.
func cmpBreakpoints(a, b graphserver.Breakpoints) graphserver.Breakpoints {
	if a != nil {
		return a
	}
	return b
}

// marshalInput encodes a run input (raw JSON is sent as is).
func marshalInput(v any) (json.RawMessage, error) {
	switch in := v.(type) {
	case json.RawMessage:
		return in, nil
	case []byte:
		return json.RawMessage(in), nil
	}
	return json.Marshal(v)
}

// configDrop lists the configurable keys a remote run must not receive
// (LangGraph remote.py _CONF_DROPLIST: they name local checkpoints).
var configDrop = []string{"checkpoint_id", "checkpoint_ns", "checkpoint_map", "task_id"}

// mergeConfig merges over onto base: top-level keys replaced, except
// configurable and metadata, merged key by key (LangGraph merge_configs).
func mergeConfig(base, over graphserver.Object) graphserver.Object {
	out := graphserver.Object{}
	for _, src := range []graphserver.Object{base, over} {
		for k, v := range src {
			if k == "configurable" || k == "metadata" {
				m, _ := out[k].(map[string]any)
				if m == nil {
					m = map[string]any{}
				}
				maps.Copy(m, asMap(v))
				out[k] = m
				continue
			}
			out[k] = v
		}
	}
	return out
}

// sanitizeConfig keeps what a remote run may receive (LangGraph remote.py
// _sanitize_config): recursion_limit, string tags, and the JSON-encodable
// values of metadata and configurable, minus local checkpoint keys and
// internal "__" keys.
func sanitizeConfig(cfg graphserver.Object) graphserver.Object {
	out := graphserver.Object{}
	if v, ok := cfg["recursion_limit"]; ok {
		out["recursion_limit"] = v
	}
	if tags, ok := cfg["tags"]; ok {
		var kept []string
		switch t := tags.(type) {
		case []string:
			kept = slices.Clone(t)
		case []any:
			for _, x := range t {
				if s, ok := x.(string); ok {
					kept = append(kept, s)
				}
			}
		}
		if kept != nil {
			out["tags"] = kept
		}
	}
	for _, k := range []string{"metadata", "configurable"} {
		src, ok := cfg[k]
		if !ok {
			continue
		}
		m := map[string]any{}
		for key, v := range asMap(src) {
			if strings.HasPrefix(key, "__") || (k == "configurable" && slices.Contains(configDrop, key)) {
				continue
			}
			if _, err := json.Marshal(v); err == nil {
				m[key] = v
			}
		}
		out[k] = m
	}
	return out
}

// asMap reads a JSON object held as map[string]any or graphserver.Object.
func asMap(v any) map[string]any {
	switch m := v.(type) {
	case map[string]any:
		return m
	case graphserver.Object:
		return m
	}
	return nil
}

// cloneObject copies an Object one level deep (configurable and metadata
// included), so the caller's maps are not shared.
func cloneObject(o graphserver.Object) graphserver.Object {
	if o == nil {
		return nil
	}
	return mergeConfig(nil, o)
}
