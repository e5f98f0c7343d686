package graphserver_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/internal/storagetest"
	"github.com/graphserver/graphserver/sqlite"
)

// BenchmarkServer measures the Server methods behind the rows of
// examples/loadtest, in-process (no HTTP), on a SQLite file opened as the
// quickstart opens it, with the loadtest's one-node echo graph: serially
// and from 8 goroutines (/parallel, the loadtest's clients). cpu-ns/op is
// the process's CPU time per operation, which depends little on the
// machine's load.
func BenchmarkServer(b *testing.B) {
	in := json.RawMessage(`{"messages":[{"role":"user","content":"hi"}]}`)
	benchServer(b, "CreateThread", func(b *testing.B, srv *graphserver.Server, _ string) {
		if _, err := srv.CreateThread(b.Context(), graphserver.ThreadCreate{}); err != nil {
			b.Fatal(err)
		}
	})
	benchServer(b, "WaitRun/stateless", func(b *testing.B, srv *graphserver.Server, _ string) {
		if _, err := srv.WaitRun(b.Context(), "", graphserver.RunCreate{AssistantID: "echo", Input: in}); err != nil {
			b.Fatal(err)
		}
	})
	benchServer(b, "WaitRun/thread", func(b *testing.B, srv *graphserver.Server, thread string) {
		if _, err := srv.WaitRun(b.Context(), thread, graphserver.RunCreate{AssistantID: "echo", Input: in}); err != nil {
			b.Fatal(err)
		}
	})
	benchServer(b, "StreamRun/first-event", func(b *testing.B, srv *graphserver.Server, _ string) {
		st, err := srv.StreamRun(b.Context(), "", graphserver.RunCreate{AssistantID: "echo", Input: in})
		if err != nil {
			b.Fatal(err)
		}
		for _, err := range st.Events(b.Context()) {
			if err != nil {
				b.Fatal(err)
			}
			break
		}
	})
}

// benchServer runs op on a started Server, serially and in parallel; op
// gets a thread of its own goroutine.
func benchServer(b *testing.B, name string, op func(b *testing.B, srv *graphserver.Server, thread string)) {
	b.Run(name, func(b *testing.B) {
		srv := benchStartServer(b)
		thread := benchThread(b, srv)
		b.ReportAllocs()
		cpu := storagetest.CPUMeter(b)
		for b.Loop() {
			op(b, srv, thread)
		}
		cpu()
	})
	b.Run(name+"/parallel", func(b *testing.B) {
		srv := benchStartServer(b)
		b.ReportAllocs()
		b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
		b.ResetTimer()
		cpu := storagetest.CPUMeter(b)
		defer cpu()
		b.RunParallel(func(pb *testing.PB) {
			thread := benchThread(b, srv)
			for pb.Next() {
				op(b, srv, thread)
			}
		})
	})
}

func benchStartServer(b *testing.B) *graphserver.Server {
	b.Helper()
	db, err := sqlite.OpenWith(filepath.Join(b.TempDir(), "gs.db"), sqlite.OpenOptions{Exclusive: true})
	require.NoError(b, err)
	b.Cleanup(func() { db.Close() })
	echo := graph.Func("echo", func(_ context.Context, input any) (any, error) { return input, nil })
	srv, err := graphserver.New(graphserver.Options{Storage: db, Graphs: map[string]graphserver.Graph{"echo": echo},
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(b, err)
	require.NoError(b, srv.Start(context.Background()))
	b.Cleanup(func() { srv.Close(context.Background()) })
	return srv
}

func benchThread(b *testing.B, srv *graphserver.Server) string {
	th, err := srv.CreateThread(context.Background(), graphserver.ThreadCreate{})
	if err != nil {
		b.Fatal(err)
	}
	return th.ThreadID
}
