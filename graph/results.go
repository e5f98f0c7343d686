package graph

// This file shapes what clients see of a task's writes, as LangGraph's
// pregel/_io.py (map_output_updates) and pregel/debug.py
// (map_task_result_writes, tasks_w_writes, map_debug_checkpoint) do.

// multiWrites is the key under which repeated writes to one channel are
// folded in a task result (LangGraph's {"$writes": [...]}).
const multiWrites = "$writes"

// taskResult folds the writes of a task to the graph's channels into an
// object channel -> value; several writes to one channel become
// {"$writes": [v1, v2, ...]} (LangGraph's map_task_result_writes, used for
// the result of tasks/debug task_result events and of state tasks).
// Writes to trigger channels (edges, Sends) are left out.
func (g *Compiled) taskResult(writes []write) map[string]any {
	res := map[string]any{}
	for _, w := range writes {
		ch := w.ch
		if _, ok := g.channels[ch]; (!ok && ch != chReturn) || ch == chPrevious {
			// as upstream, only the stream channels and a call's
			// result: an entrypoint's saved value is not shown
			continue
		}
		if ch == chRoot && g.entry != "" {
			ch = End // an entrypoint's value is LangGraph's END channel
		}
		// As upstream: a channel whose value so far is null takes the next
		// write as its only value.
		existing := res[ch]
		if existing == nil {
			res[ch] = w.v
			continue
		}
		if m, ok := existing.(map[string]any); ok && len(m) == 1 {
			if l, ok := m[multiWrites].([]any); ok {
				m[multiWrites] = append(l, w.v)
				continue
			}
		}
		res[ch] = map[string]any{multiWrites: []any{existing, w.v}}
	}
	return res
}

// stateTaskResult is the result of a task in a state snapshot (LangGraph's
// tasks_w_writes): the folded writes, or for a graph whose state is one
// root value, that value itself.
func (g *Compiled) stateTaskResult(writes []write) any {
	res := g.taskResult(writes)
	switch {
	case g.entry != "":
		return res[End]
	case g.root:
		return res[chRoot]
	}
	return res
}

// outputUpdates is what the updates stream shows of one task's writes
// (LangGraph's map_output_updates): the writes to output channels as one
// object, or a list of one-key objects when the task wrote one output
// channel several times, or null when it wrote none; for a graph whose
// state is one root value, the value written.
func (g *Compiled) outputUpdates(writes []write) any {
	if v, ok := returned(writes); ok {
		return v // a task call: its result
	}
	var updated []any
	if g.root {
		for _, w := range writes {
			if w.ch == chRoot {
				updated = append(updated, w.v)
			}
		}
	} else {
		counts := map[string]int{}
		repeated := false
		for _, w := range writes {
			if g.isOutput(w.ch) {
				counts[w.ch]++
				repeated = repeated || counts[w.ch] > 1
			}
		}
		switch {
		case len(counts) == 0:
		case repeated:
			for _, w := range writes {
				if g.isOutput(w.ch) {
					updated = append(updated, map[string]any{w.ch: w.v})
				}
			}
		default:
			one := make(map[string]any, len(counts))
			for _, w := range writes {
				if g.isOutput(w.ch) {
					one[w.ch] = w.v
				}
			}
			updated = append(updated, one)
		}
	}
	switch len(updated) {
	case 0:
		return nil
	case 1:
		return updated[0]
	}
	return updated
}

// isOutput reports whether ch is one of the graph's output channels.
func (g *Compiled) isOutput(ch string) bool {
	_, ok := g.outputSet[ch]
	return ok
}

// truthy reports whether v is truthy as Python sees it (LangGraph keeps a
// task's result in checkpoint payloads only when it is).
func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case float64:
		return v != 0
	case string:
		return v != ""
	case []any:
		return len(v) > 0
	case map[string]any:
		return len(v) > 0
	}
	return true
}
