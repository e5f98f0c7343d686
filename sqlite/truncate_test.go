package sqlite_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
)

func TestTruncate(t *testing.T) {
	t.Parallel()

	type bundle struct {
		db graphserver.Storage
	}
	setup := func(t *testing.T) bundle {
		t.Helper()
		db := openDB(t)
		ctx := t.Context()
		for _, a := range []*graphserver.Assistant{
			{AssistantID: "sys", GraphID: "g", Metadata: graphserver.Metadata{"created_by": "system"}},
			{AssistantID: "user", GraphID: "g"},
		} {
			_, err := db.CreateAssistant(ctx, a, "", nil)
			require.NoError(t, err)
		}
		_, err := db.CreateThread(ctx, &graphserver.Thread{ThreadID: "t1"}, "", nil)
		require.NoError(t, err)
		require.NoError(t, db.PutCheckpoint(ctx, &graphserver.CheckpointRecord{
			ThreadID: "t1", CheckpointID: "c1", ChannelVersions: map[string]string{"m": "1"},
			NewBlobs: []graphserver.ChannelBlob{{Channel: "m", Version: "1", Data: json.RawMessage(`["a"]`)}},
		}))
		require.NoError(t, db.PutItem(ctx, &graphserver.ItemWrite{
			Namespace: []string{"ns"}, Key: "k", Value: graphserver.Object{"text": "hello"}, Now: time.Now(),
			Index: []graphserver.ItemIndexEntry{{Path: "$", Text: "hello"}},
		}))
		return bundle{db: db}
	}
	counts := func(t *testing.T, b bundle) (assistants, threads, items int, checkpoint bool) {
		t.Helper()
		ctx := t.Context()
		var err error
		assistants, err = b.db.CountAssistants(ctx, &graphserver.AssistantSearch{})
		require.NoError(t, err)
		threads, err = b.db.CountThreads(ctx, &graphserver.ThreadSearch{})
		require.NoError(t, err)
		found, err := b.db.SearchItems(ctx, &graphserver.ItemQuery{Limit: 10, Now: time.Now()})
		require.NoError(t, err)
		items = len(found)
		if threads > 0 {
			_, err = b.db.GetCheckpoint(ctx, "t1", "", "")
			checkpoint = err == nil
		}
		return assistants, threads, items, checkpoint
	}

	t.Run("NothingFlagged", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.NoError(t, b.db.Truncate(t.Context(), graphserver.TruncateOptions{}))
		a, th, it, cp := counts(t, b)
		require.Equal(t, []any{2, 1, 1, true}, []any{a, th, it, cp})
	})

	t.Run("Each", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		require.NoError(t, b.db.Truncate(ctx, graphserver.TruncateOptions{Checkpoints: true}))
		a, th, it, cp := counts(t, b)
		require.Equal(t, []any{2, 1, 1, false}, []any{a, th, it, cp}, "checkpoints go, the thread stays")

		byText := &graphserver.ItemQuery{NamespacePrefix: []string{"ns"}, Query: "hello", Limit: 10, Now: time.Now()}
		found, err := b.db.SearchItems(ctx, byText)
		require.NoError(t, err)
		require.Len(t, found, 1)
		require.NoError(t, b.db.Truncate(ctx, graphserver.TruncateOptions{Assistants: true, Store: true}))
		a, th, it, _ = counts(t, b)
		require.Equal(t, []any{1, 1, 0}, []any{a, th, it})
		sys, err := b.db.GetAssistant(ctx, "sys", nil)
		require.NoError(t, err)
		require.Equal(t, "system", sys.Metadata["created_by"])

		found, err = b.db.SearchItems(ctx, byText)
		require.NoError(t, err)
		require.Empty(t, found, "full-text rows go with the items")

		require.NoError(t, b.db.Truncate(ctx, graphserver.TruncateOptions{Threads: true, Runs: true}))
		a, th, _, _ = counts(t, b)
		require.Equal(t, []any{1, 0}, []any{a, th})
	})
}
