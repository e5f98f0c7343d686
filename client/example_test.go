package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/client"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/sqlite"
)

// serve starts an in-process graphserver hosting graphs and returns its URL
// and a function stopping it.
func serve(graphs map[string]graphserver.Graph) (string, func()) {
	dir, _ := os.MkdirTemp("", "client-example-")
	db, err := sqlite.Open(filepath.Join(dir, "gs.db"))
	if err != nil {
		panic(err)
	}
	srv, err := graphserver.New(graphserver.Options{Storage: db, Graphs: graphs, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		panic(err)
	}
	hs := httptest.NewServer(httpapi.New(srv, httpapi.Options{}))
	return hs.URL, func() {
		hs.Close()
		_ = srv.Close(context.Background())
		_ = db.Close()
		_ = os.RemoveAll(dir)
	}
}

// A client creates a thread, streams a run on it and reads the thread's
// state back, with the root package's types.
func Example() {
	greet := graph.New(graph.Channels{"name": graph.LastValue(), "greeting": graph.LastValue()})
	greet.AddNode("greet", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"greeting": "hello " + s.String("name")}, nil
	})
	greet.AddEdge(graph.Start, "greet")
	g, _ := greet.Compile(graph.CompileOptions{})
	url, stop := serve(map[string]graphserver.Graph{"greet": g})
	defer stop()

	ctx := context.Background()
	c, err := client.New(client.Options{URL: url})
	if err != nil {
		panic(err)
	}
	th, err := c.Threads.Create(ctx, graphserver.ThreadCreate{Metadata: graphserver.Metadata{"user": "ann"}})
	if err != nil {
		panic(err)
	}
	run := graphserver.RunCreate{AssistantID: "greet", Input: json.RawMessage(`{"name": "ann"}`), StreamMode: []string{"updates"}}
	for ev, err := range c.Runs.Stream(ctx, th.ThreadID, run, client.StreamOptions{}) {
		if err != nil {
			panic(err)
		}
		if ev.Event == "updates" {
			fmt.Println(ev.Event, string(ev.Data))
		}
	}
	st, err := c.Threads.GetState(ctx, th.ThreadID, graphserver.ThreadStateQuery{})
	if err != nil {
		panic(err)
	}
	fmt.Println(st.Values)

	_, err = c.Threads.Get(ctx, "00000000-0000-4000-8000-000000000000")
	fmt.Println(graphserver.ErrorCode(err) == graphserver.ENOTFOUND, err)
	// Output:
	// updates {"greet":{"greeting":"hello ann"}}
	// map[greeting:hello ann name:ann]
	// true HTTP 404: Thread with ID 00000000-0000-4000-8000-000000000000 not found
}

// A RemoteGraph is a node of a local graph: the remote graph's interrupt
// pauses the local run, and resuming the local run resumes the remote one.
func ExampleRemoteGraph_Node() {
	review := graph.New(graph.Channels{"draft": graph.LastValue(), "approved": graph.LastValue()})
	review.AddNode("ask", func(ctx context.Context, s graph.State) (any, error) {
		answer, err := graph.Interrupt(ctx, "publish "+s.String("draft")+"?")
		if err != nil {
			return nil, err
		}
		return graph.Update{"approved": answer == "yes"}, nil
	})
	review.AddEdge(graph.Start, "ask")
	rv, _ := review.Compile(graph.CompileOptions{})
	url, stop := serve(map[string]graphserver.Graph{"review": rv}) // the remote server
	defer stop()

	remote, err := client.NewRemoteGraph(client.RemoteOptions{AssistantID: "review", URL: url})
	if err != nil {
		panic(err)
	}
	local := graph.New(graph.Channels{"draft": graph.LastValue(), "approved": graph.LastValue()})
	local.AddNode("review", remote.Node)
	local.AddEdge(graph.Start, "review")
	g, _ := local.Compile(graph.CompileOptions{})

	// run the local graph in-process, on a thread (the remote thread gets
	// the same id)
	ctx := context.Background()
	cp := graph.NewMemoryCheckpointer()
	thread := graphserver.Checkpoint{ThreadID: "6f1d0c3e-52a3-4f0e-9c55-6a1f3b1e7a10"}
	if err := g.Run(ctx, &graphserver.GraphRun{ThreadID: thread.ThreadID, Input: json.RawMessage(`{"draft": "v1"}`), Checkpointer: cp}, nil); err != nil {
		panic(err)
	}
	st, _ := g.State(ctx, &graphserver.StateRequest{Checkpoint: thread, Checkpointer: cp})
	fmt.Println(st.Next, st.Interrupts[0].Value)

	resume := &graphserver.RunCommand{Resume: json.RawMessage(`"yes"`)}
	if err := g.Run(ctx, &graphserver.GraphRun{ThreadID: thread.ThreadID, Command: resume, Checkpointer: cp}, nil); err != nil {
		panic(err)
	}
	st, _ = g.State(ctx, &graphserver.StateRequest{Checkpoint: thread, Checkpointer: cp})
	fmt.Println(st.Next, st.Values)
	// Output:
	// [review] publish v1?
	// [] map[approved:true draft:v1]
}

// Protocol v2, as the SDKs' client.threads.stream: the client makes up a
// thread id, follows the thread's events before the thread exists, starts
// a run with run.start (which creates the thread), answers the graph's
// interrupt with input.respond and sees the run complete.
func ExampleThreads_Events() {
	review := graph.New(graph.Channels{"draft": graph.LastValue(), "approved": graph.LastValue()})
	review.AddNode("ask", func(ctx context.Context, s graph.State) (any, error) {
		answer, err := graph.Interrupt(ctx, "publish "+s.String("draft")+"?")
		if err != nil {
			return nil, err
		}
		return graph.Update{"approved": answer == "yes"}, nil
	})
	review.AddEdge(graph.Start, "ask")
	g, _ := review.Compile(graph.CompileOptions{})
	url, stop := serve(map[string]graphserver.Graph{"review": g})
	defer stop()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.New(client.Options{URL: url})
	if err != nil {
		panic(err)
	}
	thread := "0c6ae7d2-8a3e-4d55-9f0e-2b7c8f1d4e61"
	events := c.Threads.Events(ctx, thread, graphserver.ThreadEventsRequest{Channels: []string{"lifecycle", "input"}})
	next, done := iter.Pull2(events)
	defer done()
	if _, err := c.Threads.StartRun(ctx, thread, client.RunStart{AssistantID: "review", Input: map[string]any{"draft": "v1"}}); err != nil {
		panic(err)
	}
	for ev, err, _ := next(); ; ev, err, _ = next() {
		if err != nil {
			panic(err)
		}
		var data struct {
			Event       string `json:"event"`
			InterruptID string `json:"interrupt_id"`
			Value       any    `json:"value"`
		}
		_ = json.Unmarshal(ev.Data, &data)
		switch {
		case ev.Method == "input.requested":
			fmt.Println("asked:", data.Value)
			if _, err := c.Threads.Respond(ctx, thread, client.InterruptResponse{InterruptID: data.InterruptID, Response: "yes"}); err != nil {
				panic(err)
			}
		case ev.Method == "lifecycle":
			fmt.Println("run", data.Event)
		}
		if data.Event == "completed" {
			break
		}
	}
	st, _ := c.Threads.GetState(ctx, thread, graphserver.ThreadStateQuery{})
	fmt.Println(st.Values)
	// Output:
	// run running
	// asked: publish v1?
	// run interrupted
	// run running
	// run completed
	// map[approved:true draft:v1]
}
