package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/sqlite"
	"github.com/stretchr/testify/require"
)

func openSQLite(tb testing.TB) (*sqlite.DB, string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "gs.db")
	db, err := sqlite.Open(path)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = db.Close() })
	return db, path
}

func createThread(tb testing.TB, db *sqlite.DB, id string) {
	tb.Helper()
	_, err := db.CreateThread(context.Background(), &graphserver.Thread{ThreadID: id, Status: graphserver.ThreadIdle}, "", nil)
	require.NoError(tb, err)
}

func TestAgentOnSQLite(t *testing.T) {
	t.Parallel()
	db, _ := openSQLite(t)
	createThread(t, db, "t1")
	h := &harness{t: t, g: agentGraph(t), cp: db, thread: "t1"}
	h.input(`{"messages":[{"role":"human","content":"foo"}]}`)
	require.Equal(t, []string{"foo", "begin", "tool_call__begin", "end"}, contents(h.state(), "messages"))
	hist := h.history()
	require.Len(t, hist, 5)
	require.Equal(t, [][]string{{}, {"agent"}, {"tool"}, {"agent"}, {"__start__"}}, [][]string{hist[0].Next, hist[1].Next, hist[2].Next, hist[3].Next, hist[4].Next})
	// history up to a checkpoint and before one
	ids := func(states []*graphserver.ThreadState) []string {
		var out []string
		for _, s := range states {
			out = append(out, *s.Checkpoint.CheckpointID)
		}
		return out
	}
	upTo, err := h.g.History(context.Background(), &graphserver.HistoryRequest{Checkpoint: graphserver.Checkpoint{ThreadID: "t1", CheckpointID: hist[2].Checkpoint.CheckpointID}, Checkpointer: db})
	require.NoError(t, err)
	require.Equal(t, ids(hist[2:]), ids(upTo))
	before, err := h.g.History(context.Background(), &graphserver.HistoryRequest{Checkpoint: graphserver.Checkpoint{ThreadID: "t1"}, Before: *hist[2].Checkpoint.CheckpointID, Limit: 1, Checkpointer: db})
	require.NoError(t, err)
	require.Equal(t, ids(hist[3:4]), ids(before))

	// interrupt and resume through sqlite
	h.input(`{"messages":["bar"], "interrupt": true}`)
	require.Equal(t, []string{"agent"}, h.state().Next)
	_, err = h.run(graphserver.GraphRun{Command: &graphserver.RunCommand{Resume: json.RawMessage(`"go"`)}})
	require.NoError(t, err)
	require.Equal(t, []string{"foo", "begin", "tool_call__begin", "end", "bar", "begin", "tool_call__begin", "end"}, contents(h.state(), "messages"))

	// subgraphs and namespaces on sqlite
	createThread(t, db, "t2")
	w := &harness{t: t, g: weatherGraph(t), cp: db, thread: "t2"}
	w.input(`{"messages": ["weather?"]}`)
	st := w.state()
	require.Equal(t, []string{"weather_graph"}, st.Next)
	_, err = w.g.UpdateState(context.Background(), &graphserver.UpdateStateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: "t2", CheckpointNS: st.Tasks[0].Checkpoint.CheckpointNS}, Values: json.RawMessage(`{"city": "LA"}`), Checkpointer: db})
	require.NoError(t, err)
	_, err = w.run(graphserver.GraphRun{})
	require.NoError(t, err)
	require.Equal(t, []string{"weather?", "It's sunny in LA!"}, contents(w.state(), "messages"))
}

// chatGraph appends the input message and a ~200-byte reply each turn.
func chatGraph(tb testing.TB) *graph.Compiled {
	g := graph.New(graph.Channels{"messages": graph.AddMessages()})
	reply := strings.Repeat("r", 130)
	g.AddNode("bot", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"messages": graph.AI(reply)}, nil
	})
	g.AddEdge(graph.Start, "bot").AddEdge("bot", graph.End)
	c, err := g.Compile(graph.CompileOptions{})
	require.NoError(tb, err)
	return c
}

func dbSize(tb testing.TB, path string) int64 {
	var n int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(path + suffix); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// chatStoragePoints are the thread lengths (turns) at which the chat storage
// benchmarks measure bytes on disk: the ratio must hold at any length, not
// only at a lucky one.
var chatStoragePoints = []int{100, 500, 1000, 1024, 1500, 3000}

// BenchmarkChatThreadStorage measures bytes on disk for a chat thread (two
// ~200-byte messages per turn) against the size of its final state (target
// <= 3x) at each length of chatStoragePoints, reported as disk/state@N, and
// the time to read the latest state of the longest thread (read-ms).
func BenchmarkChatThreadStorage(b *testing.B) { benchChatStorage(b, false) }

// BenchmarkChatThreadStorageServer is BenchmarkChatThreadStorage with what
// the Server adds to every run: a UUID thread id, a run id, and the
// metadata it merges into every checkpoint (run_id, thread_id, graph_id,
// assistant_id, user_id).
func BenchmarkChatThreadStorageServer(b *testing.B) { benchChatStorage(b, true) }

func benchChatStorage(b *testing.B, server bool) {
	ctx := context.Background()
	g := chatGraph(b)
	text := strings.Repeat("h", 130)
	thread, assistant := "chat", ""
	if server {
		thread, assistant = uuid.NewString(), uuid.NewString()
	}
	for b.Loop() {
		path := filepath.Join(b.TempDir(), "gs.db")
		db, err := sqlite.Open(path)
		require.NoError(b, err)
		createThread(b, db, thread)
		require.NoError(b, db.Close())
		base := dbSize(b, path)
		turn := 0
		for _, n := range chatStoragePoints {
			db, err = sqlite.Open(path)
			require.NoError(b, err)
			for ; turn < n; turn++ {
				in := fmt.Sprintf(`{"messages":[{"role":"human","content":%q}]}`, fmt.Sprint(turn, text))
				run := &graphserver.GraphRun{ThreadID: thread, Input: json.RawMessage(in), Checkpointer: db, Durability: "sync"}
				if server {
					run.RunID = uuid.Must(uuid.NewV7()).String()
					run.Metadata = graphserver.Object{"run_id": run.RunID, "thread_id": thread, "graph_id": "chat",
						"assistant_id": assistant, "user_id": "user-1", "langgraph_version": "0.4.0"}
				}
				require.NoError(b, g.Run(ctx, run, nil))
			}
			req := &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: thread}, Checkpointer: db}
			st, err := g.State(ctx, req)
			require.NoError(b, err)
			if n == chatStoragePoints[len(chatStoragePoints)-1] {
				const reads = 20
				start := time.Now()
				for range reads {
					_, err := g.State(ctx, req)
					require.NoError(b, err)
				}
				b.ReportMetric(float64(time.Since(start).Microseconds())/1000/reads, "read-ms")
			}
			state, _ := json.Marshal(st.Values)
			require.NoError(b, db.Close())
			onDisk := dbSize(b, path) - base
			b.ReportMetric(float64(onDisk)/float64(len(state)), fmt.Sprintf("disk/state@%d", n))
		}
	}
}

// BenchmarkSuperstep measures the per-superstep overhead of a three-node
// graph (a -> b -> c) with an in-memory checkpointer and with sqlite.
func BenchmarkSuperstep(b *testing.B) {
	g := graph.New(graph.Channels{"n": graph.LastValue()})
	for _, n := range []string{"a", "b", "c"} {
		g.AddNode(n, func(ctx context.Context, s graph.State) (any, error) {
			return graph.Update{"n": s.Number("n") + 1}, nil
		})
	}
	g.AddEdge(graph.Start, "a").AddEdge("a", "b").AddEdge("b", "c").AddEdge("c", graph.End)
	c, err := g.Compile(graph.CompileOptions{})
	require.NoError(b, err)
	ctx := context.Background()
	run := func(b *testing.B, cp driver.Checkpointer, thread string) {
		b.ReportAllocs()
		for b.Loop() {
			require.NoError(b, c.Run(ctx, &graphserver.GraphRun{ThreadID: thread, Input: json.RawMessage(`{"n": 0}`), Checkpointer: cp}, nil))
		}
		// four supersteps per run: __start__, a, b, c
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*4), "ns/superstep")
	}
	b.Run("memory", func(b *testing.B) { run(b, graph.NewMemoryCheckpointer(), "t") })
	b.Run("sqlite", func(b *testing.B) {
		db, _ := openSQLite(b)
		createThread(b, db, "t")
		run(b, db, "t")
	})
}
