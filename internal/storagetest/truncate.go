package storagetest

import (
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// exerciseTruncate: Truncate empties what its options flag, in one call,
// and keeps the assistants that KeepAssistants matches (the Server's system
// assistants: metadata created_by "system").
func exerciseTruncate(t *testing.T, open func(t *testing.T) driver.Storage) {
	setup := func(t *testing.T) driver.Storage {
		t.Helper()
		st := open(t)
		ctx := t.Context()
		createAssistant(t, st, assistantOpts{ID: "sys", Metadata: graphserver.Metadata{"created_by": "system"}})
		createAssistant(t, st, assistantOpts{ID: "user"})
		createAssistant(t, st, assistantOpts{ID: "other", Metadata: graphserver.Metadata{"created_by": "ann"}})
		createThread(t, st, threadOpts{ID: "t1"})
		putCheckpoint(t, st, "t1", checkpointOpts{ID: "c1", Versions: map[string]string{"m": "1"}, Blobs: []driver.ChannelBlob{blob("m", "1", "", `["a"]`)}})
		require.NoError(t, st.PutItem(ctx, &driver.ItemWrite{
			Namespace: []string{"ns"}, Key: "k", Value: graphserver.Object{"text": "hello"}, Now: time.Now(),
			Index: []driver.ItemIndexEntry{{Path: "$", Text: "hello"}},
		}))
		insertRun(t, st, runOpts{ID: "r1", ThreadID: "t1"})
		require.NoError(t, st.EnqueueWebhook(ctx, &driver.WebhookDelivery{ID: "w1", RunID: "r1", URL: "http://127.0.0.1:1/hook",
			Body: json.RawMessage(`{}`), NextAt: at(0)}))
		return st
	}
	type state struct {
		Assistants, Threads, Items, Runs, Webhooks int
		Checkpoint                                 bool
	}
	var claims atomic.Int64 // shared by the parallel subtests: it only grows
	count := func(t *testing.T, st driver.Storage) state {
		t.Helper()
		n := int(claims.Add(1)) // each count claims the outbox after the previous claim's lease
		ctx := t.Context()
		var s state
		var err error
		s.Assistants, err = st.CountAssistants(ctx, &graphserver.AssistantSearch{})
		require.NoError(t, err)
		s.Threads, err = st.CountThreads(ctx, &graphserver.ThreadSearch{})
		require.NoError(t, err)
		found, err := st.SearchItems(ctx, &driver.ItemQuery{Limit: 10, Now: time.Now()})
		require.NoError(t, err)
		s.Items = len(found)
		if s.Threads > 0 {
			_, err = st.GetCheckpoint(ctx, "t1", "", "")
			s.Checkpoint = err == nil
			runs, err := st.ListRuns(ctx, "t1", &graphserver.RunSearch{Limit: 10})
			require.NoError(t, err)
			s.Runs = len(runs)
		}
		hooks, err := st.ClaimWebhooks(ctx, at(10*n), at(10*n+1), 10)
		require.NoError(t, err)
		s.Webhooks = len(hooks)
		return s
	}

	t.Run("NothingFlagged", func(t *testing.T) {
		t.Parallel()
		st := setup(t)
		require.NoError(t, st.Truncate(t.Context(), driver.TruncateOptions{}))
		require.Equal(t, state{Assistants: 3, Threads: 1, Items: 1, Runs: 1, Webhooks: 1, Checkpoint: true}, count(t, st))
	})

	t.Run("Each", func(t *testing.T) {
		t.Parallel()
		st := setup(t)
		ctx := t.Context()
		require.NoError(t, st.Truncate(ctx, driver.TruncateOptions{Checkpoints: true}))
		require.Equal(t, state{Assistants: 3, Threads: 1, Items: 1, Runs: 1, Webhooks: 1}, count(t, st), "checkpoints go, the thread stays")

		byText := &driver.ItemQuery{NamespacePrefix: []string{"ns"}, Query: "hello", Limit: 10, Now: time.Now()}
		found, err := st.SearchItems(ctx, byText)
		require.NoError(t, err)
		require.Len(t, found, 1)
		keep := graphserver.Filter{"created_by": "system"}
		require.NoError(t, st.Truncate(ctx, driver.TruncateOptions{Assistants: true, KeepAssistants: keep, Store: true}))
		require.Equal(t, state{Assistants: 1, Threads: 1, Runs: 1, Webhooks: 1}, count(t, st))
		sys, err := st.GetAssistant(ctx, "sys", nil)
		require.NoError(t, err)
		require.Equal(t, "system", sys.Metadata["created_by"])
		found, err = st.SearchItems(ctx, byText)
		require.NoError(t, err)
		require.Empty(t, found, "full-text rows go with the items")

		require.NoError(t, st.Truncate(ctx, driver.TruncateOptions{Runs: true}))
		require.Equal(t, state{Assistants: 1, Threads: 1}, count(t, st), "runs and the webhook outbox go, the thread stays")

		require.NoError(t, st.Truncate(ctx, driver.TruncateOptions{Threads: true}))
		require.Equal(t, state{Assistants: 1}, count(t, st))
	})

	t.Run("AssistantsKeptByFilter", func(t *testing.T) {
		t.Parallel()
		st := setup(t)
		ctx := t.Context()
		err := st.Truncate(ctx, driver.TruncateOptions{Assistants: true, KeepAssistants: graphserver.Filter{"created_by": graphserver.Object{"$gt": 1}}})
		requireCode(t, err, graphserver.EINVALID)
		require.Equal(t, 3, count(t, st).Assistants, "a filter the driver refuses deletes nothing")
		require.NoError(t, st.Truncate(ctx, driver.TruncateOptions{Assistants: true, KeepAssistants: graphserver.Filter{"created_by": graphserver.Object{"$eq": "ann"}}}))
		_, err = st.GetAssistant(ctx, "other", nil)
		require.NoError(t, err)
		require.Equal(t, 1, count(t, st).Assistants, "assistants without the key or with another value go")
		require.NoError(t, st.Truncate(ctx, driver.TruncateOptions{Assistants: true}))
		require.Zero(t, count(t, st).Assistants, "nil KeepAssistants keeps none")
	})

	t.Run("ThreadsTakeTheirRuns", func(t *testing.T) {
		t.Parallel()
		st := setup(t)
		require.NoError(t, st.Truncate(t.Context(), driver.TruncateOptions{Threads: true}))
		_, err := st.GetRun(t.Context(), "", "r1", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
	})
}
