package graph_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/stretchr/testify/require"
)

// blocker makes a node block until its run is cancelled, once: started is
// closed when the node first starts.
type blocker struct {
	started chan struct{}
	armed   atomic.Bool
}

func newBlocker() *blocker {
	b := &blocker{started: make(chan struct{})}
	b.armed.Store(true)
	return b
}

func (b *blocker) wait(ctx context.Context) error {
	if !b.armed.CompareAndSwap(true, false) {
		return nil
	}
	close(b.started)
	<-ctx.Done()
	return context.Cause(ctx)
}

// cancelWhenStarted runs req and cancels it once b's node started; it
// returns the run's error.
func cancelWhenStarted(t *testing.T, h *harness, b *blocker, req graphserver.GraphRun) error {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	req.ThreadID, req.Checkpointer = h.thread, h.cp
	done := make(chan error, 1)
	go func() { done <- h.g.Run(ctx, &req, nil) }()
	select {
	case <-b.started:
	case err := <-done:
		t.Fatalf("run ended before the node blocked: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("node did not start")
	}
	cancel(context.Canceled)
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled run did not return")
		return nil
	}
}

// harnesses returns a memory and a SQLite harness for g.
func harnesses(t *testing.T, g *graph.Compiled) map[string]*harness {
	db, _ := openSQLite(t)
	thread := uuid.NewString()
	createThread(t, db, thread)
	return map[string]*harness{
		"memory": {t: t, g: g, cp: graph.NewMemoryCheckpointer(), thread: "t1"},
		"sqlite": {t: t, g: g, cp: db, thread: thread},
	}
}

// A run claimed again after a release or crash runs with the same run id and
// input: it resumes from the checkpoints it wrote instead of applying its
// input again (LangGraph's _first: a resume when the checkpoint's run_id is
// the run's).
func TestRetriedRunResumesItsCheckpoints(t *testing.T) {
	t.Parallel()
	for _, durability := range []string{"sync", "async", "exit"} {
		for _, store := range []string{"memory", "sqlite"} {
			t.Run(durability+"/"+store, func(t *testing.T) {
				t.Parallel()
				var aRuns atomic.Int32
				blk := newBlocker()
				g := graph.New(graph.Channels{"log": graph.Append()})
				g.AddNode("a", func(ctx context.Context, s graph.State) (any, error) {
					aRuns.Add(1)
					return graph.Update{"log": "a"}, nil
				})
				g.AddNode("b", func(ctx context.Context, s graph.State) (any, error) {
					if err := blk.wait(ctx); err != nil {
						return nil, err
					}
					return graph.Update{"log": "b"}, nil
				})
				g.AddEdge(graph.Start, "a").AddEdge("a", "b").AddEdge("b", graph.End)
				h := harnesses(t, compile(t, g, graph.CompileOptions{}))[store]
				run := graphserver.GraphRun{RunID: uuid.NewString(), Input: json.RawMessage(`{"log": ["in"]}`), Durability: durability}
				require.ErrorIs(t, cancelWhenStarted(t, h, blk, run), context.Canceled)

				_, err := h.run(run)
				require.NoError(t, err)
				require.Equal(t, []any{"in", "a", "b"}, h.state().Values.(map[string]any)["log"])
				require.Equal(t, int32(1), aRuns.Load())
			})
		}
	}
}

// A retried run whose input is a Command does not apply its update again
// over the checkpoints it wrote.
func TestRetriedCommandRunResumes(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"memory", "sqlite"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			var bRuns atomic.Int32
			blk := newBlocker()
			g := graph.New(graph.Channels{"log": graph.Append()})
			g.AddNode("a", func(ctx context.Context, s graph.State) (any, error) { return graph.Update{"log": "a"}, nil })
			g.AddNode("b", func(ctx context.Context, s graph.State) (any, error) {
				bRuns.Add(1)
				return graph.Update{"log": "b"}, nil
			})
			g.AddNode("c", func(ctx context.Context, s graph.State) (any, error) {
				if err := blk.wait(ctx); err != nil {
					return nil, err
				}
				return graph.Update{"log": "c"}, nil
			})
			g.AddEdge(graph.Start, "a").AddEdge("a", "b").AddEdge("b", "c").AddEdge("c", graph.End)
			h := harnesses(t, compile(t, g, graph.CompileOptions{InterruptBefore: []string{"b"}}))[store]
			h.input(`{"log": ["in"]}`)
			require.Equal(t, []string{"b"}, h.state().Next)

			run := graphserver.GraphRun{RunID: uuid.NewString(), Command: &graphserver.RunCommand{Update: json.RawMessage(`{"log": "cmd"}`)}}
			require.ErrorIs(t, cancelWhenStarted(t, h, blk, run), context.Canceled)
			_, err := h.run(run)
			require.NoError(t, err)
			require.Equal(t, []any{"in", "a", "cmd", "b", "c"}, h.state().Values.(map[string]any)["log"])
			require.Equal(t, int32(1), bRuns.Load())
		})
	}
}

// A lone task that finished before its run was cancelled, but before its
// step was committed, keeps its writes: the next run does not run it again.
func TestCancelKeepsLoneTaskWrites(t *testing.T) {
	t.Parallel()
	for _, durability := range []string{"sync", "async", "exit"} {
		t.Run(durability, func(t *testing.T) {
			t.Parallel()
			var aRuns atomic.Int32
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			g := graph.New(graph.Channels{"log": graph.Append()})
			g.AddNode("a", func(context.Context, graph.State) (any, error) {
				if aRuns.Add(1) == 1 {
					cancel(context.Canceled) // the run goes once a has finished
				}
				return graph.Update{"log": "a"}, nil
			})
			g.AddNode("b", func(context.Context, graph.State) (any, error) { return graph.Update{"log": "b"}, nil })
			g.AddEdge(graph.Start, "a").AddEdge("a", "b").AddEdge("b", graph.End)
			h := newHarness(t, compile(t, g, graph.CompileOptions{}))
			err := h.g.Run(ctx, &graphserver.GraphRun{RunID: uuid.NewString(), ThreadID: h.thread, Checkpointer: h.cp,
				Input: json.RawMessage(`{"log": ["in"]}`), Durability: durability}, nil)
			require.ErrorIs(t, err, context.Canceled)
			st := h.state()
			require.Len(t, st.Tasks, 1)
			require.Equal(t, "a", st.Tasks[0].Name)
			require.Equal(t, map[string]any{"log": "a"}, st.Tasks[0].Result, "a's writes are saved")

			_, err = h.run(graphserver.GraphRun{Durability: durability})
			require.NoError(t, err)
			require.Equal(t, []any{"in", "a", "b"}, h.state().Values.(map[string]any)["log"])
			require.Equal(t, int32(1), aRuns.Load())
		})
	}
}

// Under durability exit, a Command's update still pending when its run ends
// is saved (LangGraph's _put_pending_writes on exit), so a later run applies it.
func TestExitDurabilityKeepsCommandUpdate(t *testing.T) {
	t.Parallel()
	blk := newBlocker()
	g := graph.New(graph.Channels{"log": graph.Append()})
	g.AddNode("a", func(context.Context, graph.State) (any, error) { return graph.Update{"log": "a"}, nil })
	g.AddNode("b", func(ctx context.Context, s graph.State) (any, error) {
		if err := blk.wait(ctx); err != nil {
			return nil, err
		}
		return graph.Update{"log": "b"}, nil
	})
	g.AddEdge(graph.Start, "a").AddEdge("a", "b").AddEdge("b", graph.End)
	h := newHarness(t, compile(t, g, graph.CompileOptions{InterruptBefore: []string{"b"}}))
	_, err := h.run(graphserver.GraphRun{Input: json.RawMessage(`{"log": ["in"]}`), Durability: "exit"})
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, h.state().Next)

	run := graphserver.GraphRun{RunID: uuid.NewString(), Durability: "exit", Command: &graphserver.RunCommand{Update: json.RawMessage(`{"log": "cmd"}`)}}
	require.ErrorIs(t, cancelWhenStarted(t, h, blk, run), context.Canceled)

	_, err = h.run(graphserver.GraphRun{Durability: "exit"})
	require.NoError(t, err)
	require.Equal(t, []any{"in", "a", "cmd", "b"}, h.state().Values.(map[string]any)["log"])
}

// A resume map is recognized by its keys (interrupt ids: 32 hex digits),
// not by all of them being pending here: an id that matches no interrupt
// resumes nothing.
func TestResumeMapWithUnknownID(t *testing.T) {
	t.Parallel()
	g := graph.New(graph.Channels{"log": graph.Append()})
	g.AddNode("ask", func(ctx context.Context, s graph.State) (any, error) {
		v, err := graph.Interrupt(ctx, "question")
		if err != nil {
			return nil, err
		}
		return graph.Update{"log": v}, nil
	})
	g.AddEdge(graph.Start, "ask").AddEdge("ask", graph.End)
	h := newHarness(t, compile(t, g, graph.CompileOptions{}))
	h.input(`{"log": []}`)
	st := h.state()
	require.Len(t, st.Interrupts, 1)
	id := st.Interrupts[0].ID
	const unknown = "0123456789abcdef0123456789abcdef"
	require.NotEqual(t, unknown, id)

	// only an unknown id: the interrupt stays pending
	_, err := h.run(graphserver.GraphRun{Command: &graphserver.RunCommand{Resume: json.RawMessage(`{"` + unknown + `": "no"}`)}})
	require.NoError(t, err)
	st = h.state()
	require.Equal(t, []string{"ask"}, st.Next)
	require.Len(t, st.Interrupts, 1)
	require.Equal(t, id, st.Interrupts[0].ID)

	_, err = h.run(graphserver.GraphRun{Command: &graphserver.RunCommand{Resume: json.RawMessage(`{"` + id + `": "yes", "` + unknown + `": "no"}`)}})
	require.NoError(t, err)
	st = h.state()
	require.Empty(t, st.Next)
	require.Equal(t, []any{"yes"}, st.Values.(map[string]any)["log"])
}
