package graph_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/graph"
	"github.com/stretchr/testify/require"
)

// blobRecorder records the blobs the engine writes.
type blobRecorder struct {
	*graph.MemoryCheckpointer
	mu    sync.Mutex
	blobs []driver.ChannelBlob
}

func (b *blobRecorder) PutCheckpoint(ctx context.Context, cp *driver.CheckpointRecord) error {
	b.mu.Lock()
	b.blobs = append(b.blobs, cp.NewBlobs...)
	b.mu.Unlock()
	return b.MemoryCheckpointer.PutCheckpoint(ctx, cp)
}

func TestDeltaBlobs(t *testing.T) {
	t.Parallel()
	rec := &blobRecorder{MemoryCheckpointer: graph.NewMemoryCheckpointer()}
	g := chatGraph(t)
	run := func(in string) {
		require.NoError(t, g.Run(context.Background(), &graphserver.GraphRun{ThreadID: "c", Input: json.RawMessage(in), Checkpointer: rec, Durability: "sync"}, nil))
	}
	for range 3 {
		run(`{"messages": ["hi"]}`)
	}
	// first write of messages is full; later ones are one-element deltas
	require.Empty(t, rec.blobs[0].Base)
	for _, b := range rec.blobs[1:] {
		require.NotEmpty(t, b.Base)
		var l []any
		require.NoError(t, json.Unmarshal(b.Data, &l))
		require.Len(t, l, 1)
	}
	// replacing a message by id writes a full blob
	st, err := g.State(context.Background(), &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: "c"}, Checkpointer: rec})
	require.NoError(t, err)
	first := st.Values.(map[string]any)["messages"].([]any)[0].(map[string]any)
	edit, _ := json.Marshal(map[string]any{"messages": []any{map[string]any{"type": "human", "content": "edited", "id": first["id"]}}})
	_, err = g.UpdateState(context.Background(), &graphserver.UpdateStateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: "c"}, Values: edit, AsNode: "bot", Checkpointer: rec})
	require.NoError(t, err)
	last := rec.blobs[len(rec.blobs)-1]
	require.Empty(t, last.Base)
	st, err = g.State(context.Background(), &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: "c"}, Checkpointer: rec})
	require.NoError(t, err)
	require.Equal(t, "edited", contents(st, "messages")[0])
	require.Len(t, contents(st, "messages"), 6)

	// many appends: reads stay correct across snapshots
	for range 80 {
		run(`{"messages": ["more"]}`)
	}
	st, err = g.State(context.Background(), &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: "c"}, Checkpointer: rec})
	require.NoError(t, err)
	require.Len(t, contents(st, "messages"), 166)
	full := 0
	for _, b := range rec.blobs {
		if b.Base == "" {
			full++
		}
	}
	require.Less(t, full, 6, "snapshots are rare")
}
