package storagetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/graphserver/graphserver/driver"
	"github.com/stretchr/testify/require"
)

// exerciseWebhooks: the webhook outbox. Deliveries are claimed when due,
// oldest first, at most limit at a time, and held until the claim's lease
// ends; an attempt that failed is due again when UpdateWebhook says, one
// that is done is deleted. Concurrent senders never claim one delivery
// twice. The outbox outlives the run it reports on.
func exerciseWebhooks(t *testing.T, open func(t *testing.T) driver.Storage) {
	delivery := func(id string, next time.Time) *driver.WebhookDelivery {
		return &driver.WebhookDelivery{ID: id, RunID: "r-" + id, URL: "https://example.com/hook/" + id,
			Body: json.RawMessage(fmt.Sprintf(`{"run_id":"r-%s"}`, id)), NextAt: next}
	}
	// ids lists the claimed ids, sorted: the order of a claim is not part
	// of the contract, which deliveries it takes is.
	ids := func(ds []*driver.WebhookDelivery) []string {
		out := []string{}
		for _, d := range ds {
			out = append(out, d.ID)
		}
		slices.Sort(out)
		return out
	}

	t.Run("ClaimDueOldestFirst", func(t *testing.T) {
		t.Parallel()
		st := open(t)
		ctx := t.Context()
		for _, d := range []*driver.WebhookDelivery{delivery("c", at(3)), delivery("a", at(1)), delivery("b", at(2)), delivery("later", at(50))} {
			require.NoError(t, st.EnqueueWebhook(ctx, d))
		}
		ds, err := st.ClaimWebhooks(ctx, at(0), at(10), 10)
		require.NoError(t, err)
		require.Empty(t, ds, "nothing is due yet")

		ds, err = st.ClaimWebhooks(ctx, at(5), at(10), 2)
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b"}, ids(ds), "the oldest due first, at most limit")
		i := slices.IndexFunc(ds, func(d *driver.WebhookDelivery) bool { return d.ID == "a" })
		require.Equal(t, "r-a", ds[i].RunID)
		require.Equal(t, "https://example.com/hook/a", ds[i].URL)
		require.JSONEq(t, `{"run_id":"r-a"}`, string(ds[i].Body))
		require.Zero(t, ds[i].Attempts)

		ds, err = st.ClaimWebhooks(ctx, at(5), at(10), 10)
		require.NoError(t, err)
		require.Equal(t, []string{"c"}, ids(ds), "claimed deliveries are held until their lease ends")

		ds, err = st.ClaimWebhooks(ctx, at(11), at(20), 10)
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b", "c"}, ids(ds), "a lapsed claim (a sender that died) is claimed again")
	})

	t.Run("RetryThenDone", func(t *testing.T) {
		t.Parallel()
		st := open(t)
		ctx := t.Context()
		require.NoError(t, st.EnqueueWebhook(ctx, delivery("d", at(1))))
		ds, err := st.ClaimWebhooks(ctx, at(1), at(100), 10)
		require.NoError(t, err)
		require.Len(t, ds, 1)

		require.NoError(t, st.UpdateWebhook(ctx, "d", 1, false, at(7), "status 503"))
		ds, err = st.ClaimWebhooks(ctx, at(6), at(100), 10)
		require.NoError(t, err)
		require.Empty(t, ds, "due again at the retry time, not before")
		ds, err = st.ClaimWebhooks(ctx, at(7), at(100), 10)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		require.Equal(t, 1, ds[0].Attempts)
		require.JSONEq(t, `{"run_id":"r-d"}`, string(ds[0].Body), "the body is kept across attempts")

		require.NoError(t, st.UpdateWebhook(ctx, "d", 2, true, time.Time{}, ""))
		ds, err = st.ClaimWebhooks(ctx, at(1000), at(1100), 10)
		require.NoError(t, err)
		require.Empty(t, ds, "a delivered webhook is deleted")
		require.NoError(t, st.UpdateWebhook(ctx, "d", 3, true, time.Time{}, ""), "updating a deleted delivery is not an error")
	})

	t.Run("EnqueueKeepsQueuedID", func(t *testing.T) {
		t.Parallel()
		st := open(t)
		ctx := t.Context()
		require.NoError(t, st.EnqueueWebhook(ctx, delivery("d", at(1))))
		again := delivery("d", at(2))
		again.URL = "https://example.com/other"
		require.NoError(t, st.EnqueueWebhook(ctx, again), "ids derive from run ids: a second enqueue is a no-op")
		ds, err := st.ClaimWebhooks(ctx, at(5), at(10), 10)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		require.Equal(t, "https://example.com/hook/d", ds[0].URL)
	})

	t.Run("ConcurrentClaims", func(t *testing.T) {
		t.Parallel()
		st := open(t)
		ctx := t.Context()
		const n, senders = 40, 8
		for i := range n {
			require.NoError(t, st.EnqueueWebhook(ctx, delivery(fmt.Sprintf("d%02d", i), at(1))))
		}
		var (
			mu      sync.Mutex
			claimed []string
			wg      sync.WaitGroup
		)
		errs := make(chan error, senders)
		for range senders {
			wg.Go(func() {
				for {
					ds, err := st.ClaimWebhooks(ctx, at(2), at(100), 3)
					if err != nil {
						errs <- err
						return
					}
					if len(ds) == 0 {
						return
					}
					mu.Lock()
					claimed = append(claimed, ids(ds)...)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		slices.Sort(claimed)
		require.Len(t, claimed, n, "every delivery claimed exactly once")
		require.Equal(t, n, len(slices.Compact(claimed)))
	})

	t.Run("OutlivesItsRun", func(t *testing.T) {
		t.Parallel()
		st := open(t)
		ctx := t.Context()
		createThread(t, st, threadOpts{ID: "t1"})
		insertRun(t, st, runOpts{ID: "r1", ThreadID: "t1"})
		require.NoError(t, withTx(t, ctx, st, func(ctx context.Context, tx driver.Tx) error {
			if err := tx.InsertWebhook(ctx, &driver.WebhookDelivery{ID: "w1", RunID: "r1", URL: "https://example.com/h",
				Body: json.RawMessage(`{}`), NextAt: at(1)}, at(1)); err != nil {
				return err
			}
			return tx.DeleteThread(ctx, "t1") // a stateless run's thread goes when it ends
		}))
		ds, err := st.ClaimWebhooks(ctx, at(2), at(10), 10)
		require.NoError(t, err)
		require.Equal(t, []string{"w1"}, ids(ds))
	})
}

// exercisePing: Ping answers on an open storage and reports a done context.
func exercisePing(t *testing.T, open func(t *testing.T) driver.Storage) {
	st := open(t)
	require.NoError(t, st.Ping(t.Context()))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.Error(t, st.Ping(ctx), "a done context fails the ping")
}
