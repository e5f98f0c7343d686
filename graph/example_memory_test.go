package graph_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
)

// A subgraph with its own memory on the thread: each call continues from
// the state the previous call left.
func ExampleCompileOptions_persistent() {
	notes := graph.New(graph.Channels{"note": graph.LastValue(), "notes": graph.Append(), "count": graph.LastValue()})
	notes.AddNode("keep", func(ctx context.Context, s graph.State) (any, error) {
		n := len(s["notes"].([]any)) + 1
		return graph.Update{"notes": s["note"], "count": n}, nil
	})
	notes.AddEdge(graph.Start, "keep")
	notebook, err := notes.Compile(graph.CompileOptions{Name: "notebook", Persistent: true})
	if err != nil {
		panic(err)
	}
	g := graph.New(graph.Channels{"note": graph.LastValue(), "count": graph.LastValue()})
	g.AddNode("notebook", notebook)
	g.AddEdge(graph.Start, "notebook")
	app, err := g.Compile(graph.CompileOptions{})
	if err != nil {
		panic(err)
	}
	ctx, cp := context.Background(), graph.NewMemoryCheckpointer()
	for _, note := range []string{"buy milk", "call Ann"} {
		in, _ := json.Marshal(map[string]any{"note": note})
		if err := app.Run(ctx, &graphserver.GraphRun{ThreadID: "t", Checkpointer: cp, Input: in}, nil); err != nil {
			panic(err)
		}
	}
	st, err := app.State(ctx, &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: "t"}, Checkpointer: cp})
	if err != nil {
		panic(err)
	}
	fmt.Println("notes kept:", st.Values.(map[string]any)["count"])
	sub, err := app.State(ctx, &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: "t", CheckpointNS: "notebook"}, Checkpointer: cp})
	if err != nil {
		panic(err)
	}
	fmt.Println(sub.Values.(map[string]any)["notes"])
	// Output:
	// notes kept: 2
	// [buy milk call Ann]
}
