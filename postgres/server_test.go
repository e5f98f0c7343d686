package postgres_test

import (
	"context"
	"encoding/json"
	"iter"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/internal/graphtest"
	"github.com/graphserver/graphserver/postgres"
)

// cluster is n Servers on one database, as n processes would run them,
// each with its own pool and listener.
type cluster struct {
	ctx   context.Context
	srvs  []*graphserver.Server
	dbs   []*postgres.DB
	block *graphtest.Blocking
}

// counterGraph is a one-channel engine graph ("count", last value) whose
// node "inc" adds one: its state can be updated (UpdateThreadState).
func counterGraph(t *testing.T) graphserver.Graph {
	t.Helper()
	g := graph.New(graph.Channels{"count": graph.LastValue()})
	g.AddNode("inc", func(ctx context.Context, s graph.State) (any, error) {
		n, _ := s["count"].(float64)
		return graph.Update{"count": n + 1}, nil
	})
	g.AddEdge(graph.Start, "inc")
	c, err := g.Compile(graph.CompileOptions{Name: "counter"})
	require.NoError(t, err)
	return c
}

// newCluster starts n servers on one fresh schema hosting a Blocking graph
// "block". Polling is slowed to an hour and leases last lease, so that what
// crosses processes faster than that travels by notification.
func newCluster(t *testing.T, n int, lease time.Duration) *cluster {
	t.Helper()
	return newClusterIdle(t, n, lease, 0)
}

// newClusterIdle is newCluster with its first idle servers not started:
// they serve calls but run nothing (no worker, no listener).
func newClusterIdle(t *testing.T, n int, lease time.Duration, idle int) *cluster {
	t.Helper()
	c := &cluster{ctx: t.Context(), dbs: openShared(t, n), block: graphtest.NewBlocking()}
	t.Cleanup(c.block.Release)
	for i, db := range c.dbs {
		srv, err := graphserver.New(graphserver.Options{
			Storage:       db,
			Logger:        slog.New(slog.DiscardHandler),
			Graphs:        map[string]graphserver.Graph{"block": c.block, "counter": counterGraph(t)},
			PollInterval:  time.Hour,
			LeaseDuration: lease,
		})
		require.NoError(t, err)
		c.srvs = append(c.srvs, srv)
		if i < idle {
			continue
		}
		require.NoError(t, srv.Start(c.ctx))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), 10*time.Second)
			defer cancel()
			_ = srv.Close(ctx)
		})
	}
	return c
}

// started waits for the Blocking graph to start a run and returns its id.
func (c *cluster) started(t *testing.T) string {
	t.Helper()
	select {
	case id := <-c.block.Started:
		return id
	case <-time.After(30 * time.Second):
		t.Fatal("no run started")
		return ""
	}
}

// next reads the next event of a stream.
func next(t *testing.T, ch <-chan graphserver.StreamEvent) graphserver.StreamEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		require.True(t, ok, "the stream ended early")
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event")
		return graphserver.StreamEvent{}
	}
}

// collect runs a stream's Events into a channel, closed at its end.
func collect(ctx context.Context, st *graphserver.RunStream) <-chan graphserver.StreamEvent {
	return pump(st.Events(ctx), same)
}

// pump runs the events of a stream into a channel, each as conv makes it;
// the channel is closed when the stream ends or fails.
func pump[E, T any](events iter.Seq2[E, error], conv func(E) T) <-chan T {
	ch := make(chan T, 256)
	go func() {
		defer close(ch)
		for ev, err := range events {
			if err != nil {
				return
			}
			ch <- conv(ev)
		}
	}()
	return ch
}

// same is pump's conv that keeps events as they are.
func same[E any](ev E) E { return ev }

// TestCrossProcess runs one run's life across servers sharing a database:
// created and executed on A, its events streamed live from B (the stored
// log replayed, then new events as A stores them), cancelled from B, and
// joined from B. Polling is off (an hour), so only notifications carry
// these across.
func TestCrossProcess(t *testing.T) {
	t.Parallel()
	requireURL(t)

	t.Run("StreamFromAnotherProcess", func(t *testing.T) {
		t.Parallel()
		c := newCluster(t, 2, time.Hour)
		a, b := c.srvs[0], c.srvs[1]
		th, err := a.CreateThread(c.ctx, graphserver.ThreadCreate{})
		require.NoError(t, err)
		st, err := a.StreamRun(c.ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{"n":1}`),
			StreamMode: graphserver.StreamModes{"values"}})
		require.NoError(t, err)
		runID := c.started(t)
		require.Equal(t, st.Run.RunID, runID)

		joined, err := b.JoinRunStream(c.ctx, th.ThreadID, runID, graphserver.JoinStreamOptions{})
		require.NoError(t, err)
		evs := collect(c.ctx, joined)
		ev := next(t, evs)
		require.Equal(t, "metadata", ev.Event)
		require.Equal(t, "0", ev.ID)
		ev = next(t, evs)
		require.Equal(t, "values", ev.Event)
		require.JSONEq(t, `{"n":1}`, string(ev.Data))
		require.Equal(t, "1", ev.ID)

		// Live: the run is still blocked on A; released, B sees the rest.
		c.block.Release()
		ev = next(t, evs)
		require.Equal(t, "values", ev.Event)
		require.JSONEq(t, `{"done":true}`, string(ev.Data))
		require.Equal(t, "2", ev.ID)
		_, open := <-evs
		require.False(t, open, "the stream ends with the run")

		// A join on B after the end replays the stored log from an id.
		again, err := b.JoinRunStream(c.ctx, th.ThreadID, runID, graphserver.JoinStreamOptions{LastEventID: "0"})
		require.NoError(t, err)
		var ids []string
		for ev, err := range again.Events(c.ctx) {
			require.NoError(t, err)
			ids = append(ids, ev.ID)
		}
		require.Equal(t, []string{"1", "2"}, ids)
	})

	t.Run("CancelFromAnotherProcess", func(t *testing.T) {
		t.Parallel()
		c := newCluster(t, 2, time.Hour)
		a, b := c.srvs[0], c.srvs[1]
		th, err := a.CreateThread(c.ctx, graphserver.ThreadCreate{})
		require.NoError(t, err)
		run, err := a.CreateRun(c.ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{}`)})
		require.NoError(t, err)
		require.Equal(t, run.RunID, c.started(t))

		// The lease is renewed every 20 minutes: only the notification can
		// stop the run on A before the test times out.
		require.NoError(t, b.CancelRun(c.ctx, th.ThreadID, run.RunID, graphserver.CancelInterrupt))
		select {
		case id := <-c.block.Stopped:
			require.Equal(t, run.RunID, id)
		case <-time.After(30 * time.Second):
			t.Fatal("the run was not stopped on the process running it")
		}
		_, err = b.JoinRun(c.ctx, th.ThreadID, run.RunID)
		require.NoError(t, err)
		got, err := b.GetRun(c.ctx, th.ThreadID, run.RunID)
		require.NoError(t, err)
		require.Equal(t, graphserver.RunInterrupted, got.Status)
	})

	t.Run("WakeUpAnotherProcess", func(t *testing.T) {
		t.Parallel()
		// A is not started (no worker, no slot): its run waits in the
		// queue, and B, which polls once an hour, claims it when notified.
		c := newClusterIdle(t, 2, time.Hour, 1)
		a, b := c.srvs[0], c.srvs[1]
		th, err := b.CreateThread(c.ctx, graphserver.ThreadCreate{})
		require.NoError(t, err)
		run, err := a.CreateRun(c.ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{}`)})
		require.NoError(t, err)
		require.Equal(t, graphserver.RunPending, run.Status)
		require.Equal(t, run.RunID, c.started(t), "B claimed the run A created")
	})

	t.Run("WaitOnAnotherProcess", func(t *testing.T) {
		t.Parallel()
		c := newCluster(t, 2, time.Hour)
		a, b := c.srvs[0], c.srvs[1]
		th, err := a.CreateThread(c.ctx, graphserver.ThreadCreate{})
		require.NoError(t, err)
		run, err := a.CreateRun(c.ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{"w":2}`)})
		require.NoError(t, err)
		require.Equal(t, run.RunID, c.started(t))
		out := make(chan json.RawMessage, 1)
		go func() {
			o, err := b.JoinRun(c.ctx, th.ThreadID, run.RunID)
			if err != nil {
				o = json.RawMessage(`"` + err.Error() + `"`)
			}
			out <- o
		}()
		c.block.Release()
		select {
		case o := <-out:
			require.JSONEq(t, `{"done":true}`, string(o))
		case <-time.After(30 * time.Second):
			t.Fatal("the join on B did not return when the run ended on A")
		}
	})

	t.Run("DeadProcessRunRecovered", func(t *testing.T) {
		t.Parallel()
		c := newCluster(t, 2, 2*time.Second)
		a, b := c.srvs[0], c.srvs[1]
		th, err := a.CreateThread(c.ctx, graphserver.ThreadCreate{})
		require.NoError(t, err)
		st, err := a.StreamRun(c.ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{"d":1}`),
			StreamMode: graphserver.StreamModes{"values"}})
		require.NoError(t, err)
		runID := c.started(t)
		require.Equal(t, st.Run.RunID, runID)
		joined, err := b.JoinRunStream(c.ctx, th.ThreadID, runID, graphserver.JoinStreamOptions{})
		require.NoError(t, err)
		evs := collect(c.ctx, joined)
		require.Equal(t, "metadata", next(t, evs).Event)
		require.Equal(t, "values", next(t, evs).Event)

		// A loses its database as a dead process would: its lease lapses
		// and B takes the run over.
		c.dbs[0].Close()
		require.Equal(t, runID, c.started(t), "the run starts again on B")
		ev := next(t, evs)
		require.Equal(t, "metadata", ev.Event)
		require.Equal(t, "2", ev.ID, "ids go on across attempts and processes")
		require.Contains(t, string(ev.Data), `"attempt":2`)
		c.block.Release()
		var last graphserver.StreamEvent
		for ev := range evs {
			last = ev
		}
		require.Equal(t, "values", last.Event)
		require.JSONEq(t, `{"done":true}`, string(last.Data))
		got, err := b.GetRun(c.ctx, th.ThreadID, runID)
		require.NoError(t, err)
		require.Equal(t, graphserver.RunSuccess, got.Status)
	})
}
