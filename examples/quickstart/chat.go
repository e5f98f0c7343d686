package main

import (
	"context"
	"strings"

	"github.com/graphserver/graphserver/graph"
)

// chatGraph returns the example "chat" graph: its state is a list of
// messages, and its one node answers the last human message, streaming the
// reply word by word (stream_mode "messages-tuple" shows the tokens). A
// real program would call a chat model here, with the node's context, so
// that cancelling the run stops it.
func chatGraph() (*graph.Compiled, error) {
	g := graph.New(graph.Channels{"messages": graph.AddMessages()})
	g.AddNode("chat", func(ctx context.Context, s graph.State) (any, error) {
		var last string
		if msgs := s.Messages("messages"); len(msgs) > 0 {
			last = msgs[len(msgs)-1].Text()
		}
		reply := graph.StreamMessage(ctx, "")
		for i, word := range strings.Fields("You said: " + last) {
			// A cancelled run stops the node between tokens, as a model
			// call would stop when its request context ends.
			if err := context.Cause(ctx); err != nil {
				return nil, err
			}
			if i > 0 {
				word = " " + word
			}
			reply.Chunk(word)
		}
		return graph.Update{"messages": []graph.Message{reply.End()}}, nil
	})
	g.AddEdge(graph.Start, "chat")
	g.AddEdge("chat", graph.End)
	return g.Compile(graph.CompileOptions{Name: "chat"})
}
