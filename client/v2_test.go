package client_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/client"
)

// pull reads a thread event iterator one event at a time.
type pull struct {
	next func() (graphserver.ThreadEvent, error, bool)
	stop func()
}

func pullEvents(t *testing.T, seq iter.Seq2[graphserver.ThreadEvent, error]) *pull {
	t.Helper()
	next, stop := iter.Pull2(seq)
	t.Cleanup(stop)
	return &pull{next: next, stop: stop}
}

// until reads events up to and including the first that stop accepts.
func (p *pull) until(t *testing.T, stop func(graphserver.ThreadEvent) bool) []graphserver.ThreadEvent {
	t.Helper()
	var out []graphserver.ThreadEvent
	for {
		ev, err, ok := p.next()
		require.True(t, ok, "the stream ended after %v", eventNames(out))
		require.NoError(t, err)
		out = append(out, ev)
		if stop(ev) {
			return out
		}
	}
}

// rootEnd accepts the root lifecycle event of a run's end.
func rootEnd(ev graphserver.ThreadEvent) bool {
	if ev.Method != graphserver.ChannelLifecycle || len(ev.Namespace) != 0 {
		return false
	}
	var d struct {
		Event string `json:"event"`
	}
	_ = json.Unmarshal(ev.Data, &d)
	return d.Event == "completed" || d.Event == "failed" || d.Event == "interrupted"
}

func eventNames(evs []graphserver.ThreadEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Method + " " + string(ev.Data)
	}
	return out
}

func seqs(evs []graphserver.ThreadEvent) []int64 {
	out := make([]int64, len(evs))
	for i, ev := range evs {
		out[i] = ev.Seq
	}
	return out
}

// interruptID finds the interrupt id of an input.requested event.
func interruptID(t *testing.T, evs []graphserver.ThreadEvent) string {
	t.Helper()
	for _, ev := range evs {
		if ev.Method == "input.requested" {
			var d struct {
				InterruptID string `json:"interrupt_id"`
				Value       any    `json:"value"`
			}
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			require.Equal(t, map[string]any{"question": "why?"}, d.Value)
			return d.InterruptID
		}
	}
	t.Fatalf("no input.requested in %v", eventNames(evs))
	return ""
}

// TestThreadStreamSSE is client.threads.stream over SSE, as the SDKs do
// it: watch a thread id made up by the client before it exists, run.start
// (which creates the thread), events up to the interrupt,
// input.respond, events up to the end; the run is an ordinary run.
func TestThreadStreamSSE(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := t.Context()
	thread := uuid.NewString()
	watch := pullEvents(t, e.c.Threads.Events(ctx, thread, graphserver.ThreadEventsRequest{Channels: []string{"lifecycle", "input", "values"}}))

	run, err := e.c.Threads.StartRun(ctx, thread, client.RunStart{AssistantID: "ask", Input: map[string]any{"question": "why?"}})
	require.NoError(t, err)
	require.NotEmpty(t, run.RunID)
	evs := watch.until(t, rootEnd)
	require.Contains(t, string(evs[len(evs)-1].Data), `"interrupted"`)
	intr := interruptID(t, evs)

	// A stream opened with since = applied_through_seq gets the same events.
	replay := pullEvents(t, e.c.Threads.Events(ctx, thread, graphserver.ThreadEventsRequest{Channels: []string{"lifecycle", "input", "values"}, Since: &run.AppliedThroughSeq}))
	require.Equal(t, seqs(evs), seqs(replay.until(t, rootEnd)))

	resumed, err := e.c.Threads.Respond(ctx, thread, client.InterruptResponse{InterruptID: intr, Response: "because"})
	require.NoError(t, err)
	evs = watch.until(t, rootEnd)
	require.Contains(t, string(evs[len(evs)-1].Data), `"completed"`)
	st, err := e.c.Threads.GetState(ctx, thread, graphserver.ThreadStateQuery{})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"question": "why?", "answer": "because"}, st.Values)
	r, err := e.c.Runs.Get(ctx, thread, resumed.RunID)
	require.NoError(t, err)
	require.Equal(t, graphserver.RunSuccess, r.Status)

	// Other commands: state.get answers the thread's values.
	res, err := e.c.Threads.Command(ctx, thread, graphserver.CommandStateGet, nil)
	require.NoError(t, err)
	var got struct {
		Values map[string]any `json:"values"`
	}
	require.NoError(t, json.Unmarshal(res.Result.(json.RawMessage), &got))
	require.Equal(t, map[string]any{"question": "why?", "answer": "because"}, got.Values)
}

// TestThreadCommandErrors: error replies are *CommandError values with the
// protocol's code, and unwrap to the domain code of their status.
func TestThreadCommandErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := t.Context()
	thread := uuid.NewString()
	var ce *client.CommandError

	_, err := e.c.Threads.Command(ctx, thread, "run.fly", nil)
	require.ErrorAs(t, err, &ce)
	require.Equal(t, graphserver.CodeUnknownCommand, ce.Code)
	require.Equal(t, "run.fly", ce.Method)
	requireCode(t, err, graphserver.EINVALID)

	_, err = e.c.Threads.StartRun(ctx, thread, client.RunStart{})
	require.ErrorAs(t, err, &ce)
	require.Equal(t, graphserver.CodeInvalidArgument, ce.Code)

	_, err = e.c.Threads.StartRun(ctx, thread, client.RunStart{AssistantID: "chat", Input: map[string]any{}})
	require.NoError(t, err)
	_, err = e.c.Threads.Respond(ctx, thread, client.InterruptResponse{InterruptID: "nope", Response: 1})
	require.ErrorAs(t, err, &ce)
	require.Equal(t, graphserver.CodeNoSuchInterrupt, ce.Code)
	requireCode(t, err, graphserver.ENOTFOUND)

	_, err = e.c.Threads.Respond(ctx, thread)
	require.Error(t, err)

	// A bad subscription is the server's 422, not retried.
	for _, err := range e.c.Threads.Events(ctx, thread, graphserver.ThreadEventsRequest{}) {
		requireCode(t, err, graphserver.EINVALID)
	}
	for _, err := range e.c.Threads.EventsWebSocket(ctx, thread, graphserver.ThreadEventsRequest{Channels: []string{"nope"}}) {
		require.ErrorAs(t, err, &ce)
		require.Equal(t, graphserver.CodeInvalidArgument, ce.Code)
		requireCode(t, err, graphserver.EINVALID)
	}
}

// breaker lets a test break the thread event streams a handler serves,
// SSE responses and WebSockets alike, as a network failure would: the
// handler is stopped and the connection dropped without ending the
// response properly. Other requests (commands) are left alone.
type breaker struct {
	opened atomic.Int64 // event streams opened
	mu     sync.Mutex
	bodies []string // bodies of the SSE subscriptions
	stops  []context.CancelFunc
	conns  []net.Conn // hijacked (WebSocket) connections
}

func (b *breaker) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/stream/events") {
			h.ServeHTTP(w, r)
			return
		}
		b.opened.Add(1)
		ctx, stop := context.WithCancel(r.Context())
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		b.mu.Lock()
		b.stops = append(b.stops, stop)
		if r.Method == http.MethodPost {
			b.bodies = append(b.bodies, string(body))
		}
		b.mu.Unlock()
		h.ServeHTTP(&hijackRecorder{ResponseWriter: w, b: b}, r.WithContext(ctx))
		if ctx.Err() != nil && r.Context().Err() == nil {
			panic(http.ErrAbortHandler) // drop the connection mid-response
		}
	})
}

// breakAll breaks every event stream open.
func (b *breaker) breakAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, stop := range b.stops {
		stop()
	}
	for _, c := range b.conns {
		c.Close()
	}
	b.stops, b.conns = nil, nil
}

// hijackRecorder records the connection a handler hijacks (a WebSocket).
type hijackRecorder struct {
	http.ResponseWriter
	b *breaker
}

func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err == nil {
		h.b.mu.Lock()
		h.b.conns = append(h.b.conns, c)
		h.b.mu.Unlock()
	}
	return c, rw, err
}

func (h *hijackRecorder) Flush() { http.NewResponseController(h.ResponseWriter).Flush() }

func (h *hijackRecorder) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// TestThreadStreamReconnect: a thread event stream whose connection
// breaks mid-run reconnects with since = the last seq it yielded; what it
// yields, over SSE and over a WebSocket, is exactly a full replay's events
// (since 0): none lost, none repeated.
func TestThreadStreamReconnect(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"sse", "websocket"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			var b breaker
			e := newEnv(t, envOptions{wrap: b.wrap})
			ctx := t.Context()
			thread := uuid.NewString()
			req := graphserver.ThreadEventsRequest{Channels: []string{"lifecycle", "input", "values", "updates", "tasks", "checkpoints"}}
			open := e.c.Threads.Events
			if transport == "websocket" {
				open = e.c.Threads.EventsWebSocket
			}
			p := pullEvents(t, open(ctx, thread, req))
			_, err := e.c.Threads.StartRun(ctx, thread, client.RunStart{AssistantID: "ask", Input: map[string]any{"question": "why?"}})
			require.NoError(t, err)
			n := 0
			got := p.until(t, func(graphserver.ThreadEvent) bool { n++; return n == 3 })
			b.breakAll() // mid-run: what was not read yet comes again, after since
			got = append(got, p.until(t, rootEnd)...)
			b.breakAll() // between runs: the next run's events come on a new stream
			lastSeen := got[len(got)-1].Seq
			_, err = e.c.Threads.Respond(ctx, thread, client.InterruptResponse{InterruptID: interruptID(t, got), Response: "because"})
			require.NoError(t, err)
			got = append(got, p.until(t, rootEnd)...)
			require.GreaterOrEqual(t, b.opened.Load(), int64(2), "the stream was opened again")
			if transport == "sse" {
				b.mu.Lock()
				last := b.bodies[len(b.bodies)-1]
				b.mu.Unlock()
				require.Contains(t, last, fmt.Sprintf(`"since":%d`, lastSeen), "reopened after the last event yielded")
			}

			zero := int64(0)
			full := pullEvents(t, e.c.Threads.Events(ctx, thread, graphserver.ThreadEventsRequest{Channels: req.Channels, Since: &zero}))
			want := full.until(t, rootEnd)
			want = append(want, full.until(t, rootEnd)...)
			require.Equal(t, seqs(want), seqs(got), "none lost or repeated")
			require.Contains(t, string(got[len(got)-1].Data), `"completed"`)
		})
	}
}

// TestThreadStreamWebSocket: the same conversation over the WebSocket
// transport, with the client's API key and request hook on the handshake.
func TestThreadStreamWebSocket(t *testing.T) {
	t.Parallel()
	var seen sync.Map
	e := newEnv(t, envOptions{
		wrap: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Upgrade") != "" {
					seen.Store("key", r.Header.Get("x-api-key"))
					seen.Store("hook", r.Header.Get("x-hook"))
				}
				h.ServeHTTP(w, r)
			})
		},
		client: client.Options{APIKey: "k1", OnRequest: func(r *http.Request) error { r.Header.Set("x-hook", "yes"); return nil }},
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	thread := uuid.NewString()
	p := pullEvents(t, e.c.Threads.EventsWebSocket(ctx, thread, graphserver.ThreadEventsRequest{Channels: []string{"lifecycle", "input"}}))
	_, err := e.c.Threads.StartRun(ctx, thread, client.RunStart{AssistantID: "ask", Input: map[string]any{"question": "why?"}})
	require.NoError(t, err)
	evs := p.until(t, rootEnd)
	_, err = e.c.Threads.Respond(ctx, thread, client.InterruptResponse{InterruptID: interruptID(t, evs), Response: "because"})
	require.NoError(t, err)
	evs = p.until(t, rootEnd)
	require.Contains(t, string(evs[len(evs)-1].Data), `"completed"`)
	key, _ := seen.Load("key")
	hook, _ := seen.Load("hook")
	require.Equal(t, "k1", key)
	require.Equal(t, "yes", hook)
}
