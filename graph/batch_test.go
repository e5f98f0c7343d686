package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/graph"
)

// batchingCheckpointer is a MemoryCheckpointer that can save checkpoints
// in batches (driver.CheckpointBatcher) and records the steps of the
// checkpoints of each save.
type batchingCheckpointer struct {
	*graph.MemoryCheckpointer
	mu    sync.Mutex
	saves [][]any
}

func (c *batchingCheckpointer) record(cps []*driver.CheckpointRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var steps []any
	for _, cp := range cps {
		steps = append(steps, cp.Metadata["step"])
	}
	c.saves = append(c.saves, steps)
}

func (c *batchingCheckpointer) PutCheckpoint(ctx context.Context, cp *driver.CheckpointRecord) error {
	c.record([]*driver.CheckpointRecord{cp})
	return c.MemoryCheckpointer.PutCheckpoint(ctx, cp)
}

func (c *batchingCheckpointer) PutCheckpoints(ctx context.Context, cps []*driver.CheckpointRecord) error {
	c.record(cps)
	for _, cp := range cps {
		if err := c.MemoryCheckpointer.PutCheckpoint(ctx, cp); err != nil {
			return err
		}
	}
	return nil
}

// TestInputCheckpointSavedWithNext checks that, under the default
// durability (async) and with a checkpointer that saves batches, a run's
// input checkpoint is saved in one call with the checkpoint of its
// __start__ step (they follow each other with no node between them, so
// the node's save is not held back), and that every checkpoint LangGraph
// writes is still saved: input, then one per step (steps -1, 0, 1 for a
// one-node graph), also when the node fails.
func TestInputCheckpointSavedWithNext(t *testing.T) {
	t.Parallel()
	var cp *batchingCheckpointer
	g := graph.New(graph.Channels{"n": graph.LastValue()})
	g.AddNode("a", func(ctx context.Context, s graph.State) (any, error) {
		if s.Number("n") < 0 {
			return nil, errors.New("negative")
		}
		return graph.Update{"n": s.Number("n") + 1}, nil
	})
	g.AddEdge(graph.Start, "a").AddEdge("a", graph.End)
	c, err := g.Compile(graph.CompileOptions{})
	require.NoError(t, err)
	run := func(thread, input string) error {
		return c.Run(t.Context(), &graphserver.GraphRun{ThreadID: thread, Input: json.RawMessage(input), Checkpointer: cp}, nil)
	}
	count := func(thread string) int {
		list, err := cp.ListCheckpoints(t.Context(), thread, driver.CheckpointListOptions{})
		require.NoError(t, err)
		return len(list)
	}

	cp = &batchingCheckpointer{MemoryCheckpointer: graph.NewMemoryCheckpointer()}
	require.NoError(t, run("t1", `{"n": 1}`))
	require.Equal(t, [][]any{{-1, 0}, {1}}, cp.saves)
	require.Equal(t, 3, count("t1"))

	// A node that fails: the input and __start__ checkpoints are saved.
	cp = &batchingCheckpointer{MemoryCheckpointer: graph.NewMemoryCheckpointer()}
	require.Error(t, run("t2", `{"n": -1}`))
	require.Equal(t, [][]any{{-1, 0}}, cp.saves)
	require.Equal(t, 2, count("t2"))

	// Durability sync saves each checkpoint as it comes.
	cp = &batchingCheckpointer{MemoryCheckpointer: graph.NewMemoryCheckpointer()}
	require.NoError(t, c.Run(t.Context(), &graphserver.GraphRun{ThreadID: "t3", Input: json.RawMessage(`{"n": 1}`),
		Checkpointer: cp, Durability: "sync"}, nil))
	require.Equal(t, [][]any{{-1}, {0}, {1}}, cp.saves)
}
