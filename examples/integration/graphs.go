package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
)

// The four graphs of the official Python SDK's integration suite
// (langchain-ai/langgraph libs/sdk-py/integration, described in the
// project's sdk-integration-graphs spec): agent, tools_agent, deep_agent
// and factory_agent. Every "model" is a scripted fake, so runs are
// deterministic.

// tokenDelay is the fake chat model's time per streamed token.
const tokenDelay = 250 * time.Millisecond

// integrationGraphs returns the graphs by id.
func integrationGraphs() (map[string]graphserver.Graph, error) {
	agent, err := agentGraph()
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	tools, err := toolsAgentGraph()
	if err != nil {
		return nil, fmt.Errorf("tools_agent: %w", err)
	}
	deep, err := deepAgentGraph()
	if err != nil {
		return nil, fmt.Errorf("deep_agent: %w", err)
	}
	return map[string]graphserver.Graph{
		"agent":         agent,
		"tools_agent":   tools,
		"deep_agent":    deep,
		"factory_agent": graphserver.NewGraphFactory(makeFactoryGraph),
	}, nil
}

// progress is the custom event every node of the agent graph writes as it
// starts and ends ({"name": "progress", "step", "phase"}): the channel a
// protocol-v2 client infers is custom:progress.
func progress(ctx context.Context, step, phase string, extra ...string) {
	ev := map[string]any{"name": "progress", "step": step, "phase": phase}
	for i := 0; i+1 < len(extra); i += 2 {
		ev[extra[i]] = extra[i+1]
	}
	graph.StreamWriter(ctx)(ev)
}

// pyRepr is Python's repr of a plain string ('v3'), as f"{query!r}" writes it.
func pyRepr(s string) string {
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}

// agentGraph is streaming_graph.py (compiled name v3_integration_agent):
// stream_message -> call_tool -> ask_human -> run_subgraph. Each node
// writes progress start and end; stream_message streams "Hello, world!"
// token by token; ask_human interrupts with "Are we good?"; run_subgraph
// invokes an inner graph from its function (a subgraph at
// run_subgraph:<task_id>).
func agentGraph() (*graph.Compiled, error) {
	sub := graph.New(graph.Channels{"messages": graph.AddMessages(), "note": graph.LastValue()})
	sub.AddNode("sub", func(ctx context.Context, s graph.State) (any, error) {
		progress(ctx, "sub_node", "start")
		msg := graph.Message{Type: graph.AIMessage, Content: "from subgraph", ID: "sub-msg-1"}
		progress(ctx, "sub_node", "end")
		return graph.Update{"messages": []any{msg}, "note": "ran"}, nil
	})
	sub.AddEdge(graph.Start, "sub").AddEdge("sub", graph.End)
	inner, err := sub.Compile(graph.CompileOptions{Name: "v3_integration_subgraph"})
	if err != nil {
		return nil, err
	}

	g := graph.New(graph.Channels{"messages": graph.AddMessages(), "value": graph.LastValue(), "items": graph.Append()})
	g.AddNode("stream_message", func(ctx context.Context, s graph.State) (any, error) {
		progress(ctx, "stream_message", "start")
		ms := graph.StreamMessage(ctx, "ai-msg-1")
		for _, tok := range []string{"Hello,", " world!"} {
			// A model takes its time per token. It matters to the SDKs:
			// both end a projection's iteration as soon as their lifecycle
			// watcher (a stream of its own) sees the interrupt, and a
			// projection opened after run.start gets its replay over
			// another stream; a graph reaching the interrupt within a
			// millisecond or two races that replay.
			select {
			case <-time.After(tokenDelay):
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
			ms.Chunk(tok)
		}
		msg := ms.End()
		progress(ctx, "stream_message", "end")
		return graph.Update{"messages": []any{msg}, "value": "x", "items": []any{"streamed"}}, nil
	})
	g.AddNode("call_tool", func(ctx context.Context, s graph.State) (any, error) {
		progress(ctx, "call_tool", "start")
		query := "v3"
		ai := graph.Message{Type: graph.AIMessage, Content: "", ID: "ai-msg-2",
			ToolCalls: []graph.ToolCall{{ID: "tc-1", Name: "search", Args: map[string]any{"query": query}, Type: "tool_call"}}}
		tool := graph.Tool("result for "+pyRepr(query), "tc-1")
		progress(ctx, "call_tool", "end")
		return graph.Update{"messages": []any{ai, tool}, "items": []any{"tool"}}, nil
	})
	g.AddNode("ask_human", func(ctx context.Context, s graph.State) (any, error) {
		progress(ctx, "ask_human", "start")
		// The node takes a moment before it asks (as stream_message takes
		// one per token): the SDKs end their projections when their
		// lifecycle watcher, a connection of its own, sees the interrupt,
		// and the progress event written just before must reach the
		// client's other connection first.
		select {
		case <-time.After(tokenDelay):
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		answer, err := graph.Interrupt(ctx, "Are we good?")
		if err != nil {
			return nil, err
		}
		text := fmt.Sprint(answer)
		progress(ctx, "ask_human", "end", "answer", text)
		msg := graph.Message{Type: graph.AIMessage, Content: "Human said: " + text, ID: "ai-msg-3"}
		return graph.Update{"messages": []any{msg}, "items": []any{"asked"}}, nil
	})
	g.AddNode("run_subgraph", func(ctx context.Context, s graph.State) (any, error) {
		progress(ctx, "run_subgraph", "start")
		out, err := inner.Invoke(ctx, map[string]any{"messages": []any{}, "note": ""}, nil)
		if err != nil {
			return nil, err
		}
		progress(ctx, "run_subgraph", "end")
		var msgs any = []any{}
		if m, ok := out.(map[string]any); ok && m["messages"] != nil {
			msgs = m["messages"]
		}
		return graph.Update{"messages": msgs, "items": []any{"sub"}}, nil
	}, graph.WithSubgraph(inner))
	g.AddEdge(graph.Start, "stream_message").
		AddEdge("stream_message", "call_tool").
		AddEdge("call_tool", "ask_human").
		AddEdge("ask_human", "run_subgraph").
		AddEdge("run_subgraph", graph.End)
	return g.Compile(graph.CompileOptions{Name: "v3_integration_agent"})
}

// lastAI returns the last AI message of the state's messages.
func lastAI(s graph.State) (graph.Message, bool) {
	msgs := graph.Messages(s["messages"])
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Type == graph.AIMessage {
			return msgs[i], true
		}
	}
	return graph.Message{}, false
}

// hasToolMessage reports whether the conversation has a tool result.
func hasToolMessage(s graph.State) bool {
	for _, m := range graph.Messages(s["messages"]) {
		if m.Type == graph.ToolMessage {
			return true
		}
	}
	return false
}

// emitTool writes one protocol-v2 tools event ({"event": "tool-started"|
// "tool-finished", ...}) from the running tool node. The stream part is
// put under the node's task namespace; the thread events drop that
// segment, as LangGraph's Python handler does, so a root-level tool node's
// events are at the root namespace.
func emitTool(ctx context.Context, data map[string]any) {
	b, err := json.Marshal(data)
	if err != nil {
		return
	}
	graph.EmitPart(ctx, graphserver.StreamPart{Event: "tools", Data: b})
}

// toolNode runs the tool calls of the last AI message with run, emitting
// tool-started and tool-finished for each, and returns the tool messages.
func toolNode(run func(ctx context.Context, call graph.ToolCall) (string, error)) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (any, error) {
		ai, ok := lastAI(s)
		if !ok {
			return nil, errors.New("tools: no AI message to answer")
		}
		var out []any
		for _, call := range ai.ToolCalls {
			emitTool(ctx, map[string]any{"event": "tool-started", "tool_call_id": call.ID, "tool_name": call.Name, "input": call.Args})
			content, err := run(ctx, call)
			if err != nil {
				emitTool(ctx, map[string]any{"event": "tool-error", "tool_call_id": call.ID, "message": err.Error()})
				return nil, err
			}
			msg := graph.Tool(content, call.ID)
			msg.Name = call.Name
			msg.ID = "tool-" + call.ID
			emitTool(ctx, map[string]any{"event": "tool-finished", "tool_call_id": call.ID, "output": map[string]any{
				"type": "tool", "content": content, "name": call.Name, "tool_call_id": call.ID, "id": msg.ID, "status": "success"}})
			out = append(out, msg)
		}
		return graph.Update{"messages": out}, nil
	}
}

// agentLoop is create_agent's model/tools loop around a model node.
func agentLoop(name string, model graph.NodeFunc, tools graph.NodeFunc) (*graph.Compiled, error) {
	g := graph.New(graph.Channels{"messages": graph.AddMessages()})
	g.AddNode("model", model)
	g.AddNode("tools", tools)
	g.AddEdge(graph.Start, "model")
	g.AddConditionalEdges("model", func(ctx context.Context, s graph.State) any {
		if ai, ok := lastAI(s); ok && len(ai.ToolCalls) > 0 {
			return "tools"
		}
		return graph.End
	}, "tools", graph.End)
	g.AddEdge("tools", "model")
	return g.Compile(graph.CompileOptions{Name: name})
}

// toolsAgentGraph is tools_agent.py: create_agent with a stateless fake
// model that calls search("v3") once, then answers "done.".
func toolsAgentGraph() (*graph.Compiled, error) {
	model := func(ctx context.Context, s graph.State) (any, error) {
		if hasToolMessage(s) {
			return graph.Update{"messages": []any{graph.Message{Type: graph.AIMessage, Content: "done.", ID: "ai-tools-done"}}}, nil
		}
		return graph.Update{"messages": []any{graph.Message{Type: graph.AIMessage, Content: "", ID: "ai-tools-call",
			ToolCalls: []graph.ToolCall{{ID: "tc-1", Name: "search", Args: map[string]any{"query": "v3"}, Type: "tool_call"}}}}}, nil
	}
	search := func(ctx context.Context, call graph.ToolCall) (string, error) {
		if call.Name != "search" {
			return "", fmt.Errorf("unknown tool %q", call.Name)
		}
		q, _ := call.Args["query"].(string)
		return "result for " + pyRepr(q), nil
	}
	return agentLoop("v3_tools_agent", model, toolNode(search))
}

// deepAgentGraph is deep_agent.py: a supervisor whose task tool runs the
// researcher subagent as a nested agent graph (at tools:<task_id>).
func deepAgentGraph() (*graph.Compiled, error) {
	rg := graph.New(graph.Channels{"messages": graph.AddMessages()})
	rg.AddNode("model", func(ctx context.Context, s graph.State) (any, error) {
		ms := graph.StreamMessage(ctx, "res-1")
		ms.Chunk("v3 streaming is event-typed and thread-centric.")
		return graph.Update{"messages": []any{ms.End()}}, nil
	})
	rg.AddEdge(graph.Start, "model").AddEdge("model", graph.End)
	researcher, err := rg.Compile(graph.CompileOptions{Name: "researcher"})
	if err != nil {
		return nil, err
	}
	model := func(ctx context.Context, s graph.State) (any, error) {
		if hasToolMessage(s) {
			return graph.Update{"messages": []any{graph.Message{Type: graph.AIMessage, Content: "Research complete.", ID: "sup-2"}}}, nil
		}
		return graph.Update{"messages": []any{graph.Message{Type: graph.AIMessage, Content: "", ID: "sup-1",
			ToolCalls: []graph.ToolCall{{ID: "tc-task-1", Name: "task", Type: "tool_call",
				Args: map[string]any{"subagent_type": "researcher", "description": "research v3 streaming"}}}}}}, nil
	}
	task := func(ctx context.Context, call graph.ToolCall) (string, error) {
		if call.Name != "task" {
			return "", fmt.Errorf("unknown tool %q", call.Name)
		}
		if t, _ := call.Args["subagent_type"].(string); t != "researcher" {
			return "", fmt.Errorf("unknown subagent %q", t)
		}
		desc, _ := call.Args["description"].(string)
		out, err := researcher.Invoke(ctx, map[string]any{"messages": []any{graph.Human(desc)}}, nil)
		if err != nil {
			return "", err
		}
		m, _ := out.(map[string]any)
		msgs := graph.Messages(m["messages"])
		if len(msgs) == 0 {
			return "", errors.New("the researcher answered nothing")
		}
		return msgs[len(msgs)-1].Text(), nil
	}
	return agentLoop("v3_deep_agent", model, toolNode(task))
}

// makeFactoryGraph is factory_graph.py's make_graph(config, runtime): a
// one-node graph built per call, whose echo node records why the graph
// was built (the access context) and whether for execution.
func makeFactoryGraph(ctx context.Context, req graphserver.GraphFactoryRequest) (graphserver.Graph, error) {
	if req.ForExecution() && req.Store == nil {
		return nil, errors.New("factory_agent: the runtime has no store")
	}
	g := graph.New(graph.Channels{"text": graph.LastValue(), "access_context": graph.LastValue(), "is_for_execution": graph.LastValue()})
	access, execution := req.Access, req.ForExecution()
	g.AddNode("echo", func(ctx context.Context, s graph.State) (any, error) {
		text, _ := s["text"].(string)
		return graph.Update{"text": text + " echoed", "access_context": access, "is_for_execution": execution}, nil
	})
	g.AddEdge(graph.Start, "echo").AddEdge("echo", graph.End)
	return g.Compile(graph.CompileOptions{Name: "factory_agent"})
}
