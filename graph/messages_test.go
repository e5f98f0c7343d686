package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/stretchr/testify/require"
)

func TestMessageJSON(t *testing.T) {
	t.Parallel()
	h := graph.Human("hi")
	h.ID = "1"
	require.JSONEq(t, `{"content":"hi","additional_kwargs":{},"response_metadata":{},"type":"human","id":"1"}`, jsonOf(t, h))
	ai := graph.AI("yo")
	ai.ID = "2"
	require.JSONEq(t, `{"content":"yo","additional_kwargs":{},"response_metadata":{},"type":"ai","id":"2","tool_calls":[],"invalid_tool_calls":[]}`, jsonOf(t, ai))
	ai.Chunks = true
	require.JSONEq(t, `{"content":"yo","additional_kwargs":{},"response_metadata":{},"type":"ai","id":"2","tool_calls":[],"invalid_tool_calls":[],"tool_call_chunks":[]}`, jsonOf(t, ai))
	tool := graph.Tool("r", "call1")
	tool.ID, tool.Name = "3", "search"
	require.JSONEq(t, `{"content":"r","additional_kwargs":{},"response_metadata":{},"type":"tool","id":"3","name":"search","tool_call_id":"call1"}`, jsonOf(t, tool))

	for in, want := range map[string]string{
		`"hello"`: "human", `{"role":"user","content":"x"}`: "human", `{"role":"assistant","content":"x"}`: "ai",
		`{"type":"system","content":"x"}`: "system", `{"role":"tool","content":"x","tool_call_id":"c"}`: "tool",
	} {
		var m graph.Message
		require.NoError(t, json.Unmarshal([]byte(in), &m), in)
		require.Equal(t, want, m.Type, in)
	}
	var bad graph.Message
	require.Error(t, json.Unmarshal([]byte(`{"role":"robot","content":"x"}`), &bad))
}

func TestAddMessagesReducer(t *testing.T) {
	t.Parallel()
	g := graph.New(graph.Channels{"messages": graph.AddMessages()})
	g.AddNode("n", func(ctx context.Context, s graph.State) (any, error) { return nil, nil })
	g.AddEdge(graph.Start, "n")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	h.input(`{"messages": ["a", {"role": "ai", "content": "b", "id": "b1"}, {"type": "human", "content": "c", "id": "c1"}]}`)
	st := h.state()
	msgs := graph.Messages(st.Values.(map[string]any)["messages"])
	require.Len(t, msgs, 3)
	require.NotEmpty(t, msgs[0].ID, "ids are assigned")
	update := func(v string) {
		_, err := h.g.UpdateState(context.Background(), &graphserver.UpdateStateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: h.thread}, Values: json.RawMessage(v), AsNode: "n", Checkpointer: h.cp})
		require.NoError(t, err)
	}
	update(`{"messages": [{"role": "ai", "content": "B", "id": "b1"}, "d"]}`)
	require.Equal(t, []string{"a", "B", "c", "d"}, contents(h.state(), "messages"))
	update(`{"messages": [{"type": "remove", "id": "c1"}]}`)
	require.Equal(t, []string{"a", "B", "d"}, contents(h.state(), "messages"))
	update(`{"messages": [{"type": "remove", "id": "__remove_all__"}, "z"]}`)
	require.Equal(t, []string{"z"}, contents(h.state(), "messages"))
	_, err := h.g.UpdateState(context.Background(), &graphserver.UpdateStateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: h.thread}, Values: json.RawMessage(`{"messages": [{"type": "remove", "id": "nope"}]}`), AsNode: "n", Checkpointer: h.cp})
	require.Error(t, err)
}

func TestLegacyMessagesAndEvents(t *testing.T) {
	t.Parallel()
	h := newHarness(t, agentGraph(t))
	rec := h.input(`{"messages": ["should stream"]}`, "messages", "events")
	meta := rec.of("messages/metadata")
	require.Len(t, meta, 3) // begin, tool message, end
	partial := rec.of("messages/partial")
	require.Len(t, partial, 8)
	last := partial[4].([]any)[0].(map[string]any)
	require.Equal(t, "begin", last["content"])
	require.Equal(t, "ai", last["type"])
	complete := rec.of("messages/complete")
	var completed []string
	for _, c := range complete {
		completed = append(completed, c.([]any)[0].(map[string]any)["content"].(string))
	}
	// streamed messages complete when their node returns them
	require.Equal(t, []string{"begin", "tool_call__begin", "end"}, completed)
	require.Equal(t, last["id"], complete[0].([]any)[0].(map[string]any)["id"])
	require.NotEmpty(t, complete[1].([]any)[0].(map[string]any)["id"], "a message without id gets one in the stream")
	counts := map[string]int{}
	for _, e := range rec.of("events") {
		counts[e.(map[string]any)["event"].(string)]++
	}
	require.Equal(t, map[string]int{"on_chain_start": 4, "on_chain_end": 4, "on_chat_model_start": 2, "on_chat_model_stream": 8, "on_chat_model_end": 2}, counts)
}

func TestDrawingSchemasSubgraphs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := agentGraph(t)
	d, err := a.Drawing(ctx, nil, 0)
	require.NoError(t, err)
	require.JSONEq(t, `{"nodes":[
		{"id":"__start__","type":"schema","data":"__start__"},
		{"id":"agent","type":"runnable","data":{"id":["graphserver","graph","Node"],"name":"agent"}},
		{"id":"tool","type":"runnable","data":{"id":["graphserver","graph","Node"],"name":"tool"}},
		{"id":"__end__","type":"schema","data":"__end__"}],
		"edges":[{"source":"__start__","target":"agent"},{"source":"agent","target":"tool","conditional":true},
		{"source":"agent","target":"__end__","conditional":true},{"source":"tool","target":"agent"}]}`, jsonOf(t, d))

	s, err := a.Schemas(ctx, nil)
	require.NoError(t, err)
	var state map[string]any
	require.NoError(t, json.Unmarshal(s.StateSchema, &state))
	require.Equal(t, "messages", state["properties"].(map[string]any)["messages"].(map[string]any)["langgraph_type"])
	require.Nil(t, s.ConfigSchema)

	w := weatherGraph(t)
	d, err = w.Drawing(ctx, nil, 1)
	require.NoError(t, err)
	var ids []string
	for _, n := range d.Nodes {
		ids = append(ids, n.ID)
	}
	require.Equal(t, []string{"__start__", "normal_llm_node", "router_node", "weather_graph:model_node", "weather_graph:weather_node", "__end__"}, ids)
	require.Contains(t, d.Edges, graphserver.DrawingEdge{Source: "router_node", Target: "weather_graph:model_node", Conditional: true})
	require.Contains(t, d.Edges, graphserver.DrawingEdge{Source: "weather_graph:weather_node", Target: "__end__"})

	subs, err := w.Subgraphs(ctx, nil, "", false)
	require.NoError(t, err)
	require.Len(t, subs, 1)
	require.Contains(t, subs, "weather_graph")
	subs, err = w.Subgraphs(ctx, nil, "nope", true)
	require.NoError(t, err)
	require.Empty(t, subs)
}

// BenchmarkMessageStreamChunk measures one streamed chunk of a chat reply
// (MessageStream.Chunk) by the length of the reply so far: the cost per
// chunk must not grow with it, whether messages-tuple is streamed or not
// (the legacy messages mode, whose partial parts carry the whole reply so
// far, is linear by definition and left out).
func BenchmarkMessageStreamChunk(b *testing.B) {
	for _, mode := range []string{"messages-tuple", "values"} {
		for _, n := range []int{1_000, 100_000} {
			b.Run(fmt.Sprintf("%s/chunks=%d", mode, n), func(b *testing.B) {
				g := graph.New(graph.Channels{"messages": graph.AddMessages()})
				g.AddNode("chat", func(ctx context.Context, s graph.State) (any, error) {
					reply := graph.StreamMessage(ctx, "")
					for range n {
						reply.Chunk("word ")
					}
					return graph.Update{"messages": reply.End()}, nil
				})
				g.AddEdge(graph.Start, "chat")
				c, err := g.Compile(graph.CompileOptions{})
				require.NoError(b, err)
				parts := 0
				emit := func(graphserver.StreamPart) { parts++ }
				b.ReportAllocs()
				for b.Loop() {
					run := &graphserver.GraphRun{Input: json.RawMessage(`{"messages": ["hi"]}`), StreamModes: []string{mode}}
					require.NoError(b, c.Run(context.Background(), run, emit))
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/chunk")
			})
		}
	}
}

// A streamed chunk reads as LangChain's AIMessageChunk in the
// messages-tuple and events parts, whatever its content holds.
func TestMessageChunkParts(t *testing.T) {
	t.Parallel()
	pieces := []string{"plain ", `"quoted" \ <b>&`, "line\nbreak\t", "é✓\u2028"}
	g := graph.New(graph.Channels{"messages": graph.AddMessages()})
	g.AddNode("chat", func(ctx context.Context, s graph.State) (any, error) {
		reply := graph.StreamMessage(ctx, "m1")
		for _, p := range pieces {
			reply.Chunk(p)
		}
		return graph.Update{"messages": reply.End()}, nil
	})
	g.AddEdge(graph.Start, "chat")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	rec := h.input(`{"messages": ["hi"]}`, "messages-tuple", "events")
	var tuples []any
	for _, p := range rec.of("messages") {
		if m := p.([]any)[0].(map[string]any); m["type"] == "AIMessageChunk" {
			tuples = append(tuples, p)
		}
	}
	require.Len(t, tuples, len(pieces))
	var streamed []any
	for _, e := range rec.of("events") {
		if e := e.(map[string]any); e["event"] == "on_chat_model_stream" {
			streamed = append(streamed, e)
		}
	}
	require.Len(t, streamed, len(pieces))
	for i, p := range pieces {
		chunk := map[string]any{"content": p, "additional_kwargs": map[string]any{}, "response_metadata": map[string]any{},
			"type": "AIMessageChunk", "name": nil, "id": "m1", "example": false, "tool_calls": []any{}, "invalid_tool_calls": []any{},
			"usage_metadata": nil, "tool_call_chunks": []any{}}
		tuple := tuples[i].([]any)
		require.Equal(t, chunk, tuple[0])
		meta := tuple[1].(map[string]any)
		require.Equal(t, "chat", meta["langgraph_node"])
		require.Equal(t, 1.0, meta["langgraph_step"])
		require.Equal(t, chunk, streamed[i].(map[string]any)["data"].(map[string]any)["chunk"])
		require.Equal(t, meta, streamed[i].(map[string]any)["metadata"])
	}
	require.Equal(t, []string{"hi", "plain \"quoted\" \\ <b>&line\nbreak\té✓\u2028"}, contents(h.state(), "messages"))
}
