package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/client"
	"github.com/graphserver/graphserver/internal/graphtest"
)

// stepsGraph emits custom parts 0..2, blocks until released, then emits
// custom 3..5 and its final values.
type stepsGraph struct {
	graphtest.Echo
	reached chan string
	release chan struct{}
}

func newStepsGraph() *stepsGraph {
	return &stepsGraph{reached: make(chan string, 8), release: make(chan struct{})}
}

func (g *stepsGraph) Run(ctx context.Context, req *graphserver.GraphRun, emit func(graphserver.StreamPart)) error {
	part := func(i int) {
		emit(graphserver.StreamPart{Event: "custom", Data: json.RawMessage(`{"i":` + itoa(i) + `}`)})
	}
	for i := range 3 {
		part(i)
	}
	g.reached <- req.RunID
	select {
	case <-g.release:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	for i := 3; i < 6; i++ {
		part(i)
	}
	emit(graphserver.StreamPart{Event: "values", Data: json.RawMessage(`{"done":true}`)})
	return nil
}

// dropper breaks the connection of the first request it matches after
// frames SSE frames (or, for a wait, after the keep-alive), writing half of
// the next frame first when partial is set. It records every matching
// request and counts heartbeats written on any of them.
type dropper struct {
	match   func(*http.Request) bool
	frames  int
	partial bool

	used       atomic.Bool
	heartbeats atomic.Int32
	mu         sync.Mutex
	reqs       []*http.Request
}

func (d *dropper) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.match(r) {
			d.mu.Lock()
			d.reqs = append(d.reqs, r.Clone(context.WithoutCancel(r.Context())))
			d.mu.Unlock()
			dw := &dropWriter{ResponseWriter: w, d: d, left: -1}
			if d.used.CompareAndSwap(false, true) {
				dw.left = d.frames
			}
			w = dw
		}
		h.ServeHTTP(w, r)
	})
}

func (d *dropper) requests() []*http.Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*http.Request(nil), d.reqs...)
}

type dropWriter struct {
	http.ResponseWriter
	d       *dropper
	left    int // frames to let through; -1 = all
	dropped bool
}

func (w *dropWriter) Write(p []byte) (int, error) {
	if strings.HasPrefix(string(p), ":") {
		w.d.heartbeats.Add(1)
		return w.ResponseWriter.Write(p)
	}
	if w.dropped {
		return 0, http.ErrHijacked
	}
	if w.left == 0 {
		// break the connection as a network failure would: what was
		// written before reaches the client, then (with partial) half of
		// this frame, then the connection closes; the handler sees failed
		// writes, the client a body cut short
		w.dropped = true
		rc := http.NewResponseController(w.ResponseWriter)
		if w.d.partial {
			_, _ = w.ResponseWriter.Write(p[:len(p)/2])
		}
		_ = rc.Flush()
		conn, buf, err := rc.Hijack()
		if err != nil {
			panic(err)
		}
		_ = buf.Flush()
		_ = conn.Close()
		return 0, http.ErrHijacked
	}
	if w.left > 0 {
		w.left--
	}
	return w.ResponseWriter.Write(p)
}

func (w *dropWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestStreamReconnect: a run stream whose connection breaks mid-frame is
// resumed through Location with Last-Event-ID; every event arrives exactly
// once, in order, heartbeats are skipped. (SDK-PY _async/http.py
// HttpClient.stream, SDK-JS utils/stream reconnect.)
func TestStreamReconnect(t *testing.T) {
	t.Parallel()
	g := newStepsGraph()
	d := &dropper{match: func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/stream") }, frames: 2, partial: true}
	e := newEnv(t, envOptions{graphs: map[string]graphserver.Graph{"steps": g}, wrap: d.wrap})
	t.Cleanup(func() {
		select {
		case <-g.release:
		default:
			close(g.release)
		}
	})
	ctx := t.Context()
	th, err := e.c.Threads.Create(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)

	events := make(chan graphserver.StreamEvent, 64)
	errs := make(chan error, 1)
	go func() {
		defer close(events)
		for ev, err := range e.c.Runs.Stream(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "steps", StreamMode: []string{"custom", "values"}}, client.StreamOptions{}) {
			if err != nil {
				errs <- err
				return
			}
			events <- ev
		}
	}()
	<-g.reached
	// the reconnected stream is live: let a few heartbeats pass on it
	// before the run goes on
	require.Eventually(t, func() bool { return len(d.requests()) == 2 && d.heartbeats.Load() >= 3 }, 10e9, 5e6)
	close(g.release)

	var got []graphserver.StreamEvent
	for ev := range events {
		got = append(got, ev)
	}
	select {
	case err := <-errs:
		require.NoError(t, err)
	default:
	}
	require.Equal(t, []string{"metadata", "custom", "custom", "custom", "custom", "custom", "custom", "values"}, names(got))
	for i, ev := range got {
		require.Equal(t, itoa(i), ev.ID, "no event lost or repeated")
	}
	for i, ev := range got[1:7] {
		require.JSONEq(t, `{"i":`+itoa(i)+`}`, string(ev.Data))
	}

	reqs := d.requests()
	require.Len(t, reqs, 2)
	require.Equal(t, http.MethodPost, reqs[0].Method)
	require.Equal(t, http.MethodGet, reqs[1].Method)
	require.Regexp(t, `^/threads/`+th.ThreadID+`/runs/[^/]+/stream$`, reqs[1].URL.Path)
	require.Equal(t, "1", reqs[1].Header.Get("Last-Event-ID"), "resumes after the last complete frame, not the cut one")
	runs, err := e.c.Runs.List(ctx, th.ThreadID, graphserver.RunSearch{})
	require.NoError(t, err)
	require.Len(t, runs, 1, "reconnecting creates no run")
}

// TestJoinStreamReconnect: a broken join stream reconnects to itself.
func TestJoinStreamReconnect(t *testing.T) {
	t.Parallel()
	g := newStepsGraph()
	close(g.release)
	d := &dropper{match: func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/stream")
	}, frames: 3}
	e := newEnv(t, envOptions{graphs: map[string]graphserver.Graph{"steps": g}, wrap: d.wrap})
	ctx := t.Context()
	run, err := e.c.Runs.Create(ctx, "", graphserver.RunCreate{AssistantID: "steps", StreamMode: []string{"custom", "values"}, OnCompletion: graphserver.OnCompletionKeep})
	require.NoError(t, err)
	_, err = e.c.Runs.Join(ctx, run.ThreadID, run.RunID)
	require.NoError(t, err)
	got := collect(t, e.c.Runs.JoinStream(ctx, "", run.RunID, graphserver.JoinStreamOptions{LastEventID: "-1"}))
	require.Len(t, got, 8)
	for i, ev := range got {
		require.Equal(t, itoa(i), ev.ID)
	}
	reqs := d.requests()
	require.Len(t, reqs, 2)
	require.Equal(t, "2", reqs[1].Header.Get("Last-Event-ID"))
}

// TestWaitReconnect: a /wait whose connection breaks while waiting joins
// the run through Location instead of creating another.
func TestWaitReconnect(t *testing.T) {
	t.Parallel()
	g := newStepsGraph()
	d := &dropper{match: func(r *http.Request) bool {
		return strings.HasSuffix(r.URL.Path, "/wait") || strings.HasSuffix(r.URL.Path, "/join")
	}}
	e := newEnv(t, envOptions{graphs: map[string]graphserver.Graph{"steps": g}, wrap: d.wrap})
	ctx := t.Context()
	th, err := e.c.Threads.Create(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	go func() {
		<-g.reached
		// the first keep-alive byte breaks the /wait connection; the join
		// keeps waiting until the run goes on
		assert.Eventually(t, func() bool { return len(d.requests()) == 2 }, 10e9, 5e6)
		close(g.release)
	}()
	out, err := e.c.Runs.Wait(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "steps"})
	require.NoError(t, err)
	require.JSONEq(t, `{"done":true}`, string(out))
	reqs := d.requests()
	require.Len(t, reqs, 2)
	require.Equal(t, http.MethodGet, reqs[1].Method)
	require.True(t, strings.HasSuffix(reqs[1].URL.Path, "/join"), reqs[1].URL.Path)
	runs, err := e.c.Runs.List(ctx, th.ThreadID, graphserver.RunSearch{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
}

// sse writes frames and flushes.
func sse(w http.ResponseWriter, frames ...string) {
	for _, f := range frames {
		_, _ = w.Write([]byte(f))
	}
	w.(http.Flusher).Flush()
}

func sseHeaders(w http.ResponseWriter, contentLocation, location string) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	if contentLocation != "" {
		w.Header().Set("Content-Location", contentLocation)
	}
	if location != "" {
		w.Header().Set("Location", location)
	}
}

// TestStreamReconnectFakes: the reconnection rules against scripted
// servers: inclusive replay (the Python Platform re-sends the Last-Event-ID
// event), Content-Location fallback (the JS dev server sends no Location),
// events without ids, cross-origin Locations and the reconnect limit.
func TestStreamReconnectFakes(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, rec *recorder, opts client.Options) ([]graphserver.StreamEvent, error) {
		var got []graphserver.StreamEvent
		var created []string
		for ev, err := range rec.client(t, opts).Runs.Stream(t.Context(), "t1", graphserver.RunCreate{AssistantID: "a"}, client.StreamOptions{
			OnRunCreated: func(r, th string) { created = append(created, r, th) },
		}) {
			if err != nil {
				return got, err
			}
			got = append(got, ev)
		}
		require.Equal(t, []string{"r1", "t1"}, created, "OnRunCreated fires once")
		return got, nil
	}
	ids := func(evs []graphserver.StreamEvent) string {
		var s []string
		for _, ev := range evs {
			s = append(s, ev.ID+":"+ev.Event)
		}
		return strings.Join(s, " ")
	}

	t.Run("inclusive replay is de-duplicated", func(t *testing.T) {
		t.Parallel()
		rec := newRecorder(t)
		rec.on("POST /threads/t1/runs/stream", func(w http.ResponseWriter, r *http.Request) {
			sseHeaders(w, "/threads/t1/runs/r1", "/threads/t1/runs/r1/stream")
			sse(w, "event: metadata\r\ndata: {}\r\nid: 5-0\r\n\r\n", "event: values\r\ndata: 1\r\nid: 6-0\r\n\r\n", "event: values\r\ndata:")
			panic(http.ErrAbortHandler)
		})
		rec.on("GET /threads/t1/runs/r1/stream", func(w http.ResponseWriter, r *http.Request) {
			assert.Equal(t, "6-0", r.Header.Get("Last-Event-ID"))
			sseHeaders(w, "/threads/t1/runs/r1", "/threads/t1/runs/r1/stream")
			sse(w, "event: values\r\ndata: 1\r\nid: 6-0\r\n\r\n: heartbeat\r\n\r\n", "event: values\r\ndata: 2\r\nid: 7-0\r\n\r\n")
		})
		got, err := run(t, rec, client.Options{})
		require.NoError(t, err)
		require.Equal(t, "5-0:metadata 6-0:values 7-0:values", ids(got))
	})

	t.Run("Content-Location fallback", func(t *testing.T) {
		t.Parallel()
		rec := newRecorder(t)
		rec.on("POST /threads/t1/runs/stream", func(w http.ResponseWriter, r *http.Request) {
			sseHeaders(w, "/threads/t1/runs/r1", "")
			sse(w, "event: metadata\ndata: {}\nid: 0\n\n")
			panic(http.ErrAbortHandler)
		})
		rec.on("GET /threads/t1/runs/r1/stream", func(w http.ResponseWriter, r *http.Request) {
			assert.Equal(t, "0", r.Header.Get("Last-Event-ID"))
			sseHeaders(w, "", "")
			sse(w, "event: values\ndata: {}\nid: 1\n\n")
		})
		got, err := run(t, rec, client.Options{})
		require.NoError(t, err)
		require.Equal(t, "0:metadata 1:values", ids(got))
	})

	t.Run("events without ids are not resumed", func(t *testing.T) {
		t.Parallel()
		rec := newRecorder(t)
		rec.on("POST /threads/t1/runs/stream", func(w http.ResponseWriter, r *http.Request) {
			sseHeaders(w, "/threads/t1/runs/r1", "/threads/t1/runs/r1/stream")
			sse(w, "event: metadata\ndata: {}\n\n")
			panic(http.ErrAbortHandler)
		})
		got, err := run(t, rec, client.Options{})
		require.Error(t, err)
		require.Len(t, got, 1)
		require.Zero(t, rec.count("GET /threads/t1/runs/r1/stream"))
	})

	t.Run("no event yet: resumed from the start", func(t *testing.T) {
		t.Parallel()
		rec := newRecorder(t)
		rec.on("POST /threads/t1/runs/stream", func(w http.ResponseWriter, r *http.Request) {
			sseHeaders(w, "/threads/t1/runs/r1", "/threads/t1/runs/r1/stream")
			sse(w, ": heartbeat\n\n")
			panic(http.ErrAbortHandler)
		})
		rec.on("GET /threads/t1/runs/r1/stream", func(w http.ResponseWriter, r *http.Request) {
			assert.Empty(t, r.Header.Get("Last-Event-ID"))
			sseHeaders(w, "", "")
			sse(w, "event: metadata\ndata: {}\nid: 0\n\n")
		})
		got, err := run(t, rec, client.Options{})
		require.NoError(t, err)
		require.Equal(t, "0:metadata", ids(got))
	})

	t.Run("cross-origin Location refused", func(t *testing.T) {
		t.Parallel()
		rec := newRecorder(t)
		rec.on("POST /threads/t1/runs/stream", func(w http.ResponseWriter, r *http.Request) {
			sseHeaders(w, "/threads/t1/runs/r1", "http://evil.example/steal")
			sse(w, "event: metadata\ndata: {}\nid: 0\n\n")
			panic(http.ErrAbortHandler)
		})
		_, err := run(t, rec, client.Options{})
		require.ErrorContains(t, err, "cross-origin")
	})

	t.Run("reconnect limit", func(t *testing.T) {
		t.Parallel()
		rec := newRecorder(t)
		rec.on("POST /threads/t1/runs/stream", func(w http.ResponseWriter, r *http.Request) {
			sseHeaders(w, "/threads/t1/runs/r1", "/threads/t1/runs/r1/stream")
			sse(w, "event: metadata\ndata: {}\nid: 0\n\n")
			panic(http.ErrAbortHandler)
		})
		rec.on("GET /threads/t1/runs/r1/stream", hangUp)
		got, err := run(t, rec, client.Options{MaxReconnects: 2, MaxRetries: -1})
		require.Error(t, err)
		require.Len(t, got, 1)
		require.Equal(t, 2, rec.count("GET /threads/t1/runs/r1/stream"))
	})

	t.Run("wrong content type", func(t *testing.T) {
		t.Parallel()
		rec := newRecorder(t)
		rec.on("POST /threads/t1/runs/stream", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Location", "/threads/t1/runs/r1")
			status(200, "application/json", `{}`)(w, r)
		})
		_, err := run(t, rec, client.Options{})
		require.ErrorContains(t, err, "text/event-stream")
	})
}

// TestStreamBreakCancels: leaving the range closes the connection, which
// with on_disconnect=cancel cancels the run.
func TestStreamBreakCancels(t *testing.T) {
	t.Parallel()
	g := newStepsGraph()
	e := newEnv(t, envOptions{graphs: map[string]graphserver.Graph{"steps": g}})
	t.Cleanup(func() { close(g.release) })
	ctx := t.Context()
	th, err := e.c.Threads.Create(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	var runID string
	for ev, err := range e.c.Runs.Stream(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "steps", StreamMode: []string{"custom"}, OnDisconnect: graphserver.OnDisconnectCancel}, client.StreamOptions{
		OnRunCreated: func(r, _ string) { runID = r },
	}) {
		require.NoError(t, err)
		if ev.Event == "custom" {
			break
		}
	}
	require.NotEmpty(t, runID)
	require.Eventually(t, func() bool {
		r, err := e.c.Runs.Get(ctx, th.ThreadID, runID)
		return err == nil && r.Status == graphserver.RunInterrupted
	}, 10e9, 10e6)

	// a cancelled ctx ends a stream with its cause
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := 0
	var last error
	for _, err := range e.c.Runs.Stream(cctx, "", graphserver.RunCreate{AssistantID: "steps", StreamMode: []string{"custom"}}, client.StreamOptions{}) {
		if err != nil {
			last = err
			break
		}
		n++
		if n == 2 {
			cancel()
		}
	}
	require.ErrorIs(t, last, context.Canceled)
}

// TestThreadJoinStreamRequest: the thread stream's request (modes,
// Last-Event-ID) against a scripted server, and its reconnection to
// itself. The route is the Python Platform's (§4.7).
func TestThreadJoinStreamRequest(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	rec.on("GET /threads/t1/stream", func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, []string{"lifecycle", "state_update"}, r.URL.Query()["stream_mode"])
		assert.Equal(t, "-", r.Header.Get("Last-Event-ID"))
		sseHeaders(w, "", "")
		sse(w, "event: metadata\ndata: {\"run_id\":\"r\",\"attempt\":1}\nid: 1-0\n\n")
		panic(http.ErrAbortHandler)
	}, func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "1-0", r.Header.Get("Last-Event-ID"))
		sseHeaders(w, "", "")
		sse(w, "event: metadata\ndata: {\"status\":\"run_done\",\"run_id\":\"r\"}\nid: 2-0\n\n")
	})
	c := rec.client(t, client.Options{})
	got := collect(t, c.Threads.JoinStream(t.Context(), "t1", client.ThreadStreamOptions{StreamMode: []string{"lifecycle", "state_update"}, LastEventID: "-"}))
	require.Len(t, got, 2)
	require.Equal(t, "2-0", got[1].ID)
	require.JSONEq(t, `{"status":"run_done","run_id":"r"}`, string(got[1].Data))
}

// TestPatchStateRequest: PATCH /threads/{id}/state carries {metadata}, as
// the JS SDK's patchState sends it.
func TestPatchStateRequest(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	var body map[string]any
	rec.on("PATCH /threads/t1/state", func(w http.ResponseWriter, r *http.Request) {
		assert.NoError(t, json.NewDecoder(r.Body).Decode(&body))
		w.WriteHeader(http.StatusNoContent)
	})
	c := rec.client(t, client.Options{})
	require.NoError(t, c.Threads.PatchState(t.Context(), "t1", graphserver.Metadata{"k": "v"}))
	require.Equal(t, map[string]any{"metadata": map[string]any{"k": "v"}}, body)
}
