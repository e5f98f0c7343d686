package graph_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
)

// A node asks a human for approval with Interrupt; the run pauses, and a
// second run with Command{resume} continues it.
func ExampleInterrupt() {
	g := graph.New(graph.Channels{"action": graph.LastValue(), "approved": graph.LastValue()})
	g.AddNode("review", func(ctx context.Context, s graph.State) (any, error) {
		answer, err := graph.Interrupt(ctx, map[string]any{"question": "approve " + s.String("action") + "?"})
		if err != nil {
			return nil, err // pauses the graph
		}
		return graph.Update{"approved": answer == "yes"}, nil
	})
	g.AddEdge(graph.Start, "review")
	review, _ := g.Compile(graph.CompileOptions{})

	ctx := context.Background()
	cp := graph.NewMemoryCheckpointer()
	run := &graphserver.GraphRun{ThreadID: "t", Input: json.RawMessage(`{"action": "deploy"}`), Checkpointer: cp}
	if err := review.Run(ctx, run, nil); err != nil {
		panic(err)
	}
	st, _ := review.State(ctx, &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: "t"}, Checkpointer: cp})
	fmt.Println(st.Next, st.Interrupts[0].Value)

	resume := &graphserver.GraphRun{ThreadID: "t", Command: &graphserver.RunCommand{Resume: json.RawMessage(`"yes"`)}, Checkpointer: cp}
	if err := review.Run(ctx, resume, nil); err != nil {
		panic(err)
	}
	st, _ = review.State(ctx, &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: "t"}, Checkpointer: cp})
	fmt.Println(st.Next, st.Values)
	// Output:
	// [review] map[question:approve deploy?]
	// [] map[action:deploy approved:true]
}

// Send fans out one task per item; each receives its own argument.
func ExampleSend() {
	g := graph.New(graph.Channels{"topics": graph.LastValue(), "jokes": graph.Append()})
	g.AddNode("joke", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"jokes": "a joke about " + s.String("topic")}, nil
	})
	g.AddConditionalEdges(graph.Start, func(ctx context.Context, s graph.State) any {
		var sends []graph.Send
		for _, t := range s["topics"].([]any) {
			sends = append(sends, graph.Send{Node: "joke", Arg: map[string]any{"topic": t}})
		}
		return sends
	})
	jokes, _ := g.Compile(graph.CompileOptions{})
	out, err := jokes.Invoke(context.Background(), map[string]any{"topics": []string{"cats", "dogs"}}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(out.(map[string]any)["jokes"])
	// Output:
	// [a joke about cats a joke about dogs]
}

// Func turns a plain function into a one-node graph.
func ExampleFunc() {
	upper := graph.Func("upper", func(ctx context.Context, input any) (any, error) {
		graph.StreamWriter(ctx)("working")
		return map[string]any{"len": len(input.(string))}, nil
	})
	err := upper.Run(context.Background(), &graphserver.GraphRun{Input: json.RawMessage(`"hello"`), StreamModes: []string{"custom", "values"}},
		func(p graphserver.StreamPart) { fmt.Println(p.Event, string(p.Data)) })
	if err != nil {
		panic(err)
	}
	// Output:
	// values "hello"
	// custom "working"
	// values {"len":5}
}
