package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/graphserver/graphserver/graph"
)

// agentSimpleGraph is reference-graphs.md's "agent_simple": a fake model whose
// second reply ends in U+2028, with the tool reached through Send.
func agentSimpleGraph(logger *slog.Logger) (*graph.Compiled, error) {
	models := newFakeModels("begin", "end\u2028")
	g := graph.New(graph.Channels{
		"key_one":  graph.LastValue().WithSchema(`{"type": "string"}`),
		"key_two":  graph.LastValue().WithSchema(`{"type": "string"}`),
		"sleep":    graph.LastValue().WithSchema(`{"type": "number"}`),
		"messages": graph.AddMessages(),
	})
	g.AddNode("agent", func(ctx context.Context, s graph.State) (any, error) {
		logger.WarnContext(ctx, "Hello, world!", "graph", "agent_simple")
		if h, ok := graph.Configurable(ctx)["x-configurable-header"]; ok && h != nil {
			return graph.Update{"messages": []any{fmt.Sprintf("end: %v", h)}}, nil
		}
		if store := graph.GetStore(ctx); store != nil {
			ns := []string{"ALL"}
			if user, ok := graph.Configurable(ctx)["langgraph_auth_user"].(map[string]any); ok {
				if id, ok := user["identity"].(string); ok && id != "" {
					ns = []string{id}
				}
			}
			item, err := store.GetItem(ctx, ns, "key_one")
			if err != nil {
				return nil, err
			}
			if item == nil {
				var text any
				if last, ok := lastMessage(s, "messages"); ok {
					text = last.Content
				}
				if err := store.PutItem(ctx, ns, "key_one", map[string]any{"text": text}); err != nil {
					return nil, err
				}
			}
		}
		return graph.Update{"messages": []graph.Message{models.forThread(ctx).invoke(ctx)}}, nil
	})
	g.AddNode("tool", func(ctx context.Context, s graph.State) (any, error) {
		// Started by Send: s is the message the agent sent.
		content, _ := s["content"].(string)
		return graph.Update{"messages": []graph.Message{graph.Tool("tool_call__"+content, "tool_call_id")}}, nil
	})
	g.AddEdge(graph.Start, "agent")
	g.AddConditionalEdges("agent", func(ctx context.Context, s graph.State) any {
		msgs := s["messages"].([]any)
		if len(msgs) == 0 {
			return graph.End
		}
		last := msgs[len(msgs)-1]
		if m, err := graph.ToMessage(last); err == nil && strings.HasPrefix(m.Text(), "end") {
			return graph.End
		}
		return graph.Send{Node: "tool", Arg: last}
	}, "tool", graph.End)
	g.AddEdge("tool", "agent")
	return g.Compile(graph.CompileOptions{Name: "agent_simple"})
}
