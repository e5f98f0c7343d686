package storagetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// exerciseConcurrency checks that many goroutines writing and reading at
// once all succeed: the driver must queue writers, never fail them with a
// busy/locked error.
func exerciseConcurrency(t *testing.T, open func(t *testing.T) driver.Storage) {
	t.Helper()
	st := open(t)
	ctx := t.Context()
	createAssistant(t, st, assistantOpts{ID: "shared"})

	const workers, steps = 16, 8
	errs := make(chan error, workers*steps*8)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			id := fmt.Sprintf("t%02d", w)
			th := &graphserver.Thread{ThreadID: id, Status: graphserver.ThreadIdle, CreatedAt: at(w), UpdatedAt: at(w), StateUpdatedAt: at(w)}
			if _, err := st.CreateThread(ctx, th, graphserver.IfExistsRaise, nil); err != nil {
				errs <- fmt.Errorf("create %s: %w", id, err)
				return
			}
			for s := range steps {
				cid := fmt.Sprintf("c%02d", s)
				cp := &driver.CheckpointRecord{
					ThreadID: id, CheckpointID: cid, CreatedAt: at(s),
					ChannelVersions: map[string]string{"n": fmt.Sprint(s)},
					NewBlobs:        []driver.ChannelBlob{blob("n", fmt.Sprint(s), "", fmt.Sprint(s))},
				}
				if s > 0 {
					cp.ParentCheckpointID = fmt.Sprintf("c%02d", s-1)
				}
				if err := st.PutCheckpoint(ctx, cp); err != nil {
					errs <- fmt.Errorf("put checkpoint %s/%s: %w", id, cid, err)
				}
				if err := st.PutWrites(ctx, id, "", cid, "task", []driver.PendingWrite{{Channel: "n", Value: json.RawMessage(`1`)}}); err != nil {
					errs <- fmt.Errorf("put writes: %w", err)
				}
				sum := &driver.ThreadSummary{Values: json.RawMessage(fmt.Sprintf(`{"n":%d}`, s))}
				if err := st.WithTx(ctx, func(ctx context.Context, tx driver.Tx) error {
					return tx.UpdateThread(ctx, id, &driver.ThreadWrite{Now: at(100 + s), Status: graphserver.ThreadIdle, Summary: sum})
				}); err != nil {
					errs <- fmt.Errorf("summary: %w", err)
				}
				if _, err := st.UpdateAssistant(ctx, "shared", &graphserver.AssistantPatch{Metadata: graphserver.Metadata{id: float64(s)}}, at(s), nil); err != nil {
					errs <- fmt.Errorf("update assistant: %w", err)
				}
				if _, err := st.GetCheckpoint(ctx, id, "", ""); err != nil {
					errs <- fmt.Errorf("get checkpoint: %w", err)
				}
				if _, err := st.SearchThreads(ctx, &graphserver.ThreadSearch{Limit: 5}); err != nil {
					errs <- fmt.Errorf("search: %w", err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	n, err := st.CountThreads(ctx, &graphserver.ThreadSearch{})
	require.NoError(t, err)
	require.Equal(t, workers, n)
	a, err := st.GetAssistant(ctx, "shared", nil)
	require.NoError(t, err)
	require.Equal(t, 1+workers*steps, a.Version, "every update got its own version")
	require.Len(t, a.Metadata, workers)
	for w := range workers {
		id := fmt.Sprintf("t%02d", w)
		list, err := st.ListCheckpoints(ctx, id, driver.CheckpointListOptions{})
		require.NoError(t, err)
		require.Len(t, list, steps)
		requireValues(t, map[string]string{"n": fmt.Sprint(steps - 1)}, list[0].Values)
		th, err := st.GetThread(ctx, id, nil)
		require.NoError(t, err)
		require.JSONEq(t, fmt.Sprintf(`{"n":%d}`, steps-1), string(th.Values))
	}
}
