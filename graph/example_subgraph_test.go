package graph_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
)

// A node invokes a compiled graph, which runs as its subgraph: the
// approval it asks for inside pauses the whole run, and resuming the run
// continues the subgraph where it paused.
func ExampleCompiled_Invoke_subgraph() {
	ask := graph.New(graph.Channels{"plan": graph.LastValue(), "ok": graph.LastValue()})
	ask.AddNode("approve", func(ctx context.Context, s graph.State) (any, error) {
		answer, err := graph.Interrupt(ctx, "run "+s.String("plan")+"?")
		if err != nil {
			return nil, err
		}
		return graph.Update{"ok": answer == "yes"}, nil
	})
	ask.AddEdge(graph.Start, "approve")
	approval, _ := ask.Compile(graph.CompileOptions{Name: "approval"})

	g := graph.New(graph.Channels{"plan": graph.LastValue(), "done": graph.LastValue()})
	g.AddNode("execute", func(ctx context.Context, s graph.State) (any, error) {
		out, err := approval.Invoke(ctx, map[string]any{"plan": s.String("plan")}, nil)
		if err != nil {
			return nil, err // the subgraph paused: so does this graph
		}
		return graph.Update{"done": out.(map[string]any)["ok"]}, nil
	}, graph.WithSubgraph(approval))
	g.AddEdge(graph.Start, "execute")
	agent, _ := g.Compile(graph.CompileOptions{})

	ctx := context.Background()
	cp := graph.NewMemoryCheckpointer()
	state := func() *graphserver.ThreadState {
		st, _ := agent.State(ctx, &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: "t"}, Checkpointer: cp})
		return st
	}
	if err := agent.Run(ctx, &graphserver.GraphRun{ThreadID: "t", Input: json.RawMessage(`{"plan": "deploy"}`), Checkpointer: cp}, nil); err != nil {
		panic(err)
	}
	st := state()
	fmt.Println(st.Next, st.Interrupts[0].Value, st.Tasks[0].Checkpoint.CheckpointNS == "execute:"+st.Tasks[0].ID)
	if err := agent.Run(ctx, &graphserver.GraphRun{ThreadID: "t", Command: &graphserver.RunCommand{Resume: json.RawMessage(`"yes"`)}, Checkpointer: cp}, nil); err != nil {
		panic(err)
	}
	fmt.Println(state().Values)
	// Output:
	// [execute] run deploy? true
	// map[done:true plan:deploy]
}
