package graph_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/stretchr/testify/require"
)

// weatherGraph is reference-graphs.md's weather: a router and a subgraph
// compiled with a breakpoint before weather_node.
func weatherGraph(t *testing.T) *graph.Compiled {
	sub := graph.New(graph.Channels{"messages": graph.AddMessages(), "city": graph.LastValue()})
	sub.AddNode("model_node", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"city": "San Francisco"}, nil
	})
	sub.AddNode("weather_node", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"messages": graph.AI("It's sunny in " + s.String("city") + "!")}, nil
	})
	sub.AddEdge(graph.Start, "model_node").AddEdge("model_node", "weather_node").AddEdge("weather_node", graph.End)
	weather := compile(t, sub, graph.CompileOptions{Name: "weather_graph", InterruptBefore: []string{"weather_node"}})

	g := graph.New(graph.Channels{"messages": graph.AddMessages(), "route": graph.LastValue()})
	g.AddNode("router_node", func(ctx context.Context, s graph.State) (any, error) { return graph.Update{"route": "weather"}, nil })
	g.AddNode("normal_llm_node", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"messages": graph.AI("Hello")}, nil
	})
	g.AddNode("weather_graph", weather)
	g.AddEdge(graph.Start, "router_node")
	g.AddConditionalEdgesMap("router_node", func(ctx context.Context, s graph.State) any {
		if s.String("route") == "weather" {
			return "weather"
		}
		return "other"
	}, map[string]string{"weather": "weather_graph", "other": "normal_llm_node"})
	g.AddEdge("normal_llm_node", graph.End).AddEdge("weather_graph", graph.End)
	return compile(t, g, graph.CompileOptions{Name: "weather"})
}

func TestSubgraphBreakpointStateAndUpdate(t *testing.T) {
	t.Parallel()
	h := newHarness(t, weatherGraph(t))
	rec, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{"messages": [{"role": "user", "content": "what's the weather in sf"}]}`), StreamModes: []string{"updates", "values"}, Subgraphs: true})
	require.NoError(t, err)

	st := h.state()
	require.Equal(t, []string{"weather_graph"}, st.Next)
	require.Len(t, st.Tasks, 1)
	task := st.Tasks[0]
	require.Equal(t, []any{"__pregel_pull", "weather_graph"}, task.Path)
	require.NotNil(t, task.Checkpoint)
	ns := "weather_graph:" + task.ID
	require.Equal(t, ns, task.Checkpoint.CheckpointNS)
	require.Nil(t, task.State)

	// subgraph parts carry the namespace
	require.NotEmpty(t, rec.of("updates|"+ns))
	require.Equal(t, map[string]any{"model_node": map[string]any{"city": "San Francisco"}}, rec.of("updates|" + ns)[0])

	// subgraphs=true expands the task state
	full, err := h.g.State(context.Background(), &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: h.thread}, Subgraphs: true, Checkpointer: h.cp})
	require.NoError(t, err)
	require.NotNil(t, full.Tasks[0].State)
	require.Equal(t, []string{"weather_node"}, full.Tasks[0].State.Next)
	require.Equal(t, "San Francisco", full.Tasks[0].State.Values.(map[string]any)["city"])
	require.Equal(t, ns, full.Tasks[0].State.Checkpoint.CheckpointNS)

	// update the subgraph by namespace, then resume
	_, err = h.g.UpdateState(context.Background(), &graphserver.UpdateStateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: h.thread, CheckpointNS: ns}, Values: json.RawMessage(`{"city": "LA"}`), Checkpointer: h.cp})
	require.NoError(t, err)
	sub, err := h.g.State(context.Background(), &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: h.thread, CheckpointNS: ns}, Checkpointer: h.cp})
	require.NoError(t, err)
	require.Equal(t, []string{"weather_node"}, sub.Next)
	require.Equal(t, "update", sub.Metadata["source"])

	_, err = h.run(graphserver.GraphRun{})
	require.NoError(t, err)
	st = h.state()
	require.Empty(t, st.Next)
	require.Equal(t, []string{"what's the weather in sf", "It's sunny in LA!"}, contents(st, "messages"))

	subHist, err := h.g.History(context.Background(), &graphserver.HistoryRequest{Checkpoint: graphserver.Checkpoint{ThreadID: h.thread, CheckpointNS: ns}, Checkpointer: h.cp})
	require.NoError(t, err)
	require.NotEmpty(t, subHist)
	require.Equal(t, *h.history()[1].CheckpointID, subHist[0].Metadata["parents"].(map[string]any)[""])
}

func TestInterruptInsideSubgraph(t *testing.T) {
	t.Parallel()
	inner := graph.New(graph.Channels{"answers": graph.Append()})
	inner.AddNode("ask", func(ctx context.Context, s graph.State) (any, error) {
		a, err := graph.Interrupt(ctx, map[string]any{"question": "name?"})
		if err != nil {
			return nil, err
		}
		b, err := graph.Interrupt(ctx, "age?")
		if err != nil {
			return nil, err
		}
		return graph.Update{"answers": []any{a, b}}, nil
	})
	inner.AddEdge(graph.Start, "ask")
	g := graph.New(graph.Channels{"answers": graph.Append()})
	g.AddNode("child", compile(t, inner, graph.CompileOptions{}))
	g.AddNode("after", func(ctx context.Context, s graph.State) (any, error) { return graph.Update{"answers": "done"}, nil })
	g.AddEdge(graph.Start, "child").AddEdge("child", "after")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))

	rec := h.input(`{"answers": []}`, "updates")
	st := h.state()
	require.Equal(t, []string{"child"}, st.Next)
	require.Len(t, st.Interrupts, 1)
	require.Equal(t, map[string]any{"question": "name?"}, st.Interrupts[0].Value)
	ups := rec.of("updates")
	require.Contains(t, ups[len(ups)-1], "__interrupt__")

	// resume by id map
	resume, _ := json.Marshal(map[string]any{st.Interrupts[0].ID: "ann"})
	_, err := h.run(graphserver.GraphRun{Command: &graphserver.RunCommand{Resume: resume}})
	require.NoError(t, err)
	st = h.state()
	require.Equal(t, []string{"child"}, st.Next)
	require.Equal(t, "age?", st.Interrupts[0].Value)

	_, err = h.run(graphserver.GraphRun{Command: &graphserver.RunCommand{Resume: json.RawMessage(`42`)}})
	require.NoError(t, err)
	st = h.state()
	require.Empty(t, st.Next)
	// the subgraph returns its whole list, appended to the parent's
	require.Equal(t, []any{"ann", 42.0, "done"}, st.Values.(map[string]any)["answers"])
}
