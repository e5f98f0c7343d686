package postgres_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/postgres"
)

// tripCounter is a pgx tracer counting round trips to the server: each
// statement sent alone, and each batch (its statements go together).
type tripCounter struct {
	mu    sync.Mutex
	trips int
	by    map[string]int // first words of each statement, or "batch of n"
	seq   []string       // the statements in order
}

func (c *tripCounter) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trips++
	c.by[key]++
	c.seq = append(c.seq, key)
}

func (c *tripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if ctx.Value(inBatch{}) == nil {
		c.add(statementKey(d.SQL))
	}
	return ctx
}

func (c *tripCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *tripCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	var keys []string
	for _, q := range d.Batch.QueuedQueries {
		keys = append(keys, statementKey(q.SQL))
	}
	c.add("batch[" + strings.Join(keys, "; ") + "]")
	return context.WithValue(ctx, inBatch{}, true)
}

func (c *tripCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *tripCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

type inBatch struct{}

// statementKey is the first words of a statement, enough to name it.
func statementKey(sql string) string {
	f := strings.Fields(sql)
	return strings.Join(f[:min(len(f), 6)], " ")
}

func (c *tripCounter) reset() (int, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, by := c.trips, c.by
	c.trips, c.by, c.seq = 0, map[string]int{}, nil
	return n, by
}

// TestRoundTripsPerRun counts the round trips to PostgreSQL of a run
// waited for, stateless and on a thread, one node, as the load test's
// wait rows send them (examples/loadtest). The figures go to the README's
// benchmark; the bounds keep them from creeping back up.
func TestRoundTripsPerRun(t *testing.T) {
	t.Parallel()
	requireURL(t)
	_, cfg := openSchema(t, 4)
	counter := &tripCounter{by: map[string]int{}}
	cfg = cfg.Copy()
	cfg.ConnConfig.Tracer = counter
	db, err := postgres.OpenConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	echo := graph.Func("echo", func(_ context.Context, input any) (any, error) { return input, nil })
	srv, err := graphserver.New(graphserver.Options{Storage: db, Logger: slog.New(slog.DiscardHandler),
		Graphs: map[string]graphserver.Graph{"echo": echo}, PollInterval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	})
	th, err := srv.CreateThread(t.Context(), graphserver.ThreadCreate{})
	require.NoError(t, err)
	rc := graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{"x":"hi"}`)}
	const runs = 20
	for _, c := range []struct {
		name     string
		threadID string
		max      int
	}{{"stateless", "", 12}, {"thread", th.ThreadID, 17}} { // 10 and 15 measured, events are stored in 2 or 3 writes
		_, err := srv.WaitRun(t.Context(), c.threadID, rc) // warm up (assistant caches, prepared statements)
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond) // the run's last writes
		counter.reset()
		for range runs {
			out, err := srv.WaitRun(t.Context(), c.threadID, rc)
			require.NoError(t, err)
			require.JSONEq(t, `{"x":"hi"}`, string(out))
		}
		time.Sleep(100 * time.Millisecond)
		counter.mu.Lock()
		last := counter.seq[len(counter.seq)-counter.trips/runs:]
		counter.mu.Unlock()
		t.Logf("%s, one run:\n%s", c.name, strings.Join(last, "\n"))
		n, by := counter.reset()
		keys := slices.SortedFunc(maps.Keys(by), func(a, b string) int { return cmp.Compare(by[b], by[a]) })
		var lines []string
		for _, k := range keys {
			lines = append(lines, fmt.Sprintf("%6.1f  %s", float64(by[k])/runs, k))
		}
		t.Logf("%s: %.1f round trips per run\n%s", c.name, float64(n)/runs, strings.Join(lines, "\n"))
		require.LessOrEqual(t, n/runs, c.max, c.name)
	}
}
