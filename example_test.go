package graphserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/sqlite"
)

// Example uses a Server in-process, without HTTP: it opens a SQLite file,
// registers a graph built with package graph, and works with assistants,
// threads and runs through the same methods the HTTP API calls.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "graphserver-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	db, err := sqlite.Open(filepath.Join(dir, "graphserver.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()

	// A one-node graph adding 1 to its "count".
	g := graph.New(graph.Channels{"count": graph.LastValue()})
	g.AddNode("inc", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"count": s.Number("count") + 1}, nil
	})
	g.AddEdge(graph.Start, "inc")
	g.AddEdge("inc", graph.End)
	counter, err := g.Compile(graph.CompileOptions{Name: "counter"})
	if err != nil {
		panic(err)
	}

	srv, err := graphserver.New(graphserver.Options{
		Storage: db,
		Graphs:  map[string]graphserver.Graph{"counter": counter},
	})
	if err != nil {
		panic(err)
	}
	if err := srv.Start(ctx); err != nil {
		panic(err)
	}
	defer srv.Close(ctx)

	// The graph id works as an assistant id: it names the system assistant.
	a, err := srv.GetAssistant(ctx, "counter")
	if err != nil {
		panic(err)
	}
	fmt.Println("assistant:", a.Name, a.Metadata["created_by"], a.AssistantID == graphserver.SystemAssistantID("counter"))

	th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{Metadata: graphserver.Metadata{"user": "ann"}})
	if err != nil {
		panic(err)
	}
	fmt.Println("thread:", th.Status, th.Values == nil)

	out, err := srv.WaitRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "counter", Input: json.RawMessage(`{"count": 41}`)})
	if err != nil {
		panic(err)
	}
	fmt.Println("run output:", string(out))

	page, err := srv.SearchThreads(ctx, graphserver.ThreadSearch{Metadata: graphserver.Metadata{"user": "ann"}})
	if err != nil {
		panic(err)
	}
	fmt.Println("found:", len(page.Items), page.Items[0].Status, string(page.Items[0].Values))

	_, err = srv.GetThread(ctx, "not-a-uuid")
	fmt.Println("error:", graphserver.ErrorCode(err), graphserver.ErrorMessage(err))

	// Output:
	// assistant: counter system true
	// thread: idle true
	// run output: {"count":42}
	// found: 1 idle {"count":42}
	// error: invalid Invalid thread ID: must be a UUID
}
