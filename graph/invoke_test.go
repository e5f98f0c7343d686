package graph_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/stretchr/testify/require"
)

// memStore is a Store holding items in a map (GetItem and PutItem only).
type memStore struct {
	mu    sync.Mutex
	items map[string]graphserver.Object
}

func (m *memStore) GetItem(ctx context.Context, ns []string, key string) (*graphserver.Item, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.items[strings.Join(ns, "/")+"/"+key]
	if !ok {
		return nil, nil
	}
	return &graphserver.Item{Namespace: ns, Key: key, Value: v}, nil
}

func (m *memStore) PutItem(ctx context.Context, ns []string, key string, v graphserver.Object) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.items == nil {
		m.items = map[string]graphserver.Object{}
	}
	m.items[strings.Join(ns, "/")+"/"+key] = v
	return nil
}

func (m *memStore) DeleteItem(context.Context, []string, string) error { return nil }
func (m *memStore) SearchItems(context.Context, []string, graphserver.ItemSearch) ([]graphserver.SearchItem, error) {
	return nil, nil
}
func (m *memStore) ListNamespaces(context.Context, graphserver.NamespaceList) ([][]string, error) {
	return nil, nil
}

// approval is a graph asking for approval: "draft" writes a draft (and a
// store item), "ask" interrupts with it and records the answer.
func approval(t *testing.T, drafts *atomic.Int32) *graph.Compiled {
	g := graph.New(graph.Channels{"text": graph.LastValue(), "draft": graph.LastValue(), "answer": graph.LastValue()})
	g.AddNode("draft", func(ctx context.Context, s graph.State) (any, error) {
		drafts.Add(1)
		if err := graph.GetStore(ctx).PutItem(ctx, []string{"drafts"}, "last", graphserver.Object{"user": graph.Configurable(ctx)["user"]}); err != nil {
			return nil, err
		}
		return graph.Update{"draft": "draft of " + s.String("text")}, nil
	})
	g.AddNode("ask", func(ctx context.Context, s graph.State) (any, error) {
		answer, err := graph.Interrupt(ctx, map[string]any{"approve": s.String("draft")})
		if err != nil {
			return nil, err
		}
		return graph.Update{"answer": answer}, nil
	})
	g.AddEdge(graph.Start, "draft").AddEdge("draft", "ask").AddEdge("ask", graph.End)
	g.SetOutput("draft", "answer")
	return compile(t, g, graph.CompileOptions{Name: "approval"})
}

// A compiled graph invoked inside a node function is a real subgraph: it
// runs in the run's checkpointer, store, config and stream, in the node's
// task namespace, and an interrupt inside it pauses the parent; resuming
// the parent continues it where it paused (LangGraph's nested PregelLoop:
// _loop.py takes checkpoint_ns, the checkpointer, the stream and the resume
// values of the calling task from its config, CONFIG_KEY_TASK_ID making it
// nested).
func TestInvokeInsideNodeIsSubgraph(t *testing.T) {
	t.Parallel()
	for _, declared := range []bool{false, true} {
		t.Run(map[bool]string{false: "found", true: "declared"}[declared], func(t *testing.T) {
			t.Parallel()
			var drafts, calls atomic.Int32
			sub := approval(t, &drafts)
			parent := graph.New(graph.Channels{"topic": graph.LastValue(), "outcome": graph.LastValue()})
			review := func(ctx context.Context, s graph.State) (any, error) {
				calls.Add(1)
				out, err := sub.Invoke(ctx, map[string]any{"text": s.String("topic")}, nil)
				if err != nil {
					return nil, err
				}
				o := out.(map[string]any)
				return graph.Update{"outcome": o["draft"].(string) + ": " + o["answer"].(string)}, nil
			}
			var opts []graph.NodeOption
			if declared {
				opts = append(opts, graph.WithSubgraph(sub))
			}
			parent.AddNode("review", review, opts...)
			parent.AddEdge(graph.Start, "review").AddEdge("review", graph.End)
			h := newHarness(t, compile(t, parent, graph.CompileOptions{}))
			store := &memStore{}
			cfg := graphserver.Object{"configurable": map[string]any{"user": "ann"}}

			rec, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{"topic": "cats"}`), StreamModes: []string{"updates", "values"},
				Subgraphs: true, Store: store, Config: cfg})
			require.NoError(t, err)

			// the parent paused on the subgraph's interrupt
			st := h.state()
			require.Equal(t, []string{"review"}, st.Next)
			require.Len(t, st.Interrupts, 1)
			require.Equal(t, map[string]any{"approve": "draft of cats"}, st.Interrupts[0].Value)
			task := st.Tasks[0]
			ns := "review:" + task.ID
			if declared {
				require.Equal(t, &graphserver.Checkpoint{ThreadID: h.thread, CheckpointNS: ns}, task.Checkpoint)
			}

			// its parts carry the task's namespace, the interrupt too
			require.Equal(t, []any{map[string]any{"draft": map[string]any{"draft": "draft of cats"}}, map[string]any{"__interrupt__": []any{
				map[string]any{"value": map[string]any{"approve": "draft of cats"}, "id": st.Interrupts[0].ID}}}}, rec.of("updates|"+ns))
			require.NotEmpty(t, rec.of("values|"+ns))
			require.Equal(t, []any{map[string]any{"__interrupt__": []any{map[string]any{"value": map[string]any{"approve": "draft of cats"}, "id": st.Interrupts[0].ID}}}}, rec.of("updates"))

			// the store and config of the run reached the subgraph's node
			item, err := store.GetItem(context.Background(), []string{"drafts"}, "last")
			require.NoError(t, err)
			require.Equal(t, graphserver.Object{"user": "ann"}, item.Value)

			// its checkpoints are in the run's checkpointer, under the namespace
			subState, err := h.g.State(context.Background(), &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: h.thread, CheckpointNS: ns}, Checkpointer: h.cp})
			require.NoError(t, err)
			require.Equal(t, []string{"ask"}, subState.Next)
			require.Equal(t, "draft of cats", subState.Values.(map[string]any)["draft"])
			require.Equal(t, map[string]any{"": *st.Checkpoint.CheckpointID}, subState.Metadata["parents"], "parent checkpoint")
			full, err := h.g.State(context.Background(), &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: h.thread}, Subgraphs: true, Checkpointer: h.cp})
			require.NoError(t, err)
			require.NotNil(t, full.Tasks[0].State, "the node's subgraph is known to the state")
			require.Equal(t, []string{"ask"}, full.Tasks[0].State.Next)

			// resume: the node runs again, the subgraph continues where it paused
			_, err = h.run(graphserver.GraphRun{Command: &graphserver.RunCommand{Resume: json.RawMessage(`"yes"`)}, Store: store, Config: cfg})
			require.NoError(t, err)
			require.Equal(t, "draft of cats: yes", h.state().Values.(map[string]any)["outcome"])
			require.Equal(t, int32(1), drafts.Load(), "the subgraph's finished node did not run again")
			require.Equal(t, int32(2), calls.Load())
		})
	}
}

// Each graph one task execution invokes gets its own namespace: the first
// the task's, the next ones "|1", "|2"... (LangGraph's subgraph counter in
// the task's scratchpad).
func TestInvokeTwiceInOneNode(t *testing.T) {
	t.Parallel()
	leaf := graph.New(graph.Channels{"n": graph.LastValue()})
	leaf.AddNode("inc", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"n": s.Number("n") + 1}, nil
	})
	leaf.AddEdge(graph.Start, "inc")
	sub := compile(t, leaf, graph.CompileOptions{})
	parent := graph.New(graph.Channels{"n": graph.LastValue()})
	parent.AddNode("twice", func(ctx context.Context, s graph.State) (any, error) {
		a, err := sub.Invoke(ctx, map[string]any{"n": s.Number("n")}, nil)
		if err != nil {
			return nil, err
		}
		b, err := sub.Invoke(ctx, a, nil)
		if err != nil {
			return nil, err
		}
		return b, nil
	})
	parent.AddEdge(graph.Start, "twice")
	h := newHarness(t, compile(t, parent, graph.CompileOptions{}))
	rec := h.input(`{"n": 1}`, "values")
	require.Equal(t, 3.0, h.state().Values.(map[string]any)["n"])
	hist := h.history()
	ns := "twice:" + hist[1].Tasks[0].ID
	var names []string
	for _, p := range rec.parts {
		if len(p.Namespace) > 0 {
			names = append(names, strings.Join(p.Namespace, "|"))
		}
	}
	require.Empty(t, names, "subgraph parts are streamed only with subgraphs")
	for _, n := range []string{ns, ns + "|1"} {
		st, err := h.g.State(context.Background(), &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: h.thread, CheckpointNS: n}, Checkpointer: h.cp})
		require.NoError(t, err)
		require.NotNil(t, st.Checkpoint, "namespace %s has checkpoints", n)
	}
}

// remoteID is an interrupt id as another server gave it.
const remoteID = "0123456789abcdef0123456789abcdef"

// A node standing for another graph (a RemoteGraph) forwards that graph's
// parts into the run's stream under its task's namespace, pauses the run
// with that graph's interrupts (their ids kept) and, run again after the
// resume, receives the resume value to send on (LangGraph's RemoteGraph as
// a node: pregel/remote.py prepends the caller's checkpoint_ns, streams to
// the parent's CONFIG_KEY_STREAM, raises GraphInterrupt with the remote
// interrupts).
func TestRemoteNodeHooks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, resume string
		want         any
	}{
		{"plain resume", `"ok"`, "ok"},
		{"resume map", `{"` + remoteID + `": "ok"}`, map[string]any{remoteID: "ok"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var sent []any
			var modes []string
			var subgraphs bool
			var nsSeen, threadSeen string
			g := graph.New(graph.Channels{"out": graph.LastValue()})
			g.AddNode("remote", func(ctx context.Context, s graph.State) (any, error) {
				modes, subgraphs = graph.StreamModes(ctx)
				nsSeen, threadSeen = graph.Namespace(ctx), graph.ThreadID(ctx)
				graph.EmitPart(ctx, graphserver.StreamPart{Event: "updates", Data: json.RawMessage(`{"step": {"x": 1}}`)})
				graph.EmitPart(ctx, graphserver.StreamPart{Event: "updates", Namespace: []string{"inner:abc"}, Data: json.RawMessage(`{"deep": null}`)})
				graph.EmitPart(ctx, graphserver.StreamPart{Event: "custom", Data: json.RawMessage(`"not streamed"`)})
				graph.EmitPart(ctx, graphserver.StreamPart{Event: "updates", Data: json.RawMessage(`{bad json`)})
				resume, err := graph.InterruptWith(ctx, []graphserver.Interrupt{{Value: "remote asks", ID: remoteID}})
				if err != nil {
					return nil, err
				}
				sent = append(sent, resume)
				return graph.Update{"out": "done"}, nil
			})
			g.AddEdge(graph.Start, "remote")
			h := newHarness(t, compile(t, g, graph.CompileOptions{}))
			rec, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{}`), StreamModes: []string{"updates"}, Subgraphs: true})
			require.NoError(t, err)
			require.Equal(t, []string{"updates"}, modes)
			require.True(t, subgraphs)
			st := h.state()
			require.Equal(t, []graphserver.Interrupt{{Value: "remote asks", ID: remoteID}}, st.Interrupts)
			ns := "remote:" + st.Tasks[0].ID
			require.Equal(t, ns, nsSeen)
			require.Equal(t, h.thread, threadSeen)
			require.Equal(t, []any{map[string]any{"step": map[string]any{"x": 1.0}}}, rec.of("updates|"+ns))
			require.Equal(t, []any{map[string]any{"deep": nil}}, rec.of("updates|"+ns+"|inner:abc"))
			require.Empty(t, rec.of("custom|"+ns))
			require.Equal(t, []any{map[string]any{"__interrupt__": []any{map[string]any{"value": "remote asks", "id": remoteID}}}}, rec.of("updates"))

			_, err = h.run(graphserver.GraphRun{Command: &graphserver.RunCommand{Resume: json.RawMessage(tc.resume)}})
			require.NoError(t, err)
			require.Equal(t, []any{tc.want}, sent)
			require.Equal(t, "done", h.state().Values.(map[string]any)["out"])
		})
	}
}

// Resuming with one plain value while several interrupts are pending is an
// error naming the fix; a resume map answers them by id, and once one is
// left a plain value resumes it (LangGraph _loop.py _first and
// _pending_interrupts).
func TestPlainResumeNeedsOneInterrupt(t *testing.T) {
	t.Parallel()
	g := graph.New(graph.Channels{"answers": graph.Append()})
	for _, n := range []string{"a", "b"} {
		g.AddNode(n, func(ctx context.Context, s graph.State) (any, error) {
			v, err := graph.Interrupt(ctx, "question "+n)
			if err != nil {
				return nil, err
			}
			return graph.Update{"answers": n + "=" + v.(string)}, nil
		})
		g.AddEdge(graph.Start, n)
	}
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	h.input(`{}`)
	st := h.state()
	require.Len(t, st.Interrupts, 2)

	_, err := h.run(graphserver.GraphRun{Command: &graphserver.RunCommand{Resume: json.RawMessage(`"x"`)}})
	require.Error(t, err)
	require.Equal(t, "RuntimeError", graphserver.ErrorName(err))
	require.Contains(t, err.Error(), "you must specify the interrupt id when resuming")
	require.Len(t, h.state().Interrupts, 2, "nothing was resumed")

	// answer a by id: b is still pending, then a plain value resumes it
	var aID string
	for _, task := range st.Tasks {
		if task.Name == "a" {
			aID = task.Interrupts[0].ID
		}
	}
	_, err = h.run(graphserver.GraphRun{Command: &graphserver.RunCommand{Resume: json.RawMessage(`{"` + aID + `": "1"}`)}})
	require.NoError(t, err)
	left := h.state()
	require.Len(t, left.Interrupts, 1)
	require.Equal(t, "question b", left.Interrupts[0].Value)
	_, err = h.run(graphserver.GraphRun{Command: &graphserver.RunCommand{Resume: json.RawMessage(`"2"`)}})
	require.NoError(t, err)
	require.ElementsMatch(t, []any{"a=1", "b=2"}, h.state().Values.(map[string]any)["answers"])
}
