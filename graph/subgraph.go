package graph

import (
	"context"
	"maps"
	"strconv"
	"strings"
)

// invoke runs sub as a subgraph of the running task: in the run's
// checkpointer, stream and store, in the task's checkpoint namespace
// (<node>:<task_id>; the n-th graph invoked by one task execution gets
// "|n" appended, as LangGraph's subgraph counter does). When the namespace
// already has a checkpoint (the task runs again after a pause), the
// subgraph continues from it, taking the resume value meant for it;
// otherwise it starts from input. It returns the subgraph's output values,
// or the error that pauses the parent (ErrInterrupt) or fails it.
func (tr *taskRuntime) invoke(ctx context.Context, sub *Compiled, input any) (any, error) {
	r := tr.r
	tr.mu.Lock()
	n := tr.subgraphs
	tr.subgraphs++
	tr.mu.Unlock()
	ns := tr.t.ns
	if n > 0 {
		ns += "|" + strconv.Itoa(n)
	}
	if sub.persistent {
		ns = stableNS(ns)
	}
	if nd := r.g.nodes[tr.t.name]; nd != nil && nd.fn != nil && nd.subgraph == nil && n == 0 {
		nd.found.Store(sub)
	}
	child := newRunner(sub, r.rc, ns)
	child.parents = maps.Clone(r.parents)
	child.parents[r.ns] = tr.cs.id
	child.resumeMap = r.resumeMap
	child.nullResume = tr.takeNullResume
	existing, err := load(ctx, r.rc.cp, r.rc.threadID, ns, "")
	if err != nil {
		return nil, err
	}
	// A task's own namespace has a checkpoint only when the task runs
	// again after a pause: the subgraph continues. A persistent subgraph's
	// has one from earlier calls too: it continues only when the run
	// resumes and it has work pending (LangGraph resumes a subgraph under
	// CONFIG_KEY_RESUMING), else its input applies on top of its state.
	if existing != nil && (!sub.persistent || (r.resumingStep && len(sub.prepare(existing, ns)) > 0)) {
		return child.run(ctx, nil, false, nil, "")
	}
	in, err := normalize(input)
	if err != nil {
		return nil, err
	}
	return child.run(ctx, in, true, nil, "")
}

// recastNS drops the task ids and subgraph counters of a checkpoint
// namespace, leaving the node names (LangGraph's recast_checkpoint_ns).
func recastNS(ns string) []string {
	var names []string
	for _, part := range strings.Split(ns, "|") {
		if _, err := strconv.Atoi(part); err == nil {
			continue
		}
		name, _, _ := strings.Cut(part, ":")
		names = append(names, name)
	}
	return names
}

// ownNS is the namespace of the task that runs the graph of namespace ns:
// ns without the counter a task's second and later invoked graphs get.
func ownNS(ns string) string {
	for {
		i := strings.LastIndexByte(ns, '|')
		if i < 0 {
			return ns
		}
		if _, err := strconv.Atoi(ns[i+1:]); err != nil {
			return ns
		}
		ns = ns[:i]
	}
}

// stableNS is the namespace of a persistent subgraph run in the task of
// namespace ns: ns without task ids nor counters (LangGraph's
// recast_checkpoint_ns, applied when checkpointer=True).
func stableNS(ns string) string { return strings.Join(recastNS(ns), "|") }

// subgraphNS is the namespace where the subgraph sub of a task of
// namespace ns keeps its checkpoints.
func subgraphNS(sub *Compiled, ns string) string {
	if sub != nil && sub.persistent {
		return stableNS(ns)
	}
	return ns
}
