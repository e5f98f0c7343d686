package postgres_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
)

// item is an event of a stream without its id: thread stream ids are the
// serving process's, run stream ids the run log's.
type item struct{ Event, Data string }

// threadItems runs a thread stream's Events into a channel.
func threadItems(ctx context.Context, st *graphserver.ThreadStream) <-chan item {
	return pump(st.Events(ctx), func(ev graphserver.StreamEvent) item { return item{ev.Event, string(ev.Data)} })
}

// v2Items runs a protocol-v2 subscription into a channel, each event as
// "<method> <data>".
func v2Items(ctx context.Context, st *graphserver.ThreadEventStream) <-chan string {
	return pump(st.Events(ctx), func(ev graphserver.ThreadEvent) string { return ev.Method + " " + string(ev.Data) })
}

// readUntil reads from ch until an item holds, failing after a while.
func readUntil[T any](t *testing.T, ch <-chan T, last func(T) bool) []T {
	t.Helper()
	var out []T
	for {
		select {
		case v, ok := <-ch:
			require.True(t, ok, "the stream ended early after %v", out)
			out = append(out, v)
			if last(v) {
				return out
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("stream stalled after %v", out)
		}
	}
}

// TestThreadStreamAcrossProcesses follows a thread on B (GET
// /threads/{id}/stream and protocol v2) while its runs execute on A:
// B's streams carry each run's events, read from its stored log, as many
// and in the order a replay of the run's log has them, then its run_done
// marker; a stream opened on B mid-run replays the run from its start.
// Polling is off: only notifications carry the events across.
func TestThreadStreamAcrossProcesses(t *testing.T) {
	t.Parallel()
	requireURL(t)
	c := newCluster(t, 2, time.Hour)
	a, b := c.srvs[0], c.srvs[1]
	ctx := c.ctx
	th, err := a.CreateThread(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)

	before, err := b.JoinThreadStream(ctx, th.ThreadID, graphserver.ThreadStreamOptions{})
	require.NoError(t, err)
	live := threadItems(ctx, before)
	sub, err := b.SubscribeThreadEvents(ctx, th.ThreadID, graphserver.ThreadEventsRequest{Channels: []string{graphserver.ChannelValues, graphserver.ChannelLifecycle}})
	require.NoError(t, err)
	v2 := v2Items(ctx, sub)

	run, err := a.CreateRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{"n":1}`),
		StreamMode: graphserver.StreamModes{"values"}, StreamResumable: true})
	require.NoError(t, err)
	require.Equal(t, run.RunID, c.started(t))
	isValues := func(it item) bool { return it.Event == "values" }
	require.Equal(t, []item{
		{"metadata", `{"attempt":1,"run_id":"` + run.RunID + `"}`},
		{"values", `{"n":1}`},
	}, readUntil(t, live, isValues), "B sees the run start on A live")

	// Opened on B mid-run, "-": the run from its start, from the stored log.
	mid, err := b.JoinThreadStream(ctx, th.ThreadID, graphserver.ThreadStreamOptions{LastEventID: "-"})
	require.NoError(t, err)
	replay := threadItems(ctx, mid)
	require.Len(t, readUntil(t, replay, isValues), 2)

	c.block.Release()
	isDone := func(it item) bool { return it.Event == "metadata" && strings.Contains(it.Data, `"status":"run_done"`) }
	rest := readUntil(t, live, isDone)
	require.Equal(t, rest, readUntil(t, replay, isDone))

	// The same events as the run's stored log, then run_done.
	joined, err := b.JoinRunStream(ctx, th.ThreadID, run.RunID, graphserver.JoinStreamOptions{LastEventID: "-1"})
	require.NoError(t, err)
	var stored []item
	for ev, err := range joined.Events(ctx) {
		require.NoError(t, err)
		stored = append(stored, item{ev.Event, string(ev.Data)})
	}
	want := append(stored[2:], item{"metadata", `{"run_id":"` + run.RunID + `","status":"run_done"}`})
	require.Equal(t, want, rest)

	got := readUntil(t, v2, func(s string) bool { return strings.HasPrefix(s, `lifecycle {"event":"completed"`) })
	require.Equal(t, []string{
		`lifecycle {"event":"running","run_id":"` + run.RunID + `"}`,
		`values {"n":1}`,
		`values {"done":true}`,
		`lifecycle {"event":"completed","run_id":"` + run.RunID + `"}`,
	}, got, "protocol v2 on B derives the same events from A's run")

	// A second run on the thread: B's streams go on, nothing repeated.
	run2, err := a.CreateRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{"n":2}`),
		StreamMode: graphserver.StreamModes{"values"}})
	require.NoError(t, err)
	second := readUntil(t, live, isDone)
	require.Equal(t, item{"metadata", `{"attempt":1,"run_id":"` + run2.RunID + `"}`}, second[0])
	require.Equal(t, item{"metadata", `{"run_id":"` + run2.RunID + `","status":"run_done"}`}, second[len(second)-1])
	require.Equal(t, second, readUntil(t, replay, isDone))
}
