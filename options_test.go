package graphserver_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/internal/graphtest"
	"github.com/graphserver/graphserver/sqlite"
)

func openDB(t testing.TB) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// TestNewValidatesOptions: every option is defaulted and validated in New,
// which names the bad field; nothing is left for a background goroutine to
// trip over after Start (a negative StoreSweepInterval used to panic the
// sweeper's ticker).
func TestNewValidatesOptions(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	for _, tc := range []struct {
		name  string
		tweak func(o *graphserver.Options)
		field string
	}{
		{"NoStorage", func(o *graphserver.Options) { o.Storage = nil }, "Storage"},
		{"EmptyGraphID", func(o *graphserver.Options) { o.Graphs = map[string]graphserver.Graph{"": graphtest.Echo{}} }, "Graphs"},
		{"NilGraph", func(o *graphserver.Options) { o.Graphs = map[string]graphserver.Graph{"x": nil} }, "Graphs"},
		{"StoreSweepInterval", func(o *graphserver.Options) { o.StoreSweepInterval = -time.Second }, "StoreSweepInterval"},
		{"StoreDefaultTTL", func(o *graphserver.Options) { o.StoreDefaultTTL = -time.Second }, "StoreDefaultTTL"},
		{"StoreDefaultTTLHuge", func(o *graphserver.Options) { o.StoreDefaultTTL = 200 * 365 * 24 * time.Hour }, "StoreDefaultTTL"},
		{"LeaseDuration", func(o *graphserver.Options) { o.LeaseDuration = -1 }, "LeaseDuration"},
		{"MaxRunTime", func(o *graphserver.Options) { o.MaxRunTime = -1 }, "MaxRunTime"},
		{"ResumableStreamTTL", func(o *graphserver.Options) { o.ResumableStreamTTL = -1 }, "ResumableStreamTTL"},
		{"PollInterval", func(o *graphserver.Options) { o.PollInterval = -1 }, "PollInterval"},
		{"Workers", func(o *graphserver.Options) { o.Workers = -1 }, "Workers"},
		{"MaxAttempts", func(o *graphserver.Options) { o.MaxAttempts = -2 }, "MaxAttempts"},
		{"DefaultMultitaskStrategy", func(o *graphserver.Options) { o.DefaultMultitaskStrategy = "queue" }, "DefaultMultitaskStrategy"},
		{"WebhookAttempts", func(o *graphserver.Options) { o.Webhooks.MaxAttempts = -1 }, "Webhooks.MaxAttempts"},
		{"WebhookBackoff", func(o *graphserver.Options) { o.Webhooks.Backoff = -1 }, "Webhooks.Backoff"},
		{"WebhookURLLength", func(o *graphserver.Options) { o.Webhooks.Policy.MaxURLLength = -1 }, "Webhooks.Policy.MaxURLLength"},
		{"WebhookHeader", func(o *graphserver.Options) { o.Webhooks.SignatureHeader = "X Sig\n" }, "Webhooks.SignatureHeader"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := graphserver.Options{Storage: db}
			tc.tweak(&opts)
			srv, err := graphserver.New(opts)
			require.Nil(t, srv)
			requireCode(t, err, graphserver.EINVALID)
			require.Contains(t, graphserver.ErrorMessage(err), "Options."+tc.field)
		})
	}
	t.Run("ZeroWorks", func(t *testing.T) {
		t.Parallel()
		srv, err := graphserver.New(graphserver.Options{Storage: db, OptimizeInterval: -1})
		require.NoError(t, err)
		require.NoError(t, srv.Close(t.Context()))
	})
}

// panickyDB panics in the first store sweep and the first run sweep loop round.
type panickyDB struct {
	*sqlite.DB
	itemSweeps, runSweeps atomic.Int32
}

func (d *panickyDB) DeleteExpiredItems(ctx context.Context, now time.Time) (int, error) {
	if d.itemSweeps.Add(1) == 1 {
		panic("item sweep exploded")
	}
	return d.DB.DeleteExpiredItems(ctx, now)
}

// RecoverRuns is called by Start, then by the run sweep's loop every round:
// it panics in the loop's first round.
func (d *panickyDB) RecoverRuns(ctx context.Context, sweep func(ctx context.Context, tx driver.Tx, runs []driver.RunRef) error) error {
	if d.runSweeps.Add(1) == 2 {
		panic("run sweep exploded")
	}
	return d.DB.RecoverRuns(ctx, sweep)
}

// syncBuffer is a bytes.Buffer safe for concurrent writes (a log sink).
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestBackgroundPanicRecovered: a panic in a background loop is logged with
// its stack and the loop runs again; the process and the server go on.
func TestBackgroundPanicRecovered(t *testing.T) {
	t.Parallel()
	db := &panickyDB{DB: openDB(t)}
	var logs syncBuffer
	srv, err := graphserver.New(graphserver.Options{
		Storage:            db,
		Graphs:             map[string]graphserver.Graph{"echo": graphtest.Echo{}},
		StoreSweepInterval: 5 * time.Millisecond,
		LeaseDuration:      20 * time.Millisecond,
		// A 20 ms lease lapses under load (-race, a busy machine): let the
		// run be retried until it finishes rather than fail it.
		MaxAttempts: 1000,
		Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
	})
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, srv.Close(context.WithoutCancel(t.Context()))) })

	require.Eventually(t, func() bool { return db.itemSweeps.Load() >= 2 && db.runSweeps.Load() >= 3 },
		10*time.Second, 5*time.Millisecond, "the loops did not run again after their panic")
	require.Contains(t, logs.String(), "item sweep exploded")
	require.Contains(t, logs.String(), "run sweep exploded")
	require.Contains(t, logs.String(), "goroutine") // the stack

	out, err := srv.WaitRun(t.Context(), "", graphserver.RunCreate{AssistantID: "echo", Input: []byte(`{"ok":1}`)})
	require.NoError(t, err)
	require.JSONEq(t, `{"ok":1}`, string(out))
}

// TestTTLBounded: a TTL beyond MaxTTL (one that used to overflow into the
// past and get its thread swept within a minute) is refused and stores
// nothing.
func TestTTLBounded(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	ctx := t.Context()
	huge := 600 * 365 * 24 * 60.0 // minutes: ~600 years
	_, err := srv.CreateThread(ctx, graphserver.ThreadCreate{TTL: &graphserver.ThreadTTL{Minutes: huge}})
	requireCode(t, err, graphserver.EINVALID)
	n, err := srv.CountThreads(ctx, graphserver.ThreadSearch{})
	require.NoError(t, err)
	require.Zero(t, n)

	th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	_, err = srv.UpdateThread(ctx, th.ThreadID, graphserver.ThreadPatch{TTL: &graphserver.ThreadTTL{Minutes: huge}})
	requireCode(t, err, graphserver.EINVALID)
	got, err := srv.GetThread(ctx, th.ThreadID, graphserver.ThreadIncludeTTL)
	require.NoError(t, err)
	require.Nil(t, got.TTL)

	err = srv.PutItem(ctx, graphserver.ItemPut{Namespace: []string{"a"}, Key: "k", Value: graphserver.Object{}, TTL: &huge})
	requireCode(t, err, graphserver.EINVALID)
	item, err := srv.GetItem(ctx, []string{"a"}, "k", nil)
	require.NoError(t, err)
	require.Nil(t, item)

	ok := graphserver.MaxTTL.Minutes()
	_, err = srv.CreateThread(ctx, graphserver.ThreadCreate{TTL: &graphserver.ThreadTTL{Minutes: ok}})
	require.NoError(t, err)
}
