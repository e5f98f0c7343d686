package graphserver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/embedtest"
	"github.com/graphserver/graphserver/sqlite"
)

// Store items with an embedder, then rank them by similarity to a query.
// Without Options.Embedder the same query ranks by SQLite full-text relevance.
func ExampleServer_SearchItems() {
	dir, err := os.MkdirTemp("", "graphserver-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(filepath.Join(dir, "gs.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	srv, err := graphserver.New(graphserver.Options{
		Storage:          db,
		Embedder:         embedtest.HashEmbedder{}, // a deterministic test embedder; plug in a real model in production
		StoreIndexFields: []string{"text"},         // embed value.text of each item
	})
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	for _, m := range []struct{ key, text string }{
		{"tea", "Ann drinks green tea every morning"},
		{"job", "Ann works as a pilot"},
		{"pets", "Ann has two cats"},
	} {
		err := srv.PutItem(ctx, graphserver.ItemPut{
			Namespace: []string{"memories", "ann"},
			Key:       m.key,
			Value:     graphserver.Object{"text": m.text},
		})
		if err != nil {
			panic(err)
		}
	}

	items, err := srv.SearchItems(ctx, graphserver.ItemSearchRequest{
		NamespacePrefix: []string{"memories"},
		ItemSearch:      graphserver.ItemSearch{Query: "what does ann drink in the morning", Limit: 2},
	})
	if err != nil {
		panic(err)
	}
	for _, it := range items {
		fmt.Printf("%s %.2f\n", it.Key, *it.Score)
	}
	namespaces, err := srv.ListNamespaces(ctx, graphserver.NamespaceList{MaxDepth: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println(namespaces)
	// Output:
	// tea 0.41
	// pets 0.17
	// [[memories]]
}
