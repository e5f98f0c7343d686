package graph_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
)

// A chat graph: an agent node and a tool node looping until the agent says
// "end".
func Example() {
	replies := []string{"begin", "end"}
	turn := 0
	g := graph.New(graph.Channels{"messages": graph.AddMessages()})
	g.AddNode("agent", func(ctx context.Context, s graph.State) (any, error) {
		reply := replies[turn%len(replies)]
		turn++
		return graph.Update{"messages": graph.AI(reply)}, nil
	})
	g.AddNode("tool", func(ctx context.Context, s graph.State) (any, error) {
		msgs := s.Messages("messages")
		return graph.Update{"messages": graph.Tool("tool_call__"+msgs[len(msgs)-1].Text(), "call1")}, nil
	})
	g.AddEdge(graph.Start, "agent")
	g.AddConditionalEdges("agent", func(ctx context.Context, s graph.State) any {
		msgs := s.Messages("messages")
		if msgs[len(msgs)-1].Text() == "end" {
			return graph.End
		}
		return "tool"
	}, "tool", graph.End)
	g.AddEdge("tool", "agent")
	chat, err := g.Compile(graph.CompileOptions{Name: "chat"})
	if err != nil {
		panic(err)
	}

	cp := graph.NewMemoryCheckpointer()
	err = chat.Run(context.Background(), &graphserver.GraphRun{
		ThreadID:     "thread-1",
		Input:        json.RawMessage(`{"messages": [{"role": "user", "content": "foo"}]}`),
		StreamModes:  []string{"updates"},
		Checkpointer: cp,
	}, func(p graphserver.StreamPart) { fmt.Println(p.Event, len(p.Data) > 0) })
	if err != nil {
		panic(err)
	}
	st, _ := chat.State(context.Background(), &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: "thread-1"}, Checkpointer: cp})
	for _, m := range st.Values.(map[string]any)["messages"].([]any) {
		msg, _ := graph.ToMessage(m)
		fmt.Println(msg.Type, msg.Text())
	}
	// Output:
	// updates true
	// updates true
	// updates true
	// human foo
	// ai begin
	// tool tool_call__begin
	// ai end
}
