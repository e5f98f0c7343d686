package graph_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
)

func logNode(name string) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (any, error) { return graph.Update{"log": name}, nil }
}

// A deferred node runs once, after branches of different lengths.
func ExampleWithDefer() {
	g := graph.New(graph.Channels{"log": graph.Append()})
	g.AddNode("fan_out", logNode("fan_out"))
	g.AddSequence(
		graph.SequenceNode{Name: "long1", Node: logNode("long1")},
		graph.SequenceNode{Name: "long2", Node: logNode("long2")},
	)
	g.AddNode("short", logNode("short"))
	g.AddNode("collect", logNode("collect"), graph.WithDefer())
	g.AddEdge(graph.Start, "fan_out")
	g.AddEdge("fan_out", "long1")
	g.AddEdge("fan_out", "short")
	g.AddEdge("long2", "collect")
	g.AddEdge("short", "collect")
	c, err := g.Compile(graph.CompileOptions{})
	if err != nil {
		panic(err)
	}
	out, err := c.Invoke(context.Background(), map[string]any{}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// map[log:[fan_out long1 short long2 collect]]
}

// A node reading only part of the state, and a private key passed between
// two nodes.
func ExampleWithInput() {
	g := graph.New(graph.Channels{"question": graph.LastValue(), "answer": graph.LastValue()})
	g.AddNode("research", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"notes": "notes on " + s.String("question")}, nil
	})
	g.AddNode("write", func(ctx context.Context, s graph.State) (any, error) {
		fmt.Println("write reads", s)
		return graph.Update{"answer": "an answer from " + s.String("notes")}, nil
	}, graph.WithInput(graph.Channels{"notes": graph.LastValue()}))
	g.AddEdge(graph.Start, "research")
	g.AddEdge("research", "write")
	c, err := g.Compile(graph.CompileOptions{})
	if err != nil {
		panic(err)
	}
	out, err := c.Invoke(context.Background(), map[string]any{"question": "tides"}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// write reads map[notes:notes on tides]
	// map[answer:an answer from notes on tides question:tides]
}

// A router asking a human before choosing where to go.
func ExampleRouterFunc_interrupt() {
	g := graph.New(graph.Channels{"log": graph.Append()})
	g.AddNode("draft", logNode("draft"))
	g.AddNode("publish", logNode("publish"))
	g.AddEdge(graph.Start, "draft")
	g.AddConditionalEdges("draft", func(ctx context.Context, s graph.State) any {
		ok, err := graph.Interrupt(ctx, "publish the draft?")
		if err != nil {
			return err // pauses the run here
		}
		if ok == true {
			return "publish"
		}
		return graph.End
	}, "publish", graph.End)
	c, err := g.Compile(graph.CompileOptions{})
	if err != nil {
		panic(err)
	}
	ctx, cp := context.Background(), graph.NewMemoryCheckpointer()
	_ = c.Run(ctx, &graphserver.GraphRun{ThreadID: "t", Checkpointer: cp, Input: json.RawMessage(`{}`)}, nil)
	st, _ := c.State(ctx, &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: "t"}, Checkpointer: cp})
	fmt.Println(st.Interrupts[0].Value)
	_ = c.Run(ctx, &graphserver.GraphRun{ThreadID: "t", Checkpointer: cp, Command: &graphserver.Command{Resume: json.RawMessage(`true`)}}, nil)
	st, _ = c.State(ctx, &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: "t"}, Checkpointer: cp})
	fmt.Println(st.Values)
	// Output:
	// publish the draft?
	// map[log:[draft publish]]
}

// A node returning several Commands: each update applies, each goto is
// followed.
func ExampleCommand_list() {
	g := graph.New(graph.Channels{"log": graph.Append()})
	g.AddNode("dispatch", func(ctx context.Context, s graph.State) (any, error) {
		return []graph.Command{
			{Update: graph.Update{"log": "to a"}, Goto: "a"},
			{Update: graph.Update{"log": "to b"}, Goto: "b"},
		}, nil
	})
	g.AddNode("a", logNode("a"))
	g.AddNode("b", logNode("b"))
	g.AddEdge(graph.Start, "dispatch")
	c, err := g.Compile(graph.CompileOptions{})
	if err != nil {
		panic(err)
	}
	out, err := c.Invoke(context.Background(), map[string]any{}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// map[log:[to a to b a b]]
}

// The messages stream carries the messages a node returns under any key,
// here a draft kept in a plain channel.
func ExampleCompiled_Run_messages() {
	g := graph.New(graph.Channels{"draft": graph.LastValue()})
	g.AddNode("writer", func(ctx context.Context, s graph.State) (any, error) {
		m := graph.AI("Dear Ann, ...")
		m.ID = "draft-1"
		return graph.Update{"draft": m}, nil
	})
	g.AddEdge(graph.Start, "writer")
	c, err := g.Compile(graph.CompileOptions{})
	if err != nil {
		panic(err)
	}
	err = c.Run(context.Background(), &graphserver.GraphRun{Input: json.RawMessage(`{}`), StreamModes: []string{"messages-tuple"}}, func(p graphserver.StreamPart) {
		var pair [2]map[string]any
		if err := json.Unmarshal(p.Data, &pair); err == nil {
			fmt.Println(p.Event, pair[0]["id"], pair[0]["content"], pair[1]["langgraph_node"])
		}
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// messages draft-1 Dear Ann, ... writer
}
