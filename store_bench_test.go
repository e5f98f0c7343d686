package graphserver_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/storagetest"
)

// BenchmarkServerStore measures the Server methods behind the loadtest's
// PUT /store/items and GET /store/items rows, in-process, as
// BenchmarkServer does for the others: a new item indexed on its whole
// value (the default), and a get of one of 1,000 items, serially and from
// 8 goroutines (/parallel); GetItemWithPuts makes every tenth operation a
// put of another item (the gets' items stay in memory).
func BenchmarkServerStore(b *testing.B) {
	put := func(b *testing.B, srv *graphserver.Server, ns string, i int64) {
		err := srv.PutItem(b.Context(), graphserver.ItemPut{Namespace: []string{"loadtest", ns}, Key: fmt.Sprintf("k%d", i),
			Value: graphserver.Object{"text": "the quick brown fox", "n": float64(i)}})
		if err != nil {
			b.Fatal(err)
		}
	}
	const items = 1000
	seed := func(b *testing.B, srv *graphserver.Server) {
		for i := range int64(items) {
			put(b, srv, "get", i)
		}
	}
	get := func(b *testing.B, srv *graphserver.Server, i int64) {
		it, err := srv.GetItem(b.Context(), []string{"loadtest", "get"}, fmt.Sprintf("k%d", i%items), nil)
		if err != nil || it == nil {
			b.Fatal(it, err)
		}
	}
	benchStore(b, "PutItem", nil, func(b *testing.B, srv *graphserver.Server, i int64) { put(b, srv, "put", i) })
	benchStore(b, "GetItem", seed, get)
	benchStore(b, "GetItemWithPuts", seed, func(b *testing.B, srv *graphserver.Server, i int64) {
		if i%10 == 0 {
			put(b, srv, "put", i)
		} else {
			get(b, srv, i)
		}
	})
}

// benchStore runs op (numbered from 1) on a started Server prepared by
// setup, serially and in parallel.
func benchStore(b *testing.B, name string, setup func(b *testing.B, srv *graphserver.Server), op func(b *testing.B, srv *graphserver.Server, i int64)) {
	start := func(b *testing.B) *graphserver.Server {
		srv := benchStartServer(b)
		if setup != nil {
			setup(b, srv)
		}
		b.ReportAllocs()
		b.ResetTimer()
		return srv
	}
	b.Run(name, func(b *testing.B) {
		srv := start(b)
		cpu := storagetest.CPUMeter(b)
		var i int64
		for b.Loop() {
			i++
			op(b, srv, i)
		}
		cpu()
	})
	b.Run(name+"/parallel", func(b *testing.B) {
		srv := start(b)
		b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
		cpu := storagetest.CPUMeter(b)
		defer cpu()
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				op(b, srv, n.Add(1))
			}
		})
	})
}
