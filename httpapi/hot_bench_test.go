package httpapi_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/internal/storagetest"
	"github.com/graphserver/graphserver/sqlite"
)

// BenchmarkHandler measures the handlers behind the loadtest's POST
// /threads, PUT /store/items and GET /store/items rows: everything between
// net/http and SQLite (middleware, decoding, the Server, the driver, the
// response), wired as examples/loadtest wires the server, with the
// loadtest's request bodies, serially and from 8 goroutines (/parallel,
// the loadtest's clients). Requests are served in-process (ServeHTTP on a
// recorder), so net/http's connection handling is not counted. cpu-ns/op
// is the process's CPU time per request. Run it with:
//
//	go test ./httpapi/ -run '^$' -bench Handler -benchtime 5000x
func BenchmarkHandler(b *testing.B) {
	benchHandler(b, "CreateThread", nil, func(i int64) (*http.Request, int) {
		return httptest.NewRequest(http.MethodPost, "/threads", strings.NewReader(`{}`)), http.StatusOK
	})
	benchHandler(b, "PutItem", nil, func(i int64) (*http.Request, int) {
		body := fmt.Sprintf(`{"namespace":["loadtest","put"],"key":"k%d","value":{"text":"the quick brown fox","n":%d}}`, i, i)
		return httptest.NewRequest(http.MethodPut, "/store/items", strings.NewReader(body)), http.StatusNoContent
	})
	const items = 1000
	seed := func(b *testing.B, h http.Handler) {
		for i := range items {
			body := fmt.Sprintf(`{"namespace":["loadtest","get"],"key":"k%d","value":{"text":"the quick brown fox","n":%d}}`, i, i)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodPut, "/store/items", strings.NewReader(body)))
			require.Equal(b, http.StatusNoContent, w.Code, w.Body.String())
		}
	}
	benchHandler(b, "GetItem", seed, func(i int64) (*http.Request, int) {
		return httptest.NewRequest(http.MethodGet, fmt.Sprintf("/store/items?namespace=loadtest.get&key=k%d", i%items), nil), http.StatusOK
	})
}

// benchHandler serves the requests req makes (numbered from 1) on a fresh
// server prepared by setup, serially and in parallel; each response must
// have the status req gives.
func benchHandler(b *testing.B, name string, setup func(b *testing.B, h http.Handler), req func(i int64) (*http.Request, int)) {
	serve := func(b *testing.B, h http.Handler, i int64) {
		r, status := req(i)
		// net/http gives each request a context of its own, cancelled
		// when the request ends.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r = r.WithContext(ctx)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != status {
			b.Fatalf("%s %s: %d %s", r.Method, r.URL, w.Code, w.Body)
		}
	}
	b.Run(name, func(b *testing.B) {
		h := benchHandlerServer(b)
		if setup != nil {
			setup(b, h)
		}
		b.ReportAllocs()
		cpu := storagetest.CPUMeter(b)
		var i int64
		for b.Loop() {
			i++
			serve(b, h, i)
		}
		cpu()
	})
	b.Run(name+"/parallel", func(b *testing.B) {
		h := benchHandlerServer(b)
		if setup != nil {
			setup(b, h)
		}
		b.ReportAllocs()
		b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
		b.ResetTimer()
		cpu := storagetest.CPUMeter(b)
		defer cpu()
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				serve(b, h, n.Add(1))
			}
		})
	})
}

// benchHandlerServer is the loadtest's server: a SQLite file opened
// Exclusive, default Server and handler options, logs at warn.
func benchHandlerServer(b *testing.B) http.Handler {
	b.Helper()
	db, err := sqlite.OpenWith(filepath.Join(b.TempDir(), "gs.db"), sqlite.OpenOptions{Exclusive: true})
	require.NoError(b, err)
	b.Cleanup(func() { db.Close() })
	logger := slog.New(slog.NewTextHandler(discard{}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := graphserver.New(graphserver.Options{Storage: db, Logger: logger})
	require.NoError(b, err)
	require.NoError(b, srv.Start(context.Background()))
	b.Cleanup(func() { srv.Close(context.Background()) })
	return httpapi.New(srv, httpapi.Options{})
}

// discard is an io.Writer that drops everything.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
