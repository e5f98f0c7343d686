package graphserver_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/sqlite"
)

// hookedStorage calls hook (once) after reading a thread: a run created
// then lands between a state update's check of its thread and its write.
type hookedStorage struct {
	driver.Storage
	hook atomic.Pointer[func()]
}

func (h *hookedStorage) GetThread(ctx context.Context, id string, filter graphserver.Filter) (*graphserver.Thread, error) {
	th, err := h.Storage.GetThread(ctx, id, filter)
	if f := h.hook.Swap(nil); f != nil {
		(*f)()
	}
	return th, err
}

// A state update whose thread gets a run between the update's check of
// the thread and its write is refused (EBUSY): it is not written under the
// run, which started from the state before it and would overwrite it.
func TestStateUpdateRacingRunCreation(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	gate := make(chan struct{})
	g := graph.New(graph.Channels{"count": graph.LastValue()})
	g.AddNode("inc", func(ctx context.Context, s graph.State) (any, error) {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		n, _ := s["count"].(float64)
		return graph.Update{"count": n + 1}, nil
	})
	g.AddEdge(graph.Start, "inc")
	c, err := g.Compile(graph.CompileOptions{Name: "gated"})
	require.NoError(t, err)
	st := &hookedStorage{Storage: db}
	srv, err := graphserver.New(graphserver.Options{Storage: st, Graphs: map[string]graphserver.Graph{"gated": c}})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		require.NoError(t, srv.Close(c))
	})
	th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{Metadata: graphserver.Metadata{"graph_id": "gated"}})
	require.NoError(t, err)
	_, err = srv.UpdateThreadState(ctx, th.ThreadID, graphserver.ThreadStateUpdate{Values: json.RawMessage(`{"count": 1}`), AsNode: "inc"})
	require.NoError(t, err)

	var run *graphserver.Run
	hook := func() {
		var err error
		run, err = srv.CreateRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "gated", Input: json.RawMessage(`{}`)})
		require.NoError(t, err)
	}
	st.hook.Store(&hook)
	_, err = srv.UpdateThreadState(ctx, th.ThreadID, graphserver.ThreadStateUpdate{Values: json.RawMessage(`{"count": 10}`), AsNode: "inc"})
	requireCode(t, err, graphserver.EBUSY)
	require.NotNil(t, run)
	close(gate)
	out, err := srv.JoinRun(ctx, th.ThreadID, run.RunID)
	require.NoError(t, err)
	require.JSONEq(t, `{"count": 2}`, string(out))
	state, err := srv.GetThreadState(ctx, th.ThreadID, graphserver.ThreadStateQuery{})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"count": float64(2)}, state.Values)

	// Once the thread is idle, the update goes through.
	_, err = srv.UpdateThreadState(ctx, th.ThreadID, graphserver.ThreadStateUpdate{Values: json.RawMessage(`{"count": 10}`), AsNode: "inc"})
	require.NoError(t, err)
}
