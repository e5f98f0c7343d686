package graph

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// Run executes the graph once (see graphserver.Graph). A pause at an
// interrupt or breakpoint returns nil; a failing node's error is returned as
// the node returned it (its ErrorName, if any, names it).
func (c *Compiled) Run(ctx context.Context, req *graphserver.GraphRun, emit func(graphserver.StreamPart)) error {
	_, err := c.RunState(ctx, req, emit)
	return err
}

var _ graphserver.StateRunner = (*Compiled)(nil)

// RunState is Run that also returns the thread's state after a run that
// completed (see graphserver.StateRunner), built from the final checkpoint
// in memory. After a pause, a failure, or a run that wrote no checkpoint it
// returns a nil state.
func (c *Compiled) RunState(ctx context.Context, req *graphserver.GraphRun, emit func(graphserver.StreamPart)) (*graphserver.ThreadState, error) {
	rc := newRunCtx(req, emit)
	var input any
	hasInput := false
	if len(req.Input) > 0 && string(req.Input) != "null" && req.Command == nil {
		if err := json.Unmarshal(req.Input, &input); err != nil {
			return nil, graphserver.Errorf(graphserver.EINVALID, "input is not valid JSON")
		}
		hasInput = true
	}
	fromID, _ := rc.configurable["checkpoint_id"].(string)
	r := newRunner(c, rc, "")
	rc.root = r
	if rc.modes["events"] {
		rc.send(nil, "events", map[string]any{"event": "on_chain_start", "name": c.name, "run_id": req.RunID, "parent_ids": []string{},
			"tags": []string{}, "metadata": graphserver.Object(req.Metadata), "data": map[string]any{"input": input}})
	}
	out, err := r.run(ctx, input, hasInput, req.Command, fromID)
	rc.wg.Wait()
	if serr := r.waitSave(); err == nil && serr != nil {
		err = serr
	}
	var ie *interruptError
	if errors.As(err, &ie) {
		return nil, nil
	}
	if err != nil {
		if cerr := context.Cause(ctx); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	if rc.modes["events"] {
		rc.send(nil, "events", map[string]any{"event": "on_chain_end", "name": c.name, "run_id": req.RunID, "parent_ids": []string{},
			"tags": []string{}, "metadata": graphserver.Object(req.Metadata), "data": map[string]any{"output": out}})
	}
	var st *graphserver.ThreadState
	if f := r.final; f != nil && req.Checkpointer != nil && f.id != "" && f.id == r.saved && len(f.pending) == 0 {
		// What State reads back: the saved checkpoint, which no task ran
		// from, so no pending writes are stored with it, and whose parent is
		// the checkpoint saved before it (with durability exit, not the one
		// in memory).
		saved := *f
		saved.parentID = r.parent
		saved.values = c.tracked(f.values)
		st = c.snapshot(req.ThreadID, &saved, snapHead, nil)
	}
	return st, nil
}

// Invoke runs the graph on input and returns its output values.
//
// Called from a node of a running graph with a nil cfg, it runs as a
// subgraph of that node's task, as a compiled graph invoked inside a
// LangGraph node does: in the run's checkpointer, store, config and
// stream (its parts carry the task's namespace, "<node>:<task_id>", and
// are streamed with subgraphs), with checkpoints in that namespace. An
// Interrupt inside it pauses it and returns an error matching ErrInterrupt,
// which the node must return: the parent pauses too, and when the run is
// resumed the node runs again, its Invoke continues the subgraph where it
// paused (Interrupt there receiving the resume value) and returns the
// subgraph's output. Declare the subgraph with WithSubgraph for the thread
// state to point at it before the node has run in this process.
//
// Otherwise (outside a node, or with a cfg) it runs the graph on its own:
// without persistence (or with cfg.Checkpointer on thread cfg.ThreadID). It
// is then a convenience for tests and programs; a pause returns the values
// so far.
func (c *Compiled) Invoke(ctx context.Context, input any, cfg *graphserver.GraphRun) (any, error) {
	if tr := taskFrom(ctx); tr != nil && cfg == nil {
		return tr.invoke(ctx, c, input)
	}
	req := graphserver.GraphRun{}
	if cfg != nil {
		req = *cfg
	}
	if req.Checkpointer == nil {
		req.Checkpointer = NewMemoryCheckpointer()
	}
	if req.ThreadID == "" {
		req.ThreadID = "invoke"
	}
	if input != nil {
		b, err := json.Marshal(input)
		if err != nil {
			return nil, err
		}
		req.Input = b
	}
	if err := c.Run(ctx, &req, nil); err != nil {
		return nil, err
	}
	cs, err := load(ctx, req.Checkpointer, req.ThreadID, "", "")
	if err != nil || cs == nil {
		return map[string]any{}, err
	}
	return c.output(c.view(cs)), nil
}

// tracked returns values without those of UntrackedValue channels, which
// the thread's saved state does not hold.
func (c *Compiled) tracked(values map[string]any) map[string]any {
	out, cloned := values, false
	for k, ch := range c.channels {
		if _, ok := values[k]; ok && ch.kind == kindUntracked {
			if !cloned {
				out, cloned = maps.Clone(values), true
			}
			delete(out, k)
		}
	}
	return out
}

// graphFor returns the (sub)graph that owns namespace ns.
func (c *Compiled) graphFor(ns string) (*Compiled, error) {
	g := c
	if ns == "" {
		return g, nil
	}
	for _, name := range recastNS(ns) {
		n := g.nodes[name]
		if n == nil || n.sub() == nil {
			return nil, graphserver.Errorf(graphserver.ENOTFOUND, "subgraph %q not found", ns)
		}
		g = n.sub()
	}
	return g, nil
}

func ptr[T any](v T) *T { return &v }

func cpRef(threadID, ns, id string) *graphserver.Checkpoint {
	if id == "" {
		return nil
	}
	return &graphserver.Checkpoint{ThreadID: threadID, CheckpointNS: ns, CheckpointID: ptr(id)}
}

// snapMode says how a checkpoint's pending writes show in its snapshot.
type snapMode int

const (
	// snapLive: a checkpoint of a running loop, whose values in memory
	// already hold what the loop applied (a Command's update); finished
	// tasks keep their place in next (LangGraph's map_debug_checkpoint).
	snapLive snapMode = iota
	// snapStored: a stored checkpoint that is not the latest of its
	// namespace: the writes of a Command (the null task) are applied, the
	// writes of finished tasks are not, as a replay from it reruns them
	// (LangGraph's get_state_history and get_state with a checkpoint_id).
	snapStored
	// snapHead: the latest checkpoint of its namespace: the writes of
	// finished tasks are applied too and those tasks leave next, as
	// resuming the thread reuses them (LangGraph's get_state).
	snapHead
)

// snapshot builds the ThreadState of c: the one function behind State,
// History and the checkpoints/debug stream parts, so that one checkpoint
// reads the same through every route. expand, when set, gives the state of
// a subgraph task (nil: only a pointer to its namespace).
//
// As LangGraph's _prepare_state_snapshot and tasks_w_writes: values show
// every channel of the state; a task carries the error, interrupts and
// result (its writes, folded by taskResult) saved for it, whatever mode.
func (g *Compiled) snapshot(threadID string, c *ckpt, mode snapMode, expand func(t *task) *graphserver.ThreadState) *graphserver.ThreadState {
	tasks := g.prepare(c, c.ns)
	attachWrites(tasks, c.pending)
	base := c
	if mode != snapLive {
		if next, ok := g.withNullWrites(c, nil); ok {
			base = next
		}
	}
	values := g.view(base)
	if mode == snapHead {
		var done []*task
		for _, t := range tasks {
			if t.done {
				done = append(done, t)
			}
		}
		if len(done) > 0 {
			if next, _, err := g.apply(base, done, c.step, nil, false); err == nil {
				values = g.view(next)
			}
		}
	}
	st := &graphserver.ThreadState{
		Values:     g.stateValues(values),
		Checkpoint: cpRef(threadID, c.ns, c.id), ParentCheckpoint: cpRef(threadID, c.ns, c.parentID),
		Metadata: c.metadata, Next: []string{}, Tasks: []graphserver.Task{}, Interrupts: []graphserver.Interrupt{},
	}
	if c.id != "" {
		st.CheckpointID = ptr(c.id)
		st.CreatedAt = ptr(c.createdAt)
	}
	if c.parentID != "" {
		st.ParentCheckpointID = ptr(c.parentID)
	}
	if st.Metadata == nil {
		st.Metadata = graphserver.Object{}
	}
	for _, t := range tasks {
		gt := graphserver.Task{ID: t.id, Name: t.name, Path: t.path, Interrupts: t.interrupts}
		if t.errRec != nil {
			gt.Error = ptr(pyRepr(t.errRec))
		}
		if t.done {
			gt.Result = g.stateTaskResult(t.writes)
		}
		if !t.done || mode != snapHead {
			st.Next = append(st.Next, t.name)
		}
		if n := g.nodes[t.name]; n != nil && n.sub() != nil {
			if expand != nil {
				gt.State = expand(t)
			}
			if gt.State == nil {
				gt.Checkpoint = &graphserver.Checkpoint{ThreadID: threadID, CheckpointNS: subgraphNS(n.sub(), t.ns)}
			}
		}
		st.Interrupts = append(st.Interrupts, t.interrupts...)
		st.Tasks = append(st.Tasks, gt)
	}
	return st
}

// stateValues is what a state snapshot shows of state s: every channel
// (LangGraph reads the graph's stream channels, all of the state, not only
// its output keys), or the root value of a graph whose state is one value.
func (g *Compiled) stateValues(s State) any {
	if g.root {
		return s[chRoot]
	}
	return map[string]any(s)
}

// withNullWrites returns c with the update and goto writes of a Command
// (the null task's pending writes) applied, as LangGraph's get_state and
// its loop apply them before anything else; ok is false when there are none.
func (g *Compiled) withNullWrites(c *ckpt, track tracker) (*ckpt, bool) {
	var ws []write
	for _, pw := range c.pending {
		if pw.TaskID != nullTaskID || pw.Channel == chResume {
			continue
		}
		var v any
		_ = json.Unmarshal(pw.Value, &v)
		ws = append(ws, write{pw.Channel, v})
	}
	if len(ws) == 0 {
		return nil, false
	}
	next, _, err := g.apply(c, []*task{{name: Input, writes: ws}}, c.step, track, false)
	if err != nil {
		return nil, false
	}
	out := *c
	out.values, out.versions, out.triggers, out.sends = next.values, next.versions, next.triggers, next.sends
	return &out, true
}

func (c *Compiled) stateAt(ctx context.Context, cp driver.Checkpointer, threadID string, g *Compiled, cs *ckpt, subgraphs bool, mode snapMode) *graphserver.ThreadState {
	var expand func(t *task) *graphserver.ThreadState
	if subgraphs {
		expand = func(t *task) *graphserver.ThreadState {
			sub := g.nodes[t.name].sub()
			child, err := load(ctx, cp, threadID, subgraphNS(sub, t.ns), "")
			if err != nil || child == nil {
				return nil
			}
			return c.stateAt(ctx, cp, threadID, sub, child, true, snapHead)
		}
	}
	return g.snapshot(threadID, cs, mode, expand)
}

// latestID returns the id of the latest checkpoint of namespace ns ("" if
// there is none).
func latestID(ctx context.Context, cp driver.Checkpointer, threadID, ns string) (string, error) {
	cs, err := load(ctx, cp, threadID, ns, "")
	if err != nil || cs == nil {
		return "", err
	}
	return cs.id, nil
}

// State returns the state at req.Checkpoint (see graphserver.Graph). The
// latest checkpoint of a namespace shows the writes of the tasks that
// finished there applied (see snapMode); State and History build it alike.
func (c *Compiled) State(ctx context.Context, req *graphserver.StateRequest) (*graphserver.ThreadState, error) {
	ns := req.Checkpoint.CheckpointNS
	g, err := c.graphFor(ns)
	if err != nil {
		return nil, err
	}
	if req.Checkpointer == nil {
		return emptyState(), nil
	}
	id := ""
	if req.Checkpoint.CheckpointID != nil {
		id = *req.Checkpoint.CheckpointID
	}
	cs, err := load(ctx, req.Checkpointer, req.Checkpoint.ThreadID, ns, id)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return emptyState(), nil
	}
	mode := snapHead
	if id != "" && len(cs.pending) > 0 {
		// only pending writes make a difference: is it the latest?
		latest, err := latestID(ctx, req.Checkpointer, req.Checkpoint.ThreadID, ns)
		if err != nil {
			return nil, err
		}
		if latest != cs.id {
			mode = snapStored
		}
	}
	return c.stateAt(ctx, req.Checkpointer, req.Checkpoint.ThreadID, g, cs, req.Subgraphs, mode), nil
}

func emptyState() *graphserver.ThreadState {
	return &graphserver.ThreadState{Values: map[string]any{}, Next: []string{}, Tasks: []graphserver.Task{}, Interrupts: []graphserver.Interrupt{}}
}

// History lists the checkpoints of one namespace, newest first.
func (c *Compiled) History(ctx context.Context, req *graphserver.HistoryRequest) ([]*graphserver.ThreadState, error) {
	ns := req.Checkpoint.CheckpointNS
	g, err := c.graphFor(ns)
	if err != nil {
		return nil, err
	}
	if req.Checkpointer == nil {
		return []*graphserver.ThreadState{}, nil
	}
	before := req.Before
	if req.Checkpoint.CheckpointID != nil && *req.Checkpoint.CheckpointID != "" {
		upTo := *req.Checkpoint.CheckpointID + "\x00"
		if before == "" || upTo < before {
			before = upTo
		}
	}
	recs, err := req.Checkpointer.ListCheckpoints(ctx, req.Checkpoint.ThreadID, driver.CheckpointListOptions{NS: ns, Before: before, Limit: req.Limit, Metadata: req.Metadata})
	if err != nil {
		return nil, err
	}
	// The latest checkpoint of the namespace reads as State shows it. It
	// heads the list unless the list is bounded or filtered.
	head := ""
	if slices.ContainsFunc(recs, func(r *driver.CheckpointRecord) bool { return len(r.PendingWrites) > 0 }) {
		if before == "" && len(req.Metadata) == 0 {
			head = recs[0].CheckpointID
		} else if head, err = latestID(ctx, req.Checkpointer, req.Checkpoint.ThreadID, ns); err != nil {
			return nil, err
		}
	}
	out := make([]*graphserver.ThreadState, 0, len(recs))
	for _, rec := range recs {
		cs, err := fromRecord(rec)
		if err != nil {
			return nil, err
		}
		mode := snapStored
		if rec.CheckpointID == head {
			mode = snapHead
		}
		out = append(out, g.snapshot(req.Checkpoint.ThreadID, cs, mode, nil))
	}
	return out, nil
}

// UpdateState writes req.Values as if node req.AsNode had returned them
// (see graphserver.Graph). AsNode may also be Start (values go through the
// input mapping and the edges out of Start), Input (a new input checkpoint),
// End with no values (drop pending tasks) or Copy (fork the checkpoint).
// An empty AsNode is the node that ran last; EINVALID if that is ambiguous.
// Values or a command the graph cannot apply are EBADREQUEST, naming the
// error as LangGraph does ("InvalidUpdateError: ...").
func (c *Compiled) UpdateState(ctx context.Context, req *graphserver.UpdateStateRequest) (*graphserver.Checkpoint, error) {
	out, err := c.updateState(ctx, req)
	var ne *NodeError
	if errors.As(err, &ne) {
		return nil, graphserver.Errorf(graphserver.EBADREQUEST, "%s: %s", ne.Name, ne.Message)
	}
	return out, err
}

func (c *Compiled) updateState(ctx context.Context, req *graphserver.UpdateStateRequest) (*graphserver.Checkpoint, error) {
	if req.Checkpointer == nil {
		return nil, graphserver.Errorf(graphserver.EBADREQUEST, "update state needs a checkpointer")
	}
	ns := req.Checkpoint.CheckpointNS
	g, err := c.graphFor(ns)
	if err != nil {
		return nil, err
	}
	threadID := req.Checkpoint.ThreadID
	id := ""
	if req.Checkpoint.CheckpointID != nil {
		id = *req.Checkpoint.CheckpointID
	}
	cs, err := load(ctx, req.Checkpointer, threadID, ns, id)
	if err != nil {
		return nil, err
	}
	fresh := cs == nil
	rc := newRunCtx(&graphserver.GraphRun{ThreadID: threadID, Config: req.Config, Metadata: req.Metadata, Durability: "sync", Checkpointer: req.Checkpointer, Store: req.Store}, nil)
	r := newRunner(g, rc, ns)
	if fresh {
		cs = emptyCkpt(ns)
	} else {
		r.track.loaded(cs)
		r.saved = cs.id
		if p, ok := cs.metadata["parents"].(map[string]any); ok {
			for k, v := range p {
				if s, ok := v.(string); ok {
					r.parents[k] = s
				}
			}
		}
	}
	var values any
	hasValues := len(req.Values) > 0 && string(req.Values) != "null"
	if hasValues {
		if err := json.Unmarshal(req.Values, &values); err != nil {
			return nil, graphserver.Errorf(graphserver.EINVALID, "values is not valid JSON")
		}
	}
	asNode := req.AsNode
	if asNode == "" && req.Command == nil {
		asNode, err = g.inferAsNode(cs)
		if err != nil {
			return nil, err
		}
	}
	save := func(next *ckpt) (*graphserver.Checkpoint, error) {
		if err := r.persist(ctx, next, true); err != nil {
			return nil, err
		}
		return &graphserver.Checkpoint{ThreadID: threadID, CheckpointNS: ns, CheckpointID: ptr(next.id)}, nil
	}
	switch asNode {
	case Copy:
		next := cs.next(cs.step+1, "fork")
		return save(next)
	case Input:
		next := cs.next(cs.step+1, "input")
		for _, t := range g.prepare(cs, ns) {
			if !t.push {
				markSeen(next, cs, t)
			}
		}
		next.sends = nil
		next.start, next.hasStart = values, true
		next.triggers[Start] = nextVersion(maxVersion(next))
		return save(next)
	}
	if _, ok := g.nodes[asNode]; !ok && asNode != Start && asNode != End && req.Command == nil {
		return nil, graphserver.Errorf(graphserver.EINVALID, "Node %s does not exist", asNode)
	}
	// apply the writes of tasks that finished at the latest checkpoint
	base := cs
	if id == "" && len(cs.pending) > 0 {
		tasks := g.prepare(cs, ns)
		attachWrites(tasks, cs.pending)
		var done []*task
		for _, t := range tasks {
			if t.done {
				done = append(done, t)
			}
		}
		r.applyNullWrites(cs)
		if len(done) > 0 {
			if base, _, err = g.apply(cs, done, cs.step, r.track, true); err != nil {
				return nil, err
			}
		}
	}
	next := base.next(cs.step+1, "update")
	next.parentID = cs.id
	if asNode == End && !hasValues {
		for _, t := range g.prepare(base, ns) {
			if !t.push {
				markSeen(next, base, t)
			}
		}
		next.sends = nil
		next, _, err = g.apply(next, nil, cs.step+1, r.track, true)
		if err != nil {
			return nil, err
		}
		next.metadata = graphserver.Object{"source": "update", "step": cs.step + 1}
		next.parentID = cs.id
		return save(next)
	}
	t := &task{name: asNode, path: []any{}}
	state := g.view(base)
	var out any = values
	if req.Command != nil {
		cmd := &Command{}
		if len(req.Command.Update) > 0 {
			if err := json.Unmarshal(req.Command.Update, &cmd.Update); err != nil {
				return nil, graphserver.Errorf(graphserver.EINVALID, "Invalid command.update: must be an object or a list of [key, value] pairs")
			}
		}
		if len(req.Command.Goto) > 0 {
			var gt any
			if err := json.Unmarshal(req.Command.Goto, &gt); err != nil {
				return nil, graphserver.Errorf(graphserver.EINVALID, "Invalid command.goto: must be a node name, a {node, input} object or a list of them")
			}
			cmd.Goto = gotoFromJSON(gt)
		}
		out = cmd
	}
	if asNode == Start {
		ws, err := g.inputWrites(values)
		if err != nil {
			return nil, err
		}
		t.writes = ws
		out = nil
		tmp := *base
		tmp.start = values
		if err := r.writesFor(ctx, &tmp, t, state, out); err != nil {
			return nil, err
		}
	} else if asNode == End || asNode == "" {
		uw, _, err := g.nodeWrites(values)
		if err != nil {
			return nil, err
		}
		t.writes = uw
		if cmd, ok := out.(*Command); ok {
			cw, _, err := g.nodeWrites(cmd.Update)
			if err != nil {
				return nil, err
			}
			gw, err := g.gotoWrites(cmd.Goto)
			if err != nil {
				return nil, err
			}
			t.writes = append(append(t.writes, cw...), gw...)
		}
	} else if err := r.writesFor(ctx, base, t, state, out); err != nil {
		return nil, err
	}
	t.name = Input // no versions_seen for the update task
	applied, _, err := g.apply(base, []*task{t}, cs.step+1, r.track, true)
	if err != nil {
		return nil, err
	}
	applied.metadata = graphserver.Object{"source": "update", "step": cs.step + 1}
	maps.Copy(applied.metadata, req.Metadata)
	applied.parentID = cs.id
	applied.createdAt = time.Now().UTC()
	return save(applied)
}

// inferAsNode picks the node an update is attributed to when none is given.
func (g *Compiled) inferAsNode(cs *ckpt) (string, error) {
	if len(g.nodes) == 1 {
		for n := range g.nodes {
			return n, nil
		}
	}
	best, bestV, tie := "", "", false
	for n, seen := range cs.seen {
		if _, ok := g.nodes[n]; !ok && n != Start {
			continue
		}
		for _, v := range seen {
			switch {
			case vcmp(v, bestV) > 0:
				best, bestV, tie = n, v, false
			case vcmp(v, bestV) == 0 && n != best:
				tie = true
			}
		}
	}
	if best == "" {
		return Start, nil
	}
	if tie {
		return "", graphserver.Errorf(graphserver.EINVALID, "Ambiguous update, specify as_node")
	}
	return best, nil
}
