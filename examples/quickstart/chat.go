package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/graphserver/graphserver/graph"
)

// failCommand is the message that makes the chat graph fail, to show how a
// failed run looks in a client (the chat page shows the error).
const failCommand = "/fail"

// askCommand is the message that makes the chat graph ask a question
// (graph.Interrupt) and wait for the answer, to show an interrupt answered
// from a client (the chat page shows the question and an answer box).
const askCommand = "/ask"

// askQuestion is the question /ask interrupts with.
const askQuestion = "What should I say?"

// chatGraph returns the example "chat" graph: its state is a list of
// messages, and its one node answers the last human message, streaming the
// reply word by word (stream_mode "messages-tuple" shows the tokens) with
// tokenDelay between words, as a chat model would. A real program would call
// a chat model here, with the node's context, so that cancelling the run
// stops it. The message "/fail" makes the node fail; "/ask" interrupts the
// run with a question and repeats the answer it is resumed with.
func chatGraph(tokenDelay time.Duration) (*graph.Compiled, error) {
	g := graph.New(graph.Channels{"messages": graph.AddMessages()})
	g.AddNode("chat", func(ctx context.Context, s graph.State) (any, error) {
		var last string
		if msgs := s.Messages("messages"); len(msgs) > 0 {
			last = msgs[len(msgs)-1].Text()
		}
		if strings.TrimSpace(last) == failCommand {
			return nil, chatError("the chat graph failed, as asked by " + failCommand)
		}
		said := "You said: " + last
		if strings.TrimSpace(last) == askCommand {
			// The node runs again from its start when the run resumes;
			// Interrupt then returns the answer.
			answer, err := graph.Interrupt(ctx, askQuestion)
			if err != nil {
				return nil, err
			}
			said = fmt.Sprintf("You answered: %v", answer)
		}
		reply := graph.StreamMessage(ctx, "")
		for i, word := range strings.Fields(said) {
			// A cancelled run stops the node between tokens, as a model
			// call would stop when its request context ends.
			if err := context.Cause(ctx); err != nil {
				return nil, err
			}
			if i > 0 {
				word = " " + word
				if err := sleep(ctx, tokenDelay); err != nil {
					return nil, err
				}
			}
			reply.Chunk(word)
		}
		return graph.Update{"messages": []graph.Message{reply.End()}}, nil
	})
	g.AddEdge(graph.Start, "chat")
	g.AddEdge("chat", graph.End)
	return g.Compile(graph.CompileOptions{Name: "chat"})
}

// chatError is the error the chat graph fails with. It names itself
// (ErrorName), so clients see its message: an error without a name reads
// "Internal error." on the wire, as its text may hold internal details.
type chatError string

func (e chatError) Error() string   { return string(e) }
func (chatError) ErrorName() string { return "ChatError" }

// sleep waits d, or returns the cause of ctx's end first (a cancelled run
// stops at once).
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
