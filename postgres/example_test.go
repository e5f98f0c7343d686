package postgres_test

import (
	"context"
	"log"
	"net/http"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/postgres"
)

// Serve graphs from PostgreSQL. Start this program several times (on one
// machine or many, behind a load balancer) with the same URL: the
// processes share the run queue, cancel each other's runs and stream each
// other's runs. (No output: it needs a PostgreSQL server.)
func Example() {
	ctx := context.Background()
	db, err := postgres.Open(ctx, "postgres://postgres@127.0.0.1:5432/test") // migrated on open
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close() // last, after the Server

	echo := graph.Func("echo", func(ctx context.Context, input any) (any, error) { return input, nil })
	srv, err := graphserver.New(graphserver.Options{
		Storage: db,
		Graphs:  map[string]graphserver.Graph{"echo": echo},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer srv.Close(ctx)
	log.Fatal(http.ListenAndServe("127.0.0.1:8123", httpapi.New(srv, httpapi.Options{})))
}
