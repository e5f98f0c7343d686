package postgres_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/httpapi"
)

// threadEvents runs a thread stream's Events, ids included, into a
// channel.
func threadEvents(ctx context.Context, st *graphserver.ThreadStream) <-chan graphserver.StreamEvent {
	return pump(st.Events(ctx), same)
}

// joinThread opens a thread stream on srv and runs it into a channel
// that ends with the test.
func joinThread(t *testing.T, srv *graphserver.Server, threadID string, opts graphserver.ThreadStreamOptions) <-chan graphserver.StreamEvent {
	t.Helper()
	st, err := srv.JoinThreadStream(t.Context(), threadID, opts)
	require.NoError(t, err)
	return threadEvents(t.Context(), st)
}

// readN reads n events from ch.
func readN[T any](t *testing.T, ch <-chan T, n int) []T {
	t.Helper()
	var out []T
	for len(out) < n {
		select {
		case v, ok := <-ch:
			require.True(t, ok, "the stream ended early after %v", out)
			out = append(out, v)
		case <-time.After(30 * time.Second):
			t.Fatalf("stream stalled after %v", out)
		}
	}
	return out
}

// requireQuiet fails when ch yields within a short while.
func requireQuiet[T any](t *testing.T, ch <-chan T) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("unexpected %v", v)
	case <-time.After(300 * time.Millisecond):
	}
}

func isRunDone(ev graphserver.StreamEvent) bool {
	return ev.Event == "metadata" && strings.Contains(string(ev.Data), `"status":"run_done"`)
}

// TestThreadStreamStateUpdatesAcrossProcesses: a state update made on A
// reaches the thread streams of B, replayed and live, as langgraph-api's
// Threads.State.post publishes {"state", "thread_id"} as a state_update
// event on the thread stream — here for the streams of every process,
// from the thread's stored log. Polling is off: the notification carries
// it across.
func TestThreadStreamStateUpdatesAcrossProcesses(t *testing.T) {
	t.Parallel()
	requireURL(t)
	c := newCluster(t, 2, time.Hour)
	a, b := c.srvs[0], c.srvs[1]
	ctx := c.ctx
	th, err := a.CreateThread(ctx, graphserver.ThreadCreate{
		Metadata:   graphserver.Metadata{"graph_id": "counter"},
		Supersteps: []graphserver.Superstep{{Updates: []graphserver.StateUpdate{{Values: json.RawMessage(`{"count":5}`), AsNode: "inc"}}}},
	})
	require.NoError(t, err)

	stateOnly := []string{graphserver.ThreadStreamStateUpdate}
	replay := joinThread(t, b, th.ThreadID, graphserver.ThreadStreamOptions{LastEventID: "-", StreamModes: stateOnly})
	live := joinThread(t, b, th.ThreadID, graphserver.ThreadStreamOptions{StreamModes: stateOnly})
	var su struct {
		State    graphserver.ThreadState `json:"state"`
		ThreadID string                  `json:"thread_id"`
	}
	first := readN(t, replay, 1)[0]
	require.Equal(t, "state_update", first.Event)
	require.NoError(t, json.Unmarshal(first.Data, &su))
	require.Equal(t, th.ThreadID, su.ThreadID)
	require.Equal(t, map[string]any{"count": float64(5)}, su.State.Values, "the supersteps' update made on A, replayed on B")

	_, err = a.UpdateThreadState(ctx, th.ThreadID, graphserver.ThreadStateUpdate{Values: json.RawMessage(`{"count":9}`), AsNode: "inc"})
	require.NoError(t, err)
	got, again := readN(t, live, 1)[0], readN(t, replay, 1)[0]
	require.Equal(t, got, again, "the same event, id included, on both streams")
	require.NoError(t, json.Unmarshal(got.Data, &su))
	require.Equal(t, map[string]any{"count": float64(9)}, su.State.Values)
	requireQuiet(t, live)
}

// TestThreadStreamResumeAcrossProcesses: a thread's stream carries the
// same events under the same ids on every process (runs executed on
// different processes, state updates), so that a client that read a
// stream on one process up to any event and resumes on another with that
// event's id as Last-Event-ID (as the SDKs reconnect) gets exactly the
// rest: none lost, none repeated. Then the same live: a run streamed on A
// mid-run is resumed on B.
func TestThreadStreamResumeAcrossProcesses(t *testing.T) {
	t.Parallel()
	requireURL(t)
	c := newCluster(t, 3, time.Hour)
	a, b, cc := c.srvs[0], c.srvs[1], c.srvs[2]
	ctx := c.ctx
	th, err := a.CreateThread(ctx, graphserver.ThreadCreate{
		Metadata:   graphserver.Metadata{"graph_id": "counter"},
		Supersteps: []graphserver.Superstep{{Updates: []graphserver.StateUpdate{{Values: json.RawMessage(`{"count":1}`), AsNode: "inc"}}}},
	})
	require.NoError(t, err)
	every := []string{graphserver.ThreadStreamRunModes, graphserver.ThreadStreamStateUpdate}
	onA := joinThread(t, a, th.ThreadID, graphserver.ThreadStreamOptions{LastEventID: "-", StreamModes: every})
	_, err = a.WaitRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "counter", Input: json.RawMessage(`{}`),
		StreamMode: graphserver.StreamModes{"values", "updates"}, StreamResumable: true})
	require.NoError(t, err)
	_, err = b.UpdateThreadState(ctx, th.ThreadID, graphserver.ThreadStateUpdate{Values: json.RawMessage(`{"count":7}`), AsNode: "inc"})
	require.NoError(t, err)
	_, err = cc.WaitRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "counter", Input: json.RawMessage(`{}`),
		StreamMode: graphserver.StreamModes{"values"}})
	require.NoError(t, err)

	// The full stream, read live on A, is the replay on B and C.
	var full []graphserver.StreamEvent
	for done := 0; done < 2; {
		ev := readN(t, onA, 1)[0]
		full = append(full, ev)
		if isRunDone(ev) {
			done++
		}
	}
	require.Equal(t, "state_update", full[0].Event)
	for _, srv := range []*graphserver.Server{b, cc} {
		require.Equal(t, full, readN(t, joinThread(t, srv, th.ThreadID, graphserver.ThreadStreamOptions{LastEventID: "-", StreamModes: every}), len(full)))
	}

	// Resumed after each event, on another process: exactly the rest.
	for k := range full[:len(full)-1] {
		srv := []*graphserver.Server{b, cc}[k%2]
		rest := readN(t, joinThread(t, srv, th.ThreadID, graphserver.ThreadStreamOptions{LastEventID: full[k].ID, StreamModes: every}), len(full)-k-1)
		require.Equal(t, full[k+1:], rest, "resumed after %s (#%d)", full[k].ID, k)
	}
	end := joinThread(t, b, th.ThreadID, graphserver.ThreadStreamOptions{LastEventID: full[len(full)-1].ID, StreamModes: every})
	requireQuiet(t, end)

	// Live: a run streamed on A, resumed on B mid-run.
	th2, err := a.CreateThread(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	live := joinThread(t, a, th2.ThreadID, graphserver.ThreadStreamOptions{})
	_, err = cc.CreateRun(ctx, th2.ThreadID, graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{"n":1}`),
		StreamMode: graphserver.StreamModes{"values"}, StreamResumable: true})
	require.NoError(t, err)
	c.started(t)
	seen := readN(t, live, 2) // metadata, values
	resumed := joinThread(t, b, th2.ThreadID, graphserver.ThreadStreamOptions{LastEventID: seen[1].ID})
	c.block.Release()
	restA := readUntil(t, live, isRunDone)
	require.Equal(t, restA, readUntil(t, resumed, isRunDone))
	require.Equal(t, []string{"values", "metadata"}, []string{restA[0].Event, restA[1].Event})
}

// TestThreadEventsResumeAcrossProcesses: protocol-v2 thread events carry
// the same seqs on every process, so a subscription resumed on another
// process with since = the last seq seen gets exactly the rest; and
// ThreadEventsSeq, the applied_through_seq of commands, is the same on
// every process and a bound below the events made after it.
func TestThreadEventsResumeAcrossProcesses(t *testing.T) {
	t.Parallel()
	requireURL(t)
	c := newCluster(t, 2, time.Hour)
	a, b := c.srvs[0], c.srvs[1]
	ctx := c.ctx
	th, err := a.CreateThread(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	req := graphserver.ThreadEventsRequest{Channels: []string{graphserver.ChannelValues, graphserver.ChannelUpdates, graphserver.ChannelLifecycle}}
	subscribe := func(srv *graphserver.Server, since int64) <-chan graphserver.ThreadEvent {
		r := req
		r.Since = &since
		st, err := srv.SubscribeThreadEvents(ctx, th.ThreadID, r)
		require.NoError(t, err)
		return pump(st.Events(ctx), same)
	}
	before, err := b.ThreadEventsSeq(ctx, th.ThreadID)
	require.NoError(t, err)
	onA := subscribe(a, before)
	for range 2 {
		_, err = b.WaitRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "counter", Input: json.RawMessage(`{}`)})
		require.NoError(t, err)
	}
	after, err := a.ThreadEventsSeq(ctx, th.ThreadID)
	require.NoError(t, err)
	afterB, err := b.ThreadEventsSeq(ctx, th.ThreadID)
	require.NoError(t, err)
	require.Equal(t, after, afterB)

	var full []graphserver.ThreadEvent
	for done := 0; done < 2; {
		ev := readN(t, onA, 1)[0]
		full = append(full, ev)
		if ev.Method == graphserver.ChannelLifecycle && strings.Contains(string(ev.Data), `"completed"`) {
			done++
		}
	}
	require.Equal(t, "lifecycle", full[0].Method)
	seqs := func(evs []graphserver.ThreadEvent) []string {
		var out []string
		for _, ev := range evs {
			out = append(out, strconv.FormatInt(ev.Seq, 10)+" "+ev.EventID+" "+ev.Method+" "+string(ev.Data))
		}
		return out
	}
	require.Greater(t, full[0].Seq, before)
	require.LessOrEqual(t, full[len(full)-1].Seq, after)
	require.Equal(t, seqs(full), seqs(readN(t, subscribe(b, before), len(full))), "the same events and seqs on B")
	for k := range full[:len(full)-1] {
		rest := readN(t, subscribe(b, full[k].Seq), len(full)-k-1)
		require.Equal(t, seqs(full[k+1:]), seqs(rest), "resumed after seq %d", full[k].Seq)
	}
	requireQuiet(t, subscribe(b, after))
}

// TestWebSocketReconnectAcrossProcesses: subscription.reconnect (the
// protocol's WebSocket resume, as on one process in examples/integration
// TestWebSocketReconnect) restores on B a subscription made on A's
// socket, by its id, with the events after the last one the client saw:
// exactly the rest. Thread event seqs are the same on every process and
// the subscription's filter travels in its id.
func TestWebSocketReconnectAcrossProcesses(t *testing.T) {
	t.Parallel()
	requireURL(t)
	c := newCluster(t, 2, time.Hour)
	ctx := c.ctx
	var urls []string
	for _, srv := range c.srvs {
		hs := httptest.NewServer(httpapi.New(srv, httpapi.Options{}))
		t.Cleanup(hs.Close)
		urls = append(urls, strings.Replace(hs.URL, "http", "ws", 1))
	}
	thread := uuid.NewString()
	type frame struct {
		Type    string         `json:"type"`
		ID      *int           `json:"id"`
		EventID string         `json:"event_id"`
		Seq     int64          `json:"seq"`
		Method  string         `json:"method"`
		Result  map[string]any `json:"result"`
		Error   string         `json:"error"`
		Params  struct {
			Data map[string]any `json:"data"`
		} `json:"params"`
	}
	dial := func(url string) *websocket.Conn {
		conn, _, err := websocket.Dial(ctx, url+"/threads/"+thread+"/stream/events", nil)
		require.NoError(t, err)
		t.Cleanup(func() { conn.CloseNow() })
		return conn
	}
	read := func(conn *websocket.Conn) frame {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, b, err := conn.Read(rctx)
		require.NoError(t, err)
		var f frame
		require.NoError(t, json.Unmarshal(b, &f))
		return f
	}
	// send sends a command and returns its reply, and the events that came
	// before it.
	send := func(conn *websocket.Conn, id int, method string, params any) (frame, []frame) {
		b, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
		require.NoError(t, err)
		require.NoError(t, conn.Write(ctx, websocket.MessageText, b))
		var evs []frame
		for {
			f := read(conn)
			if f.Type == "event" {
				evs = append(evs, f)
				continue
			}
			require.Equal(t, "success", f.Type, "%s: %+v", method, f)
			return f, evs
		}
	}
	completed := func(f frame) bool { return f.Method == "lifecycle" && f.Params.Data["event"] == "completed" }
	until := func(conn *websocket.Conn, evs []frame) []frame {
		for len(evs) == 0 || !completed(evs[len(evs)-1]) {
			evs = append(evs, read(conn))
		}
		return evs
	}

	onA := dial(urls[0])
	r, _ := send(onA, 1, "subscription.subscribe", map[string]any{"channels": []string{"lifecycle", "values", "updates"}})
	sub := r.Result["subscription_id"].(string)
	r, evs := send(onA, 2, "run.start", map[string]any{"assistant_id": "counter", "input": map[string]any{}})
	runID := r.Result["run_id"].(string)
	full := until(onA, evs)
	require.GreaterOrEqual(t, len(full), 3)
	onA.CloseNow()

	ids := func(fs []frame) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.EventID+" "+f.Method)
		}
		return out
	}
	for k := range full[:len(full)-1] {
		onB := dial(urls[1])
		r, evs := send(onB, 1, "subscription.reconnect", map[string]any{"run_id": runID, "last_event_id": full[k].EventID, "subscriptions": []string{sub}})
		require.Equal(t, true, r.Result["restored"], "the subscription made on A is restored on B")
		require.Equal(t, ids(full[k+1:]), ids(until(onB, evs)), "resumed on B after %s", full[k].EventID)
		onB.CloseNow()
	}
}

// TestThreadEventsLatestRunAcrossProcesses: a protocol-v2 subscription
// without since starts at the thread's latest run, from its start (as the
// JS SDK subscribes after run.start), on a process that has not seen the
// run start yet: not at the run before it, whose events are in the log.
func TestThreadEventsLatestRunAcrossProcesses(t *testing.T) {
	t.Parallel()
	requireURL(t)
	c := newCluster(t, 2, time.Hour)
	a, b := c.srvs[0], c.srvs[1]
	ctx := c.ctx
	th, err := a.CreateThread(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	_, err = a.WaitRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "counter", Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	run, err := a.CreateRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)
	st, err := b.SubscribeThreadEvents(ctx, th.ThreadID, graphserver.ThreadEventsRequest{Channels: []string{graphserver.ChannelLifecycle, graphserver.ChannelValues}})
	require.NoError(t, err)
	got := v2Items(ctx, st)
	c.started(t)
	require.Equal(t, []string{`lifecycle {"event":"running","run_id":"` + run.RunID + `"}`, `values {"n":1}`}, readN(t, got, 2))
	c.block.Release()
}

// TestThreadLogPrune: the thread log is kept while its runs' logs are
// (PruneRunEvents with a bound before the run's end keeps everything),
// then goes with them; the counter stays while the thread does, so that
// numbers keep growing, and goes with the thread.
func TestThreadLogPrune(t *testing.T) {
	t.Parallel()
	requireURL(t)
	c := newCluster(t, 1, time.Hour)
	srv, db := c.srvs[0], c.dbs[0]
	ctx := c.ctx
	th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	_, err = srv.WaitRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "counter", Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	_, err = srv.UpdateThreadState(ctx, th.ThreadID, graphserver.ThreadStateUpdate{Values: json.RawMessage(`{"count":3}`), AsNode: "inc"})
	require.NoError(t, err)
	log, err := db.ThreadLog(ctx, th.ThreadID, 0, 100)
	require.NoError(t, err)
	last, err := db.LastThreadSeq(ctx, th.ThreadID)
	require.NoError(t, err)
	require.Equal(t, last, log[len(log)-1].Seq)
	require.Equal(t, "state_update", log[len(log)-1].Event)
	require.Equal(t, "run_done", log[len(log)-2].Event)
	require.Equal(t, `"success"`, string(log[len(log)-2].Data))

	_, err = db.PruneRunEvents(ctx, time.Now().Add(-time.Hour))
	require.NoError(t, err)
	kept, err := db.ThreadLog(ctx, th.ThreadID, 0, 100)
	require.NoError(t, err)
	require.Equal(t, log, kept)

	n, err := db.PruneRunEvents(ctx, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, len(log), n)
	kept, err = db.ThreadLog(ctx, th.ThreadID, 0, 100)
	require.NoError(t, err)
	require.Empty(t, kept)
	still, err := db.LastThreadSeq(ctx, th.ThreadID)
	require.NoError(t, err)
	require.Equal(t, last, still, "the counter stays with the thread")

	require.NoError(t, srv.DeleteThread(ctx, th.ThreadID))
	_, err = db.PruneRunEvents(ctx, time.Now().Add(time.Hour))
	require.NoError(t, err)
	gone, err := db.LastThreadSeq(ctx, th.ThreadID)
	require.NoError(t, err)
	require.Zero(t, gone)
}

// TestThreadStreamWindow: a thread stream opened on a process that did
// not follow the thread replays the last 10,000 entries of its stored log
// (what a feed retains), under the log's ids. (The process reads only
// those from storage, not the whole log kept.)
func TestThreadStreamWindow(t *testing.T) {
	t.Parallel()
	requireURL(t)
	c := newCluster(t, 2, time.Hour)
	a, b, db := c.srvs[0], c.srvs[1], c.dbs[0]
	ctx := c.ctx
	th, err := a.CreateThread(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	run, err := a.CreateRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "block", Input: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)
	c.started(t)
	// The run's log grows by 10,010 custom events (after its metadata and
	// values, stored as the run went: B reads them from storage).
	joined, err := b.JoinRunStream(ctx, th.ThreadID, run.RunID, graphserver.JoinStreamOptions{LastEventID: "-1"})
	require.NoError(t, err)
	readN(t, collect(ctx, joined), 2)
	const extra = 10010
	evs := make([]graphserver.StreamEvent, extra)
	for i := range evs {
		evs[i] = graphserver.StreamEvent{ID: strconv.Itoa(i + 2), Event: "custom", Data: json.RawMessage(strconv.Itoa(i))}
	}
	require.NoError(t, db.AppendRunEvents(ctx, run.RunID, evs))
	last, err := db.LastThreadSeq(ctx, th.ThreadID)
	require.NoError(t, err)

	replay := joinThread(t, b, th.ThreadID, graphserver.ThreadStreamOptions{LastEventID: "-"})
	first := readN(t, replay, 1)[0]
	require.Equal(t, strconv.FormatInt(last-10000+1, 10)+"-0", first.ID, "B starts 10,000 entries before the end")
	require.Equal(t, strconv.Itoa(extra-10000), string(first.Data))
	c.block.Release()
}
