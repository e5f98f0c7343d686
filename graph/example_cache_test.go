package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/sqlite"
)

// A node whose writes are cached in the server's store for an hour: the
// second run, on another thread, does not call it.
func ExampleWithCache() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "graph-cache-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(filepath.Join(dir, "gs.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()

	g := graph.New(graph.Channels{"city": graph.LastValue(), "forecast": graph.LastValue()})
	g.AddNode("forecast", func(ctx context.Context, s graph.State) (any, error) {
		fmt.Println("calling the weather service for", s.String("city"))
		return graph.Update{"forecast": "sunny in " + s.String("city")}, nil
	}, graph.WithCache(graph.CachePolicy{
		Key: func(input any) string { return input.(graph.State).String("city") },
		TTL: time.Hour,
	}))
	g.AddEdge(graph.Start, "forecast")
	weather, err := g.Compile(graph.CompileOptions{Name: "weather"})
	if err != nil {
		panic(err)
	}
	srv, err := graphserver.New(graphserver.Options{Storage: db, Graphs: map[string]graphserver.Graph{"weather": weather}})
	if err != nil {
		panic(err)
	}
	if err := srv.Start(ctx); err != nil {
		panic(err)
	}
	defer srv.Close(ctx)
	for range 2 {
		th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{})
		if err != nil {
			panic(err)
		}
		out, err := srv.WaitRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "weather", Input: json.RawMessage(`{"city": "Lyon"}`)})
		if err != nil {
			panic(err)
		}
		fmt.Println(string(out))
	}
	// Output:
	// calling the weather service for Lyon
	// {"city":"Lyon","forecast":"sunny in Lyon"}
	// {"city":"Lyon","forecast":"sunny in Lyon"}
}
