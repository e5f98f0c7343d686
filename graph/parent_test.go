package graph_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/stretchr/testify/require"
)

// handoffAgent is a one-agent subgraph: "think" notes the agent's thought
// in its own state, then "act" hands off to next in the parent graph with a
// Command (or, when next is "", answers and ends).
func handoffAgent(t *testing.T, name, next string) *graph.Compiled {
	g := graph.New(graph.Channels{"messages": graph.AddMessages()})
	g.AddNode("think", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"messages": graph.AI(name + " thinks")}, nil
	})
	g.AddNode("act", func(ctx context.Context, s graph.State) (any, error) {
		if next == "" {
			return graph.Update{"messages": graph.AI(name + " answers")}, nil
		}
		return &graph.Command{Graph: graph.Parent, Goto: next, Update: graph.Update{"messages": graph.AI(name + " hands off"), "active": next}}, nil
	})
	g.AddEdge(graph.Start, "think").AddEdge("think", "act")
	return compile(t, g, graph.CompileOptions{Name: name})
}

// A node inside a subgraph routes and updates in the parent graph with
// Command{Graph: Parent}: the parent's task running the subgraph ends as if
// it had returned the Command (LangGraph's ParentCommand, handled by
// run_with_retry in pregel/_retry.py for the task whose namespace the
// command names); the subgraph's own update stays in the subgraph.
func TestCommandToParent(t *testing.T) {
	t.Parallel()
	for _, viaInvoke := range []bool{false, true} {
		t.Run(map[bool]string{false: "subgraph node", true: "invoked from a node"}[viaInvoke], func(t *testing.T) {
			t.Parallel()
			a, b := handoffAgent(t, "alice", "bob"), handoffAgent(t, "bob", "")
			g := graph.New(graph.Channels{"messages": graph.AddMessages(), "active": graph.LastValue()})
			if viaInvoke {
				g.AddNode("alice", func(ctx context.Context, s graph.State) (any, error) {
					return a.Invoke(ctx, map[string]any(s), nil)
				})
			} else {
				g.AddNode("alice", a)
			}
			g.AddNode("bob", b)
			g.AddEdge(graph.Start, "alice").AddEdge("bob", graph.End)
			h := newHarness(t, compile(t, g, graph.CompileOptions{}))
			rec := h.input(`{"messages": ["hi"]}`, "updates", "tasks")
			st := h.state()
			require.Equal(t, []string{"hi", "alice hands off", "bob thinks", "bob answers"}, contents(st, "messages"))
			require.Equal(t, "bob", st.Values.(map[string]any)["active"])

			updates := rec.of("updates")
			require.Len(t, updates, 2)
			alice := updates[0].(map[string]any)["alice"].(map[string]any)
			require.Equal(t, "bob", alice["active"])
			require.Equal(t, "alice hands off", alice["messages"].(map[string]any)["content"])
			var results []string
			for _, p := range rec.of("tasks") {
				if r, ok := p.(map[string]any)["result"]; ok {
					results = append(results, p.(map[string]any)["name"].(string))
					require.NotEmpty(t, r)
				}
			}
			require.Equal(t, []string{"alice", "bob"}, results)

			// alice's own thought stayed in her namespace
			hist := h.history()
			var aliceNS string
			for _, s := range hist {
				for _, task := range s.Tasks {
					if task.Name == "alice" {
						aliceNS = "alice:" + task.ID
					}
				}
			}
			if !viaInvoke {
				sub, err := h.g.State(context.Background(), &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: h.thread, CheckpointNS: aliceNS}, Checkpointer: h.cp})
				require.NoError(t, err)
				require.Equal(t, []string{"hi", "alice thinks"}, contents(sub, "messages"))
				require.Equal(t, []string{"act"}, sub.Next, "the node that handed off did not finish in its graph")
			}
		})
	}
}

// A Command for the parent graph goes up one level only: from a graph two
// levels down it routes in the middle graph.
func TestCommandToParentOneLevel(t *testing.T) {
	t.Parallel()
	inner := handoffAgent(t, "inner", "finish")
	mid := graph.New(graph.Channels{"messages": graph.AddMessages(), "active": graph.LastValue()})
	mid.AddNode("inner", inner)
	mid.AddNode("finish", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"messages": graph.AI("mid finished")}, nil
	})
	mid.AddEdge(graph.Start, "inner")
	midGraph := compile(t, mid, graph.CompileOptions{})
	top := graph.New(graph.Channels{"messages": graph.AddMessages()})
	top.AddNode("mid", midGraph)
	top.AddNode("after", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"messages": graph.AI("top after")}, nil
	})
	top.AddEdge(graph.Start, "mid").AddEdge("mid", "after")
	h := newHarness(t, compile(t, top, graph.CompileOptions{}))
	h.input(`{"messages": ["hi"]}`)
	require.Equal(t, []string{"hi", "inner hands off", "mid finished", "top after"}, contents(h.state(), "messages"))
}

// From the root graph there is no parent to send a Command to: the run
// fails with InvalidUpdateError (LangGraph's map_command: "There is no
// parent graph").
func TestCommandToParentFromRoot(t *testing.T) {
	t.Parallel()
	g := graph.New(graph.Channels{"x": graph.LastValue()})
	g.AddNode("n", func(ctx context.Context, s graph.State) (any, error) {
		return &graph.Command{Graph: graph.Parent, Goto: "n"}, nil
	})
	g.AddEdge(graph.Start, "n")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	_, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{}`)})
	require.Equal(t, "InvalidUpdateError", graphserver.ErrorName(err))
	require.Equal(t, "There is no parent graph", err.Error())
	require.Equal(t, "InvalidUpdateError('There is no parent graph')", *h.state().Tasks[0].Error)
}
