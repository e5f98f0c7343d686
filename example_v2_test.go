package graphserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"path/filepath"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/sqlite"
)

// ExampleServer_ThreadCommand drives protocol v2 in-process, as the SDKs'
// threads.stream does over HTTP: a subscription on a thread id that does
// not exist yet, run.start (which creates the thread), the events until the
// interrupt, input.respond, the events until the run completes.
func ExampleServer_ThreadCommand() {
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

	ask := graph.Func("ask", func(ctx context.Context, input any) (any, error) {
		graph.StreamWriter(ctx)(map[string]any{"name": "progress", "step": "asking"})
		answer, err := graph.Interrupt(ctx, "Are we good?")
		if err != nil {
			return nil, err
		}
		return map[string]any{"answer": answer}, nil
	})
	srv, err := graphserver.New(graphserver.Options{Storage: db, Graphs: map[string]graphserver.Graph{"ask": ask}})
	if err != nil {
		panic(err)
	}
	if err := srv.Start(ctx); err != nil {
		panic(err)
	}
	defer srv.Close(ctx)

	thread := "6f1c2a3e-58f1-4d3c-9d2e-0b7e2f6d9a11" // made up by the client
	sub, err := srv.SubscribeThreadEvents(ctx, thread, graphserver.ThreadEventsRequest{
		Channels: []string{"lifecycle", "input", "custom:progress"},
	})
	if err != nil {
		panic(err)
	}
	next, stop := iter.Pull2(sub.Events(ctx))
	defer stop()
	event := func() graphserver.ThreadEvent {
		ev, err, ok := next()
		if err != nil || !ok {
			panic(fmt.Sprint("stream ended: ", err))
		}
		return ev
	}

	id := int64(1)
	if _, err := srv.ThreadCommand(ctx, thread, graphserver.ThreadCommand{ID: &id, Method: "run.start",
		Params: json.RawMessage(`{"assistant_id": "ask", "input": {}}`)}); err != nil {
		panic(err)
	}
	var interruptID string
	for {
		ev := event()
		var data map[string]any
		_ = json.Unmarshal(ev.Data, &data)
		fmt.Println(ev.Method, ev.Namespace, data["event"], data["step"], data["value"])
		if ev.Method == "input.requested" {
			interruptID = data["interrupt_id"].(string)
		}
		if data["event"] == "interrupted" {
			break
		}
	}
	params, _ := json.Marshal(map[string]any{"interrupt_id": interruptID, "namespace": []string{}, "response": "yes"})
	id++
	if _, err := srv.ThreadCommand(ctx, thread, graphserver.ThreadCommand{ID: &id, Method: "input.respond", Params: params}); err != nil {
		panic(err)
	}
	for {
		ev := event()
		var data map[string]any
		_ = json.Unmarshal(ev.Data, &data)
		fmt.Println(ev.Method, ev.Namespace, data["event"], data["step"])
		if data["event"] == "completed" {
			break
		}
	}
	// Output:
	// lifecycle [] running <nil> <nil>
	// custom [] <nil> asking <nil>
	// input.requested [] <nil> <nil> Are we good?
	// lifecycle [] interrupted <nil> <nil>
	// lifecycle [] running <nil>
	// custom [] <nil> asking
	// lifecycle [] completed <nil>
}
