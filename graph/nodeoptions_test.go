package graph_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/stretchr/testify/require"
)

// order records the nodes that ran, step by step.
type order struct {
	mu  sync.Mutex
	ran []string
}

func (o *order) node(name string) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (any, error) {
		o.mu.Lock()
		o.ran = append(o.ran, name)
		o.mu.Unlock()
		return graph.Update{"log": name}, nil
	}
}

// deferGraph is LangGraph's defer example: a fans out to b and c, b goes
// on to b2, and both branches end in d.
func deferGraph(t *testing.T, o *order, opts ...graph.NodeOption) *harness {
	g := graph.New(graph.Channels{"log": graph.Append()})
	for _, n := range []string{"a", "b", "b2", "c"} {
		g.AddNode(n, o.node(n))
	}
	g.AddNode("d", o.node("d"), opts...)
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", "b")
	g.AddEdge("a", "c")
	g.AddEdge("b", "b2")
	g.AddEdge("b2", "d")
	g.AddEdge("c", "d")
	g.AddEdge("d", graph.End)
	return newHarness(t, compile(t, g, graph.CompileOptions{}))
}

// A deferred node waits until nothing else is scheduled: with branches of
// different lengths it runs once, after the longest (LangGraph's
// add_node(defer=True): its branch:to channel is a LastValueAfterFinish,
// available after apply_writes calls finish() in a step whose updates
// trigger no node). Without defer the node runs after each branch.
func TestDeferredNode(t *testing.T) {
	t.Parallel()
	o := &order{}
	h := deferGraph(t, o, graph.WithDefer())
	h.input(`{"log": []}`)
	require.Equal(t, []any{"a", "b", "c", "b2", "d"}, values(h.state())["log"])

	o = &order{}
	h = deferGraph(t, o)
	h.input(`{"log": []}`)
	require.Equal(t, []any{"a", "b", "c", "b2", "d", "d"}, values(h.state())["log"], "without defer d runs twice")
}

// The deferred trigger survives a pause: an interrupt in the long branch
// saves the pending d in the checkpoint, and the resumed run runs it once
// at the end.
func TestDeferredNodeAcrossInterrupt(t *testing.T) {
	t.Parallel()
	g := graph.New(graph.Channels{"log": graph.Append()})
	o := &order{}
	for _, n := range []string{"a", "b", "c"} {
		g.AddNode(n, o.node(n))
	}
	g.AddNode("b2", func(ctx context.Context, s graph.State) (any, error) {
		if _, err := graph.Interrupt(ctx, "go on?"); err != nil {
			return nil, err
		}
		return graph.Update{"log": "b2"}, nil
	})
	g.AddNode("d", o.node("d"), graph.WithDefer())
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", "b")
	g.AddEdge("a", "c")
	g.AddEdge("b", "b2")
	g.AddEdge("b2", "d")
	g.AddEdge("c", "d")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	h.input(`{"log": []}`)
	st := h.state()
	require.Equal(t, []string{"b2"}, st.Next)
	_, err := h.run(graphserver.GraphRun{Command: &graphserver.Command{Resume: json.RawMessage(`"yes"`)}})
	require.NoError(t, err)
	require.Equal(t, []any{"a", "b", "c", "b2", "d"}, values(h.state())["log"])
}

// A deferred join (add_edge([a, b], c) to a deferred node) waits for its
// nodes and for the end of the other work (NamedBarrierValueAfterFinish).
func TestDeferredJoin(t *testing.T) {
	t.Parallel()
	g := graph.New(graph.Channels{"log": graph.Append()})
	o := &order{}
	for _, n := range []string{"a", "b", "b2", "b3"} {
		g.AddNode(n, o.node(n))
	}
	g.AddNode("j", o.node("j"), graph.WithDefer())
	g.AddEdge(graph.Start, "a")
	g.AddEdge(graph.Start, "b")
	g.AddEdge("b", "b2")
	g.AddEdge("b2", "b3")
	g.AddJoinEdge([]string{"a", "b"}, "j")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	h.input(`{"log": []}`)
	require.Equal(t, []any{"a", "b", "b2", "b3", "j"}, values(h.state())["log"])
}

// A node may return a list of Commands (and updates): each Command's update
// applies and each goto is followed (LangGraph graph/state.py _get_updates
// and _control_branch over a list of Commands).
func TestNodeReturnsListOfCommands(t *testing.T) {
	t.Parallel()
	o := &order{}
	g := graph.New(graph.Channels{"log": graph.Append(), "n": graph.ReducerOf(func(a, b float64) float64 { return a + b })})
	g.AddNode("router", func(ctx context.Context, s graph.State) (any, error) {
		return []any{
			graph.Command{Update: graph.Update{"n": 1}, Goto: "x"},
			&graph.Command{Update: graph.Update{"n": 2}, Goto: graph.Send{Node: "y", Arg: map[string]any{"log": "sent"}}},
			graph.Update{"n": 4},
		}, nil
	})
	g.AddNode("x", o.node("x"))
	g.AddNode("y", func(ctx context.Context, s graph.State) (any, error) { return graph.Update{"log": s["log"]}, nil })
	g.AddEdge(graph.Start, "router")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	rec := h.input(`{}`, "updates")
	st := values(h.state())
	require.Equal(t, 7.0, st["n"])
	require.ElementsMatch(t, []any{"x", "sent"}, st["log"])
	require.Equal(t, map[string]any{"router": []any{map[string]any{"n": 1.0}, map[string]any{"n": 2.0}, map[string]any{"n": 4.0}}}, rec.of("updates")[0])

	g2 := graph.New(graph.Channels{"n": graph.LastValue()})
	g2.AddNode("only", func(ctx context.Context, s graph.State) (any, error) {
		return []graph.Command{{Update: graph.Update{"n": 1}, Goto: graph.End}}, nil
	})
	g2.AddEdge(graph.Start, "only")
	h2 := newHarness(t, compile(t, g2, graph.CompileOptions{}))
	h2.input(`{}`)
	require.Equal(t, 1.0, values(h2.state())["n"])
}

// A router may call Interrupt: the run pauses with the router's interrupt,
// and on resume the task runs again, node and router, the router's
// Interrupt returning the resume value (LangGraph: a branch runs in the
// task's writers, so interrupt() in a router raises GraphInterrupt for the
// task).
func TestRouterInterrupt(t *testing.T) {
	t.Parallel()
	var runs int
	var mu sync.Mutex
	g := graph.New(graph.Channels{"log": graph.Append()})
	g.AddNode("draft", func(ctx context.Context, s graph.State) (any, error) {
		mu.Lock()
		runs++
		mu.Unlock()
		return graph.Update{"log": "draft"}, nil
	})
	g.AddNode("publish", func(ctx context.Context, s graph.State) (any, error) { return graph.Update{"log": "published"}, nil })
	g.AddNode("discard", func(ctx context.Context, s graph.State) (any, error) { return graph.Update{"log": "discarded"}, nil })
	g.AddEdge(graph.Start, "draft")
	g.AddConditionalEdges("draft", func(ctx context.Context, s graph.State) any {
		ok, err := graph.Interrupt(ctx, map[string]any{"question": "publish?", "log": s["log"]})
		if err != nil {
			return err
		}
		if ok == true {
			return "publish"
		}
		return "discard"
	}, "publish", "discard")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	rec := h.input(`{}`, "updates")
	st := h.state()
	require.Len(t, st.Interrupts, 1)
	require.Equal(t, map[string]any{"question": "publish?", "log": []any{"draft"}}, st.Interrupts[0].Value, "the router reads the node's update")
	require.Equal(t, []string{"draft"}, st.Next)
	require.Contains(t, jsonOf(t, rec.of("updates")), "publish?")

	_, err := h.run(graphserver.GraphRun{Command: &graphserver.Command{Resume: json.RawMessage(`true`)}})
	require.NoError(t, err)
	require.Equal(t, []any{"draft", "published"}, values(h.state())["log"])
	require.Equal(t, 2, runs, "the node runs again with its router")
}

// AddSequence adds nodes chained by edges, in order (LangGraph's
// add_sequence); an empty sequence or a name used twice fails Compile.
func TestAddSequence(t *testing.T) {
	t.Parallel()
	o := &order{}
	g := graph.New(graph.Channels{"log": graph.Append()})
	g.AddSequence(
		graph.SequenceNode{Name: "one", Node: o.node("one")},
		graph.SequenceNode{Name: "two", Node: o.node("two"), Options: []graph.NodeOption{graph.WithRetry()}},
		graph.SequenceNode{Name: "three", Node: o.node("three")},
	)
	g.AddEdge(graph.Start, "one")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	rec := h.input(`{}`, "updates")
	require.Equal(t, []any{"one", "two", "three"}, values(h.state())["log"])
	require.Len(t, rec.of("updates"), 3)

	_, err := graph.New(nil).AddSequence().Compile(graph.CompileOptions{})
	require.ErrorContains(t, err, "Sequence requires at least one node.")
	_, err = graph.New(nil).AddSequence(graph.SequenceNode{Name: "x", Node: o.node("x")}, graph.SequenceNode{Name: "x", Node: o.node("x")}).Compile(graph.CompileOptions{})
	require.ErrorContains(t, err, `node "x" already exists`)
}

// A node with an input schema reads only its keys; a key the state lacks
// is a private channel other nodes can write, shown in the thread's state
// but not in the graph's input or output (LangGraph add_node(input_schema=)
// and _add_schema: a node schema's keys become channels; the output
// channels stay the state schema's).
func TestNodeInputSchema(t *testing.T) {
	t.Parallel()
	var seen []graph.State
	g := graph.New(graph.Channels{"question": graph.LastValue(), "answer": graph.LastValue(), "log": graph.Append()})
	g.AddNode("think", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"scratch": "thought about " + s.String("question"), "log": "think"}, nil
	}, graph.WithInput(graph.Channels{"question": nil}))
	g.AddNode("answer", func(ctx context.Context, s graph.State) (any, error) {
		seen = append(seen, s)
		return graph.Update{"answer": s.String("scratch") + "!"}, nil
	}, graph.WithInput(graph.Channels{"scratch": graph.LastValue(), "left": graph.RemainingSteps()}))
	g.AddEdge(graph.Start, "think")
	g.AddEdge("think", "answer")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	rec := h.input(`{"question": "life", "scratch": "ignored input"}`, "values", "tasks")
	require.Equal(t, []graph.State{{"scratch": "thought about life", "left": 23.0}}, seen)
	out := rec.of("values")
	require.Equal(t, map[string]any{"question": "life", "answer": "thought about life!", "log": []any{"think"}}, out[len(out)-1], "private keys are not output")
	require.Equal(t, "thought about life", values(h.state())["scratch"], "the state shows them")
	tasks := rec.of("tasks")
	require.Equal(t, map[string]any{"question": "life"}, tasks[0].(map[string]any)["input"], "the tasks stream shows the node's input")
}

// A breakpoint before a deferred node pauses once it is finished (made
// available): the checkpoint keeps that, the state's next names it, and
// resuming runs it.
func TestDeferredNodeBreakpoint(t *testing.T) {
	t.Parallel()
	o := &order{}
	g := graph.New(graph.Channels{"log": graph.Append()})
	for _, n := range []string{"a", "b", "b2", "c"} {
		g.AddNode(n, o.node(n))
	}
	g.AddNode("d", o.node("d"), graph.WithDefer())
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", "b")
	g.AddEdge("a", "c")
	g.AddEdge("b", "b2")
	g.AddEdge("b2", "d")
	g.AddEdge("c", "d")
	h := newHarness(t, compile(t, g, graph.CompileOptions{InterruptBefore: []string{"d"}}))
	h.input(`{"log": []}`)
	st := h.state()
	require.Equal(t, []string{"d"}, st.Next)
	require.Equal(t, []any{"a", "b", "c", "b2"}, values(st)["log"])
	_, err := h.run(graphserver.GraphRun{})
	require.NoError(t, err)
	require.Equal(t, []any{"a", "b", "c", "b2", "d"}, values(h.state())["log"])
	require.Empty(t, h.state().Next)
}

// A list of Commands holding one for the parent graph sends that Command
// up, as LangGraph's _control_branch raises ParentCommand for it.
func TestListOfCommandsToParent(t *testing.T) {
	t.Parallel()
	sub := graph.New(graph.Channels{"log": graph.Append()})
	sub.AddNode("hand_off", func(ctx context.Context, s graph.State) (any, error) {
		return []graph.Command{
			{Update: graph.Update{"log": "kept in the subgraph"}},
			{Graph: graph.Parent, Goto: "next", Update: graph.Update{"log": "to the parent"}},
		}, nil
	})
	sub.AddEdge(graph.Start, "hand_off")
	g := graph.New(graph.Channels{"log": graph.Append()})
	g.AddNode("agent", compile(t, sub, graph.CompileOptions{Name: "agent"}))
	g.AddNode("next", func(ctx context.Context, s graph.State) (any, error) { return graph.Update{"log": "next ran"}, nil })
	g.AddEdge(graph.Start, "agent")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	h.input(`{}`)
	require.Equal(t, []any{"to the parent", "next ran"}, values(h.state())["log"])
}
