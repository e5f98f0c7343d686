package main

import (
	"context"
	"strings"

	"github.com/graphserver/graphserver/graph"
)

// say streams text as a chat model's reply, one word per chunk, and returns
// the AI message (with the tool calls given, if any).
func say(ctx context.Context, name, text string, calls ...graph.ToolCall) graph.Message {
	s := graph.StreamMessage(ctx, "")
	words := strings.SplitAfter(text, " ")
	for _, w := range words {
		if w != "" {
			s.Chunk(w)
		}
	}
	m := s.End()
	m.Name = name
	m.ToolCalls = calls
	return m
}

// lastHuman returns the text of the last human message.
func lastHuman(msgs []graph.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Type == graph.HumanMessage {
			return msgs[i].Text()
		}
	}
	return ""
}
