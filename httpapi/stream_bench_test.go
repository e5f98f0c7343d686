package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/sqlite"
)

// BenchmarkStreamMessageChunks streams one chat reply of N chunks through
// the whole server (engine, run event log, SSE over HTTP) and reads the
// stream to its end, with the messages-tuple mode requested and without it
// (values only). The time per chunk (ns/chunk) must not grow with N: a
// reply of 100,000 chunks streams in about a second (ms/run).
func BenchmarkStreamMessageChunks(b *testing.B) {
	chat := graph.New(graph.Channels{"messages": graph.AddMessages(), "n": graph.LastValue()})
	chat.AddNode("chat", func(ctx context.Context, s graph.State) (any, error) {
		reply := graph.StreamMessage(ctx, "")
		for range int(s.Number("n")) {
			reply.Chunk("word ")
		}
		return graph.Update{"messages": reply.End()}, nil
	})
	chat.AddEdge(graph.Start, "chat")
	g, err := chat.Compile(graph.CompileOptions{Name: "chat"})
	require.NoError(b, err)

	db, err := sqlite.Open(filepath.Join(b.TempDir(), "gs.db"))
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, db.Close()) })
	srv, err := graphserver.New(graphserver.Options{Storage: db, Graphs: map[string]graphserver.Graph{"chat": g}})
	require.NoError(b, err)
	require.NoError(b, srv.Start(context.Background()))
	ts := httptest.NewServer(httpapi.New(srv, httpapi.Options{}))
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(b, srv.Close(ctx))
		ts.Close()
	})

	for _, mode := range []string{"messages-tuple", "values"} {
		for _, n := range []int{1_000, 10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/chunks=%d", mode, n), func(b *testing.B) {
				body := fmt.Sprintf(`{"assistant_id": "chat", "input": {"messages": [{"role": "user", "content": "hi"}], "n": %d}, "stream_mode": [%q]}`, n, mode)
				for b.Loop() {
					resp, err := http.Post(ts.URL+"/runs/stream", "application/json", strings.NewReader(body))
					require.NoError(b, err)
					messages, last := countFrames(b, resp)
					if mode == "messages-tuple" {
						require.Equal(b, n, messages)
					} else {
						var values map[string]any
						require.NoError(b, json.Unmarshal([]byte(last), &values))
						require.Len(b, values["messages"], 2)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/chunk")
				b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/run")
			})
		}
	}
}

// countFrames reads an SSE body to its end without keeping the frames (the
// reader must not cost more than the server): it counts the messages
// events and returns the data of the last frame.
func countFrames(b *testing.B, resp *http.Response) (messages int, last string) {
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.Equal(line, []byte("event: messages")):
			messages++
		case bytes.Equal(line, []byte("event: error")):
			b.Fatal("the run failed")
		case bytes.HasPrefix(line, []byte("data: ")):
			data = append(data[:0], line[len("data: "):]...)
		}
	}
	require.NoError(b, sc.Err())
	return messages, string(data)
}
