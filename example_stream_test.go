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

// ExampleServer_StreamRun streams a run's events in-process, then replays the
// log of the resumable run from the start, as a reconnecting client would
// with Last-Event-ID.
func ExampleServer_StreamRun() {
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

	shout := graph.Func("shout", func(ctx context.Context, input any) (any, error) {
		graph.StreamWriter(ctx)("working")
		return map[string]any{"text": "HELLO"}, nil
	})
	srv, err := graphserver.New(graphserver.Options{Storage: db, Graphs: map[string]graphserver.Graph{"shout": shout}})
	if err != nil {
		panic(err)
	}
	if err := srv.Start(ctx); err != nil {
		panic(err)
	}
	defer srv.Close(ctx)

	th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{})
	if err != nil {
		panic(err)
	}
	st, err := srv.StreamRun(ctx, th.ThreadID, graphserver.RunCreate{
		AssistantID:     "shout",
		Input:           json.RawMessage(`{"text": "hello"}`),
		StreamMode:      graphserver.StreamModes{"custom", "values"},
		StreamResumable: true,
	})
	if err != nil {
		panic(err)
	}
	for ev, err := range st.Events(ctx) {
		if err != nil {
			panic(err)
		}
		if ev.Event == "metadata" {
			fmt.Println(ev.ID, ev.Event)
			continue
		}
		fmt.Println(ev.ID, ev.Event, string(ev.Data))
	}

	// Replay everything after event 2.
	again, err := srv.JoinRunStream(ctx, th.ThreadID, st.Run.RunID, graphserver.JoinStreamOptions{LastEventID: "2"})
	if err != nil {
		panic(err)
	}
	for ev := range again.Events(ctx) {
		fmt.Println("replayed:", ev.ID, ev.Event)
	}
	// Output:
	// 0 metadata
	// 1 values {"text":"hello"}
	// 2 custom "working"
	// 3 values {"text":"HELLO"}
	// replayed: 3 values
}
