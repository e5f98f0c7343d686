package main

import (
	"context"

	"github.com/graphserver/graphserver/graph"
)

// supervisor is LangGraph's multi-agent supervisor (langgraph-supervisor's
// create_supervisor with handoff tools): the supervisor transfers the
// request to the researcher; the researcher and the writer are agents run
// as subgraphs, each handing off with a tool call answered by a Command to
// the parent graph (Command{Graph: Parent}) — the researcher to the writer,
// the writer back to the supervisor, which then wraps up.
func supervisor() (*graph.Compiled, error) {
	researcher, err := handoffAgent("researcher", "writer", func(question string) string {
		return "Research notes on " + question + ": it is widely loved."
	})
	if err != nil {
		return nil, err
	}
	writer, err := handoffAgent("writer", "supervisor", func(string) string {
		return "Final report: everyone loves it, say the notes."
	})
	if err != nil {
		return nil, err
	}
	g := graph.New(graph.Channels{"messages": graph.AddMessages(), "active_agent": graph.LastValue()})
	g.AddNode("supervisor", func(ctx context.Context, s graph.State) (any, error) {
		msgs := s.Messages("messages")
		if last := msgs[len(msgs)-1]; last.Type == graph.ToolMessage && last.Name == "transfer_back_to_supervisor" {
			return graph.Update{"messages": say(ctx, "supervisor", "The team is done. "+lastFrom(msgs, "writer")), "active_agent": "supervisor"}, nil
		}
		call := graph.ToolCall{Name: "transfer_to_researcher", ID: "call_supervisor", Args: map[string]any{}, Type: "tool_call"}
		ask := say(ctx, "supervisor", "", call)
		done := graph.Tool("Successfully transferred to researcher", call.ID)
		done.Name = call.Name
		return &graph.Command{Goto: "researcher", Update: graph.Update{"messages": []graph.Message{ask, done}, "active_agent": "researcher"}}, nil
	})
	g.AddNode("researcher", researcher)
	g.AddNode("writer", writer)
	g.AddEdge(graph.Start, "supervisor")
	return g.Compile(graph.CompileOptions{Name: "supervisor"})
}

// handoffAgent is a sub-agent: "agent" answers with work and calls the tool
// handing off to next; "handoff" runs that tool, returning a Command to the
// parent graph that goes to next with the agent's messages and the tool's
// answer (as LangGraph's create_handoff_tool does).
func handoffAgent(name, next string, work func(question string) string) (*graph.Compiled, error) {
	tool := "transfer_to_" + next
	if next == "supervisor" {
		tool = "transfer_back_to_supervisor"
	}
	g := graph.New(graph.Channels{"messages": graph.AddMessages()})
	g.AddNode("agent", func(ctx context.Context, s graph.State) (any, error) {
		call := graph.ToolCall{Name: tool, ID: "call_" + name, Args: map[string]any{}, Type: "tool_call"}
		return graph.Update{"messages": say(ctx, name, work(lastHuman(s.Messages("messages"))), call)}, nil
	})
	g.AddNode("handoff", func(ctx context.Context, s graph.State) (any, error) {
		msgs := s.Messages("messages")
		call := msgs[len(msgs)-1].ToolCalls[0]
		done := graph.Tool("Successfully transferred to "+next, call.ID)
		if next == "supervisor" {
			done.Content = "Successfully transferred back to supervisor"
		}
		done.Name = call.Name
		return &graph.Command{Graph: graph.Parent, Goto: next,
			Update: graph.Update{"messages": append(msgs, done), "active_agent": next}}, nil
	})
	g.AddEdge(graph.Start, "agent").AddEdge("agent", "handoff")
	return g.Compile(graph.CompileOptions{Name: name})
}

// lastFrom returns the text of the last AI message named name.
func lastFrom(msgs []graph.Message, name string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Type == graph.AIMessage && msgs[i].Name == name {
			return msgs[i].Text()
		}
	}
	return ""
}
