package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/graphserver/graphserver/graph"
)

// reactAgent is LangGraph's prebuilt ReAct agent (create_react_agent): a
// model node calling tools until it answers, with a "remaining_steps"
// managed value it checks, as create_react_agent does, so that a loop that
// would run into the recursion limit ends with an answer instead.
func reactAgent() (*graph.Compiled, error) {
	g := graph.New(graph.Channels{
		"messages":        graph.AddMessages(),
		"remaining_steps": graph.RemainingSteps(),
	})
	g.AddNode("agent", func(ctx context.Context, s graph.State) (any, error) {
		response := reactModel(ctx, s.Messages("messages"))
		// create_react_agent's _are_more_steps_needed: a tool call needs two
		// more steps (tools, then agent)
		if len(response.ToolCalls) > 0 && s.Number("remaining_steps") < 2 {
			return graph.Update{"messages": graph.Message{Type: graph.AIMessage, ID: response.ID, Name: "react",
				Content: "Sorry, need more steps to process this request."}}, nil
		}
		return graph.Update{"messages": response}, nil
	})
	g.AddNode("tools", func(ctx context.Context, s graph.State) (any, error) {
		msgs := s.Messages("messages")
		var out []graph.Message
		for _, call := range msgs[len(msgs)-1].ToolCalls {
			m := graph.Tool(runTool(call), call.ID)
			m.Name = call.Name
			out = append(out, m)
		}
		return graph.Update{"messages": out}, nil
	})
	g.AddEdge(graph.Start, "agent")
	g.AddConditionalEdges("agent", func(ctx context.Context, s graph.State) any {
		msgs := s.Messages("messages")
		if len(msgs[len(msgs)-1].ToolCalls) > 0 {
			return "tools"
		}
		return graph.End
	}, "tools", graph.End)
	g.AddEdge("tools", "agent")
	return g.Compile(graph.CompileOptions{Name: "react"})
}

// reactModel is the agent's scripted chat model. "weather in <city>" asks
// the get_weather tool once, then answers with what it said; "keep
// searching for <x>" calls search again after every result, never
// satisfied; anything else gets a direct answer.
func reactModel(ctx context.Context, msgs []graph.Message) graph.Message {
	question := lastHuman(msgs)
	var results []string
	calls := 0
	for _, m := range msgs {
		switch m.Type {
		case graph.ToolMessage:
			results = append(results, m.Text())
		case graph.AIMessage:
			calls += len(m.ToolCalls)
		}
	}
	lower := strings.ToLower(question)
	switch {
	case strings.Contains(lower, "keep searching for "):
		q := question[strings.Index(lower, "keep searching for ")+len("keep searching for "):]
		return say(ctx, "react", "", graph.ToolCall{Name: "search", ID: fmt.Sprintf("call_%d", calls+1), Args: map[string]any{"query": q}, Type: "tool_call"})
	case strings.Contains(lower, "weather in ") && len(results) == 0:
		city := strings.TrimRight(question[strings.Index(lower, "weather in ")+len("weather in "):], "?!. ")
		return say(ctx, "react", "", graph.ToolCall{Name: "get_weather", ID: fmt.Sprintf("call_%d", calls+1), Args: map[string]any{"city": city}, Type: "tool_call"})
	case len(results) > 0:
		return say(ctx, "react", "Here is what I found: "+results[len(results)-1])
	}
	return say(ctx, "react", "I can tell you the weather in any city.")
}

// runTool runs one of the agent's tools.
func runTool(call graph.ToolCall) string {
	switch call.Name {
	case "get_weather":
		return fmt.Sprintf("It's always sunny in %v!", call.Args["city"])
	case "search":
		return fmt.Sprintf("No results for %v yet.", call.Args["query"])
	}
	return "Error: unknown tool " + call.Name
}
