package graph_test

import (
	"context"
	"sync"
	"testing"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/stretchr/testify/require"
)

// fakeModel cycles through replies, streaming each one character by character.
type fakeModel struct {
	mu      sync.Mutex
	replies []string
	n       int
}

func (m *fakeModel) reply(ctx context.Context) graph.Message {
	m.mu.Lock()
	text := m.replies[m.n%len(m.replies)]
	m.n++
	m.mu.Unlock()
	s := graph.StreamMessage(ctx, "")
	for _, r := range text {
		s.Chunk(string(r))
	}
	return s.End()
}

// agentGraph is a small version of reference-graphs.md's agent.
func agentGraph(t testing.TB) *graph.Compiled {
	t.Helper()
	model := &fakeModel{replies: []string{"begin", "end"}}
	g := graph.New(graph.Channels{
		"messages":  graph.AddMessages(),
		"interrupt": graph.LastValue().WithDefault(false),
	})
	g.AddNode("agent", func(ctx context.Context, s graph.State) (any, error) {
		if s.Bool("interrupt") {
			if _, err := graph.Interrupt(ctx, "i want to interrupt"); err != nil {
				return nil, err
			}
		}
		return graph.Update{"interrupt": false, "messages": []graph.Message{model.reply(ctx)}}, nil
	})
	g.AddNode("tool", func(ctx context.Context, s graph.State) (any, error) {
		msgs := s.Messages("messages")
		return graph.Update{"messages": graph.Tool("tool_call__"+msgs[len(msgs)-1].Text(), "tool_call_id")}, nil
	})
	g.AddEdge(graph.Start, "agent")
	g.AddConditionalEdges("agent", func(ctx context.Context, s graph.State) any {
		msgs := s.Messages("messages")
		if msgs[len(msgs)-1].Text() == "end" {
			return graph.End
		}
		return "tool"
	}, "tool", graph.End)
	g.AddEdge("tool", "agent")
	c, err := g.Compile(graph.CompileOptions{Name: "agent"})
	require.NoError(t, err)
	return c
}

func TestAgentCheckpoints(t *testing.T) {
	t.Parallel()
	h := newHarness(t, agentGraph(t))
	rec := h.input(`{"messages":[{"role":"human","content":"foo"}]}`, "values", "updates", "messages-tuple")

	st := h.state()
	require.Equal(t, []string{"foo", "begin", "tool_call__begin", "end"}, contents(st, "messages"))
	require.Empty(t, st.Next)

	hist := h.history()
	require.Len(t, hist, 5)
	var sources []string
	var steps []float64
	var nexts [][]string
	for i := len(hist) - 1; i >= 0; i-- {
		sources = append(sources, hist[i].Metadata["source"].(string))
		steps = append(steps, toFloat(hist[i].Metadata["step"]))
		nexts = append(nexts, hist[i].Next)
	}
	require.Equal(t, []string{"input", "loop", "loop", "loop", "loop"}, sources)
	require.Equal(t, []float64{-1, 0, 1, 2, 3}, steps)
	require.Equal(t, [][]string{{"__start__"}, {"agent"}, {"tool"}, {"agent"}, {}}, nexts)
	require.Nil(t, hist[4].ParentCheckpoint)
	require.Equal(t, *hist[4].Checkpoint.CheckpointID, *hist[3].ParentCheckpoint.CheckpointID)

	// values: input state then one per step
	values := rec.of("values")
	require.Len(t, values, 4)
	require.Len(t, values[0].(map[string]any)["messages"], 1)
	// updates: one per node
	updates := rec.of("updates")
	require.Len(t, updates, 3)
	require.Contains(t, updates[0], "agent")
	require.Contains(t, updates[1], "tool")
	// messages: 5+3 streamed chunks, plus the tool message from the output
	msgs := rec.of("messages")
	require.Len(t, msgs, 9)
	first := msgs[0].([]any)
	require.Equal(t, "b", first[0].(map[string]any)["content"])
	require.Equal(t, "AIMessageChunk", first[0].(map[string]any)["type"])
	meta := first[1].(map[string]any)
	require.Equal(t, "agent", meta["langgraph_node"])
	require.Equal(t, 1.0, meta["langgraph_step"])
	require.Equal(t, []any{"branch:to:agent"}, meta["langgraph_triggers"])
	require.Equal(t, []any{"__pregel_pull", "agent"}, meta["langgraph_path"])
	require.Regexp(t, `^agent:[0-9a-f-]{36}$`, meta["langgraph_checkpoint_ns"])
	tool := msgs[5].([]any)[0].(map[string]any)
	require.Equal(t, "tool", tool["type"])
	require.Equal(t, "tool_call__begin", tool["content"])

	// the final AI message has the streamed id and tool_call_chunks
	final := st.Values.(map[string]any)["messages"].([]any)[1].(map[string]any)
	require.Equal(t, first[0].(map[string]any)["id"], final["id"])
	require.Equal(t, []any{}, final["tool_call_chunks"])
	require.Equal(t, []any{}, final["tool_calls"])
}

func toFloat(v any) float64 {
	switch v := v.(type) {
	case float64:
		return v
	case int:
		return float64(v)
	}
	return -100
}

func TestAgentSecondRunAndInterrupt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, agentGraph(t))
	h.input(`{"messages":["foo"]}`)
	// second run: model wraps around to "begin", "end"
	rec := h.input(`{"messages":["bar"], "interrupt": true}`, "updates", "values")
	st := h.state()
	require.Equal(t, []string{"agent"}, st.Next)
	require.Len(t, st.Interrupts, 1)
	require.Equal(t, "i want to interrupt", st.Interrupts[0].Value)
	require.Len(t, st.Tasks, 1)
	require.Equal(t, st.Interrupts, st.Tasks[0].Interrupts)
	ups := rec.of("updates")
	require.Equal(t, map[string]any{"__interrupt__": []any{map[string]any{"value": "i want to interrupt", "id": st.Interrupts[0].ID}}}, ups[len(ups)-1])
	hist := h.history()
	require.Len(t, hist, 7)
	require.Equal(t, "input", hist[1].Metadata["source"])
	require.Equal(t, 4.0, toFloat(hist[1].Metadata["step"]))

	_, err := h.run(graphserver.GraphRun{Command: &graphserver.RunCommand{Resume: []byte(`"ok"`)}})
	require.NoError(t, err)
	st = h.state()
	require.Empty(t, st.Next)
	require.Equal(t, []string{"foo", "begin", "tool_call__begin", "end", "bar", "begin", "tool_call__begin", "end"}, contents(st, "messages"))
}
