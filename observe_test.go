package graphserver_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/graphtest"
	"github.com/graphserver/graphserver/sqlite"
)

// eventRecorder is an Observer keeping every event.
type eventRecorder struct {
	mu  sync.Mutex
	evs []graphserver.Event
}

func (r *eventRecorder) Observe(ev graphserver.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
}

// runEvents returns the RunEvents of run id so far.
func (r *eventRecorder) runEvents(id string) []graphserver.RunEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []graphserver.RunEvent
	for _, ev := range r.evs {
		if re, ok := ev.(graphserver.RunEvent); ok && re.RunID == id {
			out = append(out, re)
		}
	}
	return out
}

// statuses returns the statuses of evs.
func statuses(evs []graphserver.RunEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Status
	}
	return out
}

// of returns the events of type T so far.
func of[T graphserver.Event](r *eventRecorder) []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []T
	for _, ev := range r.evs {
		if e, ok := ev.(T); ok {
			out = append(out, e)
		}
	}
	return out
}

// senderFunc is a graphserver.WebhookSender.
type senderFunc func(ctx context.Context, url string, body []byte, headers map[string]string) (int, error)

func (f senderFunc) Send(ctx context.Context, url string, body []byte, headers map[string]string) (int, error) {
	return f(ctx, url, body, headers)
}

func TestServer_Observer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	type bundle struct {
		srv   *graphserver.Server
		rec   *eventRecorder
		block *graphtest.Blocking
		sends chan int // the status each webhook attempt answers
	}
	setup := func(t *testing.T) *bundle {
		t.Helper()
		db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, db.Close()) })
		b := &bundle{rec: &eventRecorder{}, block: graphtest.NewBlocking(), sends: make(chan int, 8)}
		b.srv, err = graphserver.New(graphserver.Options{
			Storage: db,
			Graphs:  map[string]graphserver.Graph{"echo": graphtest.Echo{}, "fail": graphtest.Fail{}, "block": b.block},
			Webhooks: graphserver.WebhookOptions{
				Sender: senderFunc(func(ctx context.Context, url string, body []byte, headers map[string]string) (int, error) {
					return <-b.sends, nil
				}),
				Policy:  graphserver.WebhookPolicy{AllowPrivate: true},
				Backoff: time.Millisecond,
			},
		})
		require.NoError(t, err)
		b.srv.AddObserver(b.rec)
		require.NoError(t, b.srv.Start(ctx))
		t.Cleanup(func() {
			b.block.Release()
			require.NoError(t, b.srv.Close(context.WithoutCancel(ctx)))
		})
		return b
	}
	newThread := func(t *testing.T, b *bundle) string {
		t.Helper()
		th, err := b.srv.CreateThread(ctx, graphserver.ThreadCreate{})
		require.NoError(t, err)
		return th.ThreadID
	}

	t.Run("RunLifecycle", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		tid := newThread(t, b)
		st, err := b.srv.StreamRun(ctx, tid, graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{"x":1}`)})
		require.NoError(t, err)
		_, err = st.Wait(ctx)
		require.NoError(t, err)
		evs := b.rec.runEvents(st.Run.RunID)
		require.Equal(t, []string{graphserver.RunPending, graphserver.RunRunning, graphserver.RunSuccess}, statuses(evs))
		for _, ev := range evs {
			require.Equal(t, tid, ev.ThreadID)
			require.Equal(t, st.Run.AssistantID, ev.AssistantID)
			require.False(t, ev.Released)
			require.NoError(t, ev.Err)
		}
		require.Equal(t, 1, evs[1].Attempt)
		require.GreaterOrEqual(t, evs[1].Wait, time.Duration(0))
		require.Equal(t, 1, evs[2].Attempt)
		require.Positive(t, evs[2].Duration)

		st, err = b.srv.StreamRun(ctx, tid, graphserver.RunCreate{AssistantID: "fail"})
		require.NoError(t, err)
		_, err = st.Wait(ctx)
		require.NoError(t, err)
		evs = b.rec.runEvents(st.Run.RunID)
		require.Equal(t, []string{graphserver.RunPending, graphserver.RunRunning, graphserver.RunError}, statuses(evs))
		require.ErrorContains(t, evs[2].Err, "boom")

		// The storage reports its grouped writes to the same observer.
		writes := of[graphserver.StorageWriteEvent](b.rec)
		require.NotEmpty(t, writes)
		require.Positive(t, writes[0].Size)
	})

	t.Run("CancelAndStats", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		tid := newThread(t, b)
		st, err := b.srv.StreamRun(ctx, tid, graphserver.RunCreate{AssistantID: "block"})
		require.NoError(t, err)
		<-b.block.Started

		// A delayed run on another thread waits in the queue.
		delayed, err := b.srv.CreateRun(ctx, newThread(t, b), graphserver.RunCreate{AssistantID: "echo", AfterSeconds: 3600})
		require.NoError(t, err)

		// Follow the blocked run: one subscriber while the stream is read.
		events := make(chan graphserver.StreamEvent, 16)
		followed := make(chan error, 1)
		go func() {
			for ev, err := range st.Events(ctx) {
				if err != nil {
					followed <- err
					return
				}
				events <- ev
			}
			followed <- nil
		}()
		<-events // metadata
		stats, err := b.srv.Stats(ctx)
		require.NoError(t, err)
		require.True(t, stats.QueueCounted)
		require.Equal(t, graphserver.RunQueueCount{Delayed: 1, Running: 1}, stats.Queue)
		require.Equal(t, 1, stats.RunsExecuting)
		require.Equal(t, 1, stats.Subscribers)
		require.GreaterOrEqual(t, stats.EventLogs, 1)

		require.NoError(t, b.srv.CancelRun(ctx, tid, st.Run.RunID, graphserver.CancelInterrupt))
		require.NoError(t, <-followed)
		require.Eventually(t, func() bool {
			evs := b.rec.runEvents(st.Run.RunID)
			return len(evs) == 3 && evs[2].Status == graphserver.RunInterrupted
		}, 10*time.Second, time.Millisecond)

		require.NoError(t, b.srv.CancelRun(ctx, delayed.ThreadID, delayed.RunID, graphserver.CancelInterrupt))
		evs := b.rec.runEvents(delayed.RunID)
		require.Equal(t, []string{graphserver.RunPending, graphserver.RunInterrupted}, statuses(evs))
		require.Equal(t, "cancelled", evs[1].Reason)

		stats, err = b.srv.Stats(ctx)
		require.NoError(t, err)
		require.Equal(t, graphserver.RunQueueCount{}, stats.Queue)
		require.Equal(t, 0, stats.RunsExecuting)
		require.Equal(t, 0, stats.Subscribers)
	})

	t.Run("ReleasedAtClose", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		tid := newThread(t, b)
		run, err := b.srv.CreateRun(ctx, tid, graphserver.RunCreate{AssistantID: "block"})
		require.NoError(t, err)
		<-b.block.Started
		closeCtx, cancel := context.WithCancel(ctx)
		cancel() // no grace: hand the run back at once
		require.ErrorIs(t, b.srv.Close(closeCtx), context.Canceled)
		evs := b.rec.runEvents(run.RunID)
		require.Equal(t, []string{graphserver.RunPending, graphserver.RunRunning, graphserver.RunPending}, statuses(evs))
		require.True(t, evs[2].Released)
		require.Equal(t, "server closing", evs[2].Reason)
		require.Equal(t, 1, evs[2].Attempt)
	})

	t.Run("Webhooks", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.sends <- 503
		b.sends <- 200
		b.sends <- 400
		tid := newThread(t, b)
		for range 2 {
			_, err := b.srv.WaitRun(ctx, tid, graphserver.RunCreate{AssistantID: "echo", Webhook: "http://127.0.0.1:9/hook"})
			require.NoError(t, err)
		}
		require.Eventually(t, func() bool { return len(of[graphserver.WebhookEvent](b.rec)) == 3 }, 10*time.Second, time.Millisecond)
		hooks := of[graphserver.WebhookEvent](b.rec)
		outcomes := map[string]int{}
		for _, h := range hooks {
			outcomes[h.Outcome]++
			require.Equal(t, "http://127.0.0.1:9/hook", h.URL)
			require.NotEmpty(t, h.RunID)
		}
		require.Equal(t, map[string]int{graphserver.WebhookRetry: 1, graphserver.WebhookDelivered: 1, graphserver.WebhookFailed: 1}, outcomes)
		for _, h := range hooks {
			switch h.Outcome {
			case graphserver.WebhookRetry:
				require.Equal(t, 503, h.StatusCode)
				require.Equal(t, "status 503", h.Err)
			case graphserver.WebhookDelivered:
				require.Equal(t, 200, h.StatusCode)
				require.Empty(t, h.Err)
			case graphserver.WebhookFailed:
				require.Equal(t, 400, h.StatusCode)
			}
		}
	})
}
