package graphserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/sqlite"
)

// Example_crons schedules a run on a thread every weekday at 09:00 Paris
// time. A started Server fires due crons by itself every
// Options.CronInterval, reading the wall clock; here the example drives the
// clock and fires the crons with FireDueCrons, so that its output does not
// depend on when it runs.
func Example_crons() {
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

	// A one-node graph adding 1 to its "count" at each run.
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

	var mu sync.Mutex
	now := time.Date(2025, 1, 3, 12, 0, 0, 0, time.UTC) // Friday, 13:00 in Paris
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	setClock := func(t time.Time) { mu.Lock(); defer mu.Unlock(); now = t }

	srv, err := graphserver.New(graphserver.Options{
		Storage:      db,
		Graphs:       map[string]graphserver.Graph{"counter": counter},
		Now:          clock,
		CronInterval: -1, // no scheduler: the example fires crons itself
	})
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
	c, err := srv.CreateCron(ctx, th.ThreadID, graphserver.CronCreate{
		RunCreate: graphserver.RunCreate{AssistantID: "counter", Input: json.RawMessage(`{}`)},
		Schedule:  "0 9 * * 1-5",
		Timezone:  "Europe/Paris",
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("next run:", c.NextRunDate.Format(time.RFC3339)) // Monday 09:00 Paris is 08:00 UTC

	for range 2 {
		next, err := srv.GetCron(ctx, c.CronID)
		if err != nil {
			panic(err)
		}
		setClock(*next.NextRunDate)
		fired, err := srv.FireDueCrons(ctx)
		if err != nil {
			panic(err)
		}
		runs, err := srv.ListRuns(ctx, th.ThreadID, graphserver.RunSearch{Limit: 1})
		if err != nil {
			panic(err)
		}
		out, err := srv.JoinRun(ctx, th.ThreadID, runs[0].RunID)
		if err != nil {
			panic(err)
		}
		fmt.Println("at", clock().Format(time.RFC3339), "fired", fired, "output", string(out))
	}

	if err := srv.DeleteCron(ctx, c.CronID); err != nil {
		panic(err)
	}
	n, err := srv.CountCrons(ctx, graphserver.CronSearch{})
	if err != nil {
		panic(err)
	}
	fmt.Println("crons left:", n)

	// Output:
	// next run: 2025-01-06T08:00:00Z
	// at 2025-01-06T08:00:00Z fired 1 output {"count":1}
	// at 2025-01-07T08:00:00Z fired 1 output {"count":2}
	// crons left: 0
}
