package graphserver_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/testgraph"
	"github.com/graphserver/graphserver/sqlite"
)

// Example uses a Server in-process, without HTTP: it opens a SQLite file,
// registers a graph, and works with assistants and threads through the same
// methods the HTTP API calls.
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

	srv, err := graphserver.New(graphserver.Options{
		Storage: db,
		Graphs:  map[string]graphserver.Graph{"chat": testgraph.Nop{}},
	})
	if err != nil {
		panic(err)
	}
	if err := srv.Start(ctx); err != nil {
		panic(err)
	}
	defer srv.Close(ctx)

	// The graph id works as an assistant id: it names the system assistant.
	a, err := srv.GetAssistant(ctx, "chat")
	if err != nil {
		panic(err)
	}
	fmt.Println("assistant:", a.Name, a.Metadata["created_by"], a.AssistantID == graphserver.SystemAssistantID("chat"))

	th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{Metadata: graphserver.Metadata{"user": "ann"}})
	if err != nil {
		panic(err)
	}
	fmt.Println("thread:", th.Status, th.Values == nil)

	page, err := srv.SearchThreads(ctx, graphserver.ThreadSearch{Metadata: graphserver.Metadata{"user": "ann"}})
	if err != nil {
		panic(err)
	}
	fmt.Println("found:", len(page.Items), page.Next == nil)

	_, err = srv.GetThread(ctx, "not-a-uuid")
	fmt.Println("error:", graphserver.ErrorCode(err), graphserver.ErrorMessage(err))

	_, err = srv.CreateThread(ctx, graphserver.ThreadCreate{ThreadID: th.ThreadID})
	var gerr *graphserver.Error
	fmt.Println("again:", errors.As(err, &gerr) && gerr.Code == graphserver.ECONFLICT)

	// Output:
	// assistant: chat system true
	// thread: idle true
	// found: 1 true
	// error: invalid Invalid thread ID: must be a UUID
	// again: true
}
