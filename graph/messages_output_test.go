package graph_test

import (
	"context"
	"testing"

	"github.com/graphserver/graphserver/graph"
	"github.com/stretchr/testify/require"
)

// The messages stream carries the messages found in any value of a node's
// update, not only those written to a messages channel: a message or a list
// holding messages, under a key with any channel or with none, in each
// update of a list of Commands; messages the node read in its input are not
// emitted again (LangGraph pregel/_messages.py StreamMessagesHandler:
// on_chain_end runs _find_and_emit_messages over every value of the output,
// on_chain_start marks the ids of the messages in every input value).
func TestMessagesStreamFromAnyOutputKey(t *testing.T) {
	t.Parallel()
	withID := func(m graph.Message, id string) graph.Message { m.ID = id; return m }
	g := graph.New(graph.Channels{"messages": graph.AddMessages(), "summary": graph.LastValue(), "notes": graph.LastValue(), "old": graph.LastValue()})
	g.AddNode("first", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{
			"messages": withID(graph.AI("in the channel"), "m1"),
			"summary":  withID(graph.AI("a summary"), "s1"),
			"notes":    []any{withID(graph.AI("a note"), "n1"), "not a message", map[string]any{"type": "ai"}},
			"unknown":  withID(graph.System("under no channel"), "u1"),
		}, nil
	})
	g.AddNode("second", func(ctx context.Context, s graph.State) (any, error) {
		return []graph.Command{
			{Update: graph.Update{"summary": s["summary"], "old": s["old"]}}, // read in the input: not emitted again
			{Update: graph.Update{"notes": withID(graph.Human("from a command"), "c1")}},
		}, nil
	})
	g.AddEdge(graph.Start, "first")
	g.AddEdge("first", "second")
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	rec := h.input(`{"old": {"type": "human", "content": "input", "id": "i1"}}`, "messages-tuple")
	var got []string
	var nodes []string
	for _, p := range rec.of("messages") {
		pair := p.([]any)
		m := pair[0].(map[string]any)
		got = append(got, m["id"].(string)+":"+m["content"].(string))
		nodes = append(nodes, pair[1].(map[string]any)["langgraph_node"].(string))
	}
	require.Equal(t, []string{"m1:in the channel", "n1:a note", "s1:a summary", "u1:under no channel", "c1:from a command"}, got)
	require.Equal(t, []string{"first", "first", "first", "first", "second"}, nodes)
}
