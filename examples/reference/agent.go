package main

import (
	"context"
	"time"

	"github.com/graphserver/graphserver/graph"
)

// agentGraph is reference-graphs.md's "agent": a fake chat model looping with
// a tool node until it answers "end", plus interrupt, sleep and store hooks
// the compatibility tests drive through the state.
func agentGraph() (*graph.Compiled, error) {
	models := newFakeModels("begin", "end")
	// no defaults: as in LangGraph, a channel never written is absent from
	// the values (reference-graphs.md)
	nullable := func(types string) *graph.Channel {
		return graph.LastValue().WithSchema(`{"type": ` + types + `}`)
	}
	g := graph.New(graph.Channels{
		"messages":                   graph.AddMessages(),
		"sharedStateValue":           nullable(`["string", "null"]`),
		"interrupt":                  nullable(`"boolean"`),
		"keyOne":                     nullable(`["string", "null"]`),
		"keyTwo":                     nullable(`["string", "null"]`),
		"sleep":                      nullable(`["number", "object", "null"]`),
		"sharedStateFromStoreConfig": nullable(`["object", "null"]`),
	})
	g.SetSchema("config", `{"$schema": "http://json-schema.org/draft-07/schema#", "title": "agentConfig", "type": "object", "properties": {"model_name": {"type": "string"}}}`)

	g.AddNode("agent", func(ctx context.Context, s graph.State) (any, error) {
		if s.Bool("interrupt") {
			if _, err := graph.Interrupt(ctx, "i want to interrupt"); err != nil {
				return nil, err
			}
		}
		if last, ok := lastMessage(s, "messages"); ok && last.Type == graph.HumanMessage && s["sleep"] != nil {
			if err := agentSleep(ctx, s["sleep"]); err != nil {
				return nil, err
			}
		}
		reply := models.forThread(ctx).invoke(ctx)
		if store := graph.GetStore(ctx); store != nil && !truthy(s["sharedStateFromStoreConfig"]) {
			value := map[string]any{"id": graph.Configurable(ctx)["user_id"]}
			if err := store.PutItem(ctx, []string{"sharedState", "data"}, "user_id", value); err != nil {
				return nil, err
			}
		}
		return graph.Update{"interrupt": false, "messages": []graph.Message{reply}}, nil
	})

	g.AddNode("tool", func(ctx context.Context, s graph.State) (any, error) {
		var fromStore any
		if store := graph.GetStore(ctx); store != nil {
			item, err := store.GetItem(ctx, []string{"sharedState", "data"}, "user_id")
			if err != nil {
				return nil, err
			}
			if item != nil {
				fromStore = item.Value
			}
		}
		last, ok := lastMessage(s, "messages")
		if !ok {
			return graph.Update{"messages": []any{}, "sharedStateFromStoreConfig": fromStore}, nil
		}
		return graph.Update{
			"messages":                   []graph.Message{graph.Tool("tool_call__"+last.Text(), "tool_call_id")},
			"sharedStateFromStoreConfig": fromStore,
		}, nil
	})

	g.AddNode("checkSharedState", func(ctx context.Context, s graph.State) (any, error) {
		if store := graph.GetStore(ctx); store != nil {
			item, err := store.GetItem(ctx, []string{"inputtedState", "data"}, "my_key")
			if err != nil {
				return nil, err
			}
			if item == nil || !truthy(item.Value["isTrue"]) {
				return nil, &graph.NodeError{Name: "Error", Message: "Value is not true"}
			}
		}
		return graph.Update{}, nil
	})

	g.AddEdge(graph.Start, "agent")
	g.AddConditionalEdges("agent", func(ctx context.Context, s graph.State) any {
		msgs := s.Messages("messages")
		if len(msgs) > 0 {
			switch msgs[0].Text() {
			case "should_end":
				return graph.End
			case "___check_state_value":
				return "checkSharedState"
			}
		}
		if len(msgs) > 0 && msgs[len(msgs)-1].Text() == "end" {
			return graph.End
		}
		return "tool"
	}, "tool", "checkSharedState", graph.End)
	g.AddEdge("tool", "agent")
	g.AddEdge("checkSharedState", graph.End)
	return g.Compile(graph.CompileOptions{Name: "agent"})
}

// agentSleep sleeps as the agent's "sleep" key says: a number of seconds, or
// {steps, ms}: steps times, emit a custom {"type":"sleep","step":i} event and
// sleep ms milliseconds.
func agentSleep(ctx context.Context, v any) error {
	switch v := v.(type) {
	case float64:
		return sleep(ctx, time.Duration(v*float64(time.Second)))
	case map[string]any:
		steps, _ := v["steps"].(float64)
		ms, _ := v["ms"].(float64)
		write := graph.StreamWriter(ctx)
		for step := 0; step < int(steps); step++ {
			write(map[string]any{"type": "sleep", "step": step})
			if err := sleep(ctx, time.Duration(ms*float64(time.Millisecond))); err != nil {
				return err
			}
		}
	}
	return nil
}

// truthy reports whether v is truthy as JavaScript sees it.
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
	}
	return true
}
