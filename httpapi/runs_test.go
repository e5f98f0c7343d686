package httpapi_test

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/internal/graphtest"
	"github.com/graphserver/graphserver/sqlite"
)

// runEnv is a started server with the graphtest graphs behind httptest.
type runEnv struct {
	srv   *graphserver.Server
	db    *sqlite.DB
	ts    *httptest.Server
	block *graphtest.Blocking
}

type runEnvOptions struct {
	server  func(*graphserver.Options)
	http    httpapi.Options
	noStart bool
}

func newRunEnv(t *testing.T, o runEnvOptions) *runEnv {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	block := graphtest.NewBlocking()
	opts := graphserver.Options{
		Storage: db,
		Graphs: map[string]graphserver.Graph{
			"echo": graphtest.Echo{}, "fail": graphtest.Fail{}, "interrupt": graphtest.Interrupt{},
			"parts": graphtest.Parts{}, "block": block,
		},
	}
	if o.server != nil {
		o.server(&opts)
	}
	srv, err := graphserver.New(opts)
	require.NoError(t, err)
	if o.noStart {
		// Seed the system assistants as an earlier process would have.
		seed, err := graphserver.New(opts)
		require.NoError(t, err)
		require.NoError(t, seed.Start(t.Context()))
		require.NoError(t, seed.Close(t.Context()))
	} else {
		require.NoError(t, srv.Start(t.Context()))
	}
	ts := httptest.NewServer(httpapi.New(srv, o.http))
	t.Cleanup(func() {
		block.Release()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, srv.Close(ctx))
		ts.Close()
	})
	return &runEnv{srv: srv, db: db, ts: ts, block: block}
}

// do sends a request and returns the response (body not read).
func (e *runEnv) do(t *testing.T, ctx context.Context, method, path, body string, headers ...string) *http.Response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.ts.URL+path, r)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.ts.Client().Do(req)
	require.NoError(t, err)
	return resp
}

// call sends a request, requires the status and returns the body.
func (e *runEnv) call(t *testing.T, method, path, body string, status int, headers ...string) string {
	t.Helper()
	resp := e.do(t, t.Context(), method, path, body, headers...)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, status, resp.StatusCode, "body: %s", b)
	return string(b)
}

func (e *runEnv) thread(t *testing.T) string {
	t.Helper()
	var th graphserver.Thread
	require.NoError(t, json.Unmarshal([]byte(e.call(t, "POST", "/threads", `{}`, 200)), &th))
	return th.ThreadID
}

func (e *runEnv) createRun(t *testing.T, threadID, body string) graphserver.Run {
	t.Helper()
	var run graphserver.Run
	require.NoError(t, json.Unmarshal([]byte(e.call(t, "POST", "/threads/"+threadID+"/runs", body, 200)), &run))
	return run
}

func (e *runEnv) runStatus(t *testing.T, threadID, runID string) string {
	t.Helper()
	var run graphserver.Run
	require.NoError(t, json.Unmarshal([]byte(e.call(t, "GET", "/threads/"+threadID+"/runs/"+runID, "", 200)), &run))
	return run.Status
}

func (e *runEnv) threadStatus(t *testing.T, threadID string) string {
	t.Helper()
	var th graphserver.Thread
	require.NoError(t, json.Unmarshal([]byte(e.call(t, "GET", "/threads/"+threadID, "", 200)), &th))
	return th.Status
}

func (e *runEnv) started(t *testing.T) string {
	t.Helper()
	select {
	case id := <-e.block.Started:
		return id
	case <-time.After(10 * time.Second):
		t.Fatal("run did not start")
		return ""
	}
}

// sseEvent is one parsed SSE frame.
type sseEvent struct{ Event, Data, ID string }

// sseReader parses an SSE body frame by frame.
type sseReader struct {
	sc         *bufio.Scanner
	heartbeats int
}

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return &sseReader{sc: sc}
}

// next returns the next frame; ok is false at the end of the stream.
func (s *sseReader) next() (ev sseEvent, ok bool) {
	seen := false
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "":
			if seen {
				return ev, true
			}
		case strings.HasPrefix(line, ":"):
			s.heartbeats++
		case strings.HasPrefix(line, "event: "):
			ev.Event, seen = line[len("event: "):], true
		case strings.HasPrefix(line, "data: "):
			ev.Data, seen = line[len("data: "):], true
		case strings.HasPrefix(line, "id: "):
			ev.ID, seen = line[len("id: "):], true
		}
	}
	return ev, false
}

func (s *sseReader) all() []sseEvent {
	var out []sseEvent
	for {
		ev, ok := s.next()
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

func names(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Event
	}
	return out
}

var locationRE = regexp.MustCompile(`^(?:/threads/([0-9a-f-]+))?/runs/([0-9a-f-]+)$`)

func TestRunsWait(t *testing.T) {
	t.Parallel()
	t.Run("Thread", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		tid := e.thread(t)
		resp := e.do(t, t.Context(), "POST", "/threads/"+tid+"/runs/wait", `{"assistant_id":"echo","input":{"x":1},"metadata":{"m":1}}`,
			"X-Custom", "c1", "X-Api-Key", "secret")
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		require.Equal(t, 200, resp.StatusCode)
		require.JSONEq(t, `{"x":1}`, string(b))
		m := locationRE.FindStringSubmatch(resp.Header.Get("Content-Location"))
		require.NotNil(t, m, resp.Header.Get("Content-Location"))
		require.Equal(t, tid, m[1])
		require.Equal(t, resp.Header.Get("Content-Location")+"/join", resp.Header.Get("Location"))

		var run graphserver.Run
		require.NoError(t, json.Unmarshal([]byte(e.call(t, "GET", "/threads/"+tid+"/runs/"+m[2], "", 200)), &run))
		require.Equal(t, graphserver.RunSuccess, run.Status)
		require.Equal(t, float64(1), run.Metadata["m"])
		conf := run.Kwargs.Config["configurable"].(map[string]any)
		require.Equal(t, "c1", conf["x-custom"])
		require.NotContains(t, conf, "x-api-key")
		require.Equal(t, m[2], conf["run_id"])
		require.Equal(t, "echo", conf["graph_id"])
		require.Equal(t, graphserver.ThreadIdle, e.threadStatus(t, tid))

		// join of a finished run: the thread's values.
		require.JSONEq(t, `{"x":1}`, e.call(t, "GET", "/threads/"+tid+"/runs/"+m[2]+"/join", "", 200))
	})
	t.Run("Error", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		tid := e.thread(t)
		out := e.call(t, "POST", "/threads/"+tid+"/runs/wait", `{"assistant_id":"fail","input":{}}`, 200)
		require.JSONEq(t, `{"__error__":{"error":"ValueError","message":"boom"}}`, out)
		require.Equal(t, graphserver.ThreadError, e.threadStatus(t, tid))
	})
	t.Run("Interrupt", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		tid := e.thread(t)
		out := e.call(t, "POST", "/threads/"+tid+"/runs/wait", `{"assistant_id":"interrupt","input":{"a":1}}`, 200)
		require.JSONEq(t, `{"__interrupt__":[{"value":{"question":"approve?"},"id":"interrupt-1"}]}`, out)
		var th graphserver.Thread
		require.NoError(t, json.Unmarshal([]byte(e.call(t, "GET", "/threads/"+tid, "", 200)), &th))
		require.Equal(t, graphserver.ThreadInterrupted, th.Status)
		require.Len(t, th.Interrupts, 1)
		out = e.call(t, "POST", "/threads/"+tid+"/runs/wait", `{"assistant_id":"interrupt","command":{"resume":"ok"}}`, 200)
		require.JSONEq(t, `{"answer":"ok"}`, out)
		require.Equal(t, graphserver.ThreadIdle, e.threadStatus(t, tid))
	})
	t.Run("StatelessDelete", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		resp := e.do(t, t.Context(), "POST", "/runs/wait", `{"assistant_id":"echo","input":{"s":1}}`)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.JSONEq(t, `{"s":1}`, string(b))
		m := locationRE.FindStringSubmatch(resp.Header.Get("Content-Location"))
		require.NotNil(t, m)
		e.call(t, "GET", "/threads/"+m[1], "", 404)
	})
	t.Run("StatelessKeep", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		resp := e.do(t, t.Context(), "POST", "/runs/wait", `{"assistant_id":"echo","input":{"s":1},"on_completion":"keep","metadata":{"k":"v"}}`)
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		m := locationRE.FindStringSubmatch(resp.Header.Get("Content-Location"))
		require.NotNil(t, m)
		var th graphserver.Thread
		require.NoError(t, json.Unmarshal([]byte(e.call(t, "GET", "/threads/"+m[1], "", 200)), &th))
		require.Equal(t, graphserver.ThreadIdle, th.Status)
		require.Equal(t, "v", th.Metadata["k"])
		require.Equal(t, "echo", th.Metadata["graph_id"])
		require.JSONEq(t, `{"s":1}`, string(th.Values))
		require.Equal(t, graphserver.RunSuccess, e.runStatus(t, m[1], m[2]))
	})
	t.Run("DisconnectCancels", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		tid := e.thread(t)
		ctx, cancel := context.WithCancel(t.Context())
		resp := e.do(t, ctx, "POST", "/threads/"+tid+"/runs/wait", `{"assistant_id":"block","input":{"a":1},"on_disconnect":"cancel"}`)
		m := locationRE.FindStringSubmatch(resp.Header.Get("Content-Location"))
		require.NotNil(t, m)
		e.started(t)
		cancel()
		resp.Body.Close()
		e.call(t, "GET", "/threads/"+tid+"/runs/"+m[2]+"/join", "", 200)
		require.Equal(t, graphserver.RunInterrupted, e.runStatus(t, tid, m[2]))
	})
	t.Run("KeepAlive", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{http: httpapi.Options{HeartbeatInterval: 5 * time.Millisecond}})
		tid := e.thread(t)
		resp := e.do(t, t.Context(), "POST", "/threads/"+tid+"/runs/wait", `{"assistant_id":"block","input":{"a":1}}`)
		defer resp.Body.Close()
		e.started(t)
		buf := make([]byte, 1)
		_, err := io.ReadFull(resp.Body, buf)
		require.NoError(t, err)
		require.Equal(t, "\n", string(buf))
		e.block.Release()
		rest, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.JSONEq(t, `{"done":true}`, strings.TrimSpace(string(rest)))
	})
}

func TestRunsCreateValidation(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, runEnvOptions{})
	tid := e.thread(t)
	for _, c := range []struct {
		name, path, body string
		status           int
		detail           string
	}{
		{"NoAssistant", "/threads/" + tid + "/runs", `{}`, 422, "assistant_id is required."},
		{"UnknownAssistant", "/threads/" + tid + "/runs", `{"assistant_id":"` + missingID + `"}`, 404, ""},
		{"BadMultitask", "/threads/" + tid + "/runs", `{"assistant_id":"echo","multitask_strategy":"queue"}`, 422, ""},
		{"BadStreamMode", "/threads/" + tid + "/runs", `{"assistant_id":"echo","stream_mode":"everything"}`, 422, ""},
		{"ConfigurableAndContext", "/threads/" + tid + "/runs", `{"assistant_id":"echo","config":{"configurable":{"a":1}},"context":{"b":2}}`, 400, ""},
		{"ResumeStateless", "/runs", `{"assistant_id":"echo","command":{"resume":1}}`, 400, "You must provide a thread_id when resuming."},
		{"MissingThread", "/threads/" + missingID + "/runs", `{"assistant_id":"echo"}`, 404, "Thread or assistant not found."},
		{"BadThreadID", "/threads/nope/runs", `{"assistant_id":"echo"}`, 422, ""},
		{"WebhooksDisabled", "/threads/" + tid + "/runs", `{"assistant_id":"echo","webhook":"https://example.com/h"}`, 422, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := e.call(t, "POST", c.path, c.body, c.status)
			if c.detail != "" {
				require.JSONEq(t, `{"detail":"`+c.detail+`"}`, body)
			}
		})
	}
	t.Run("IfNotExistsCreate", func(t *testing.T) {
		newID := "70000000-0000-4000-8000-0000000000aa"
		out := e.call(t, "POST", "/threads/"+newID+"/runs/wait", `{"assistant_id":"echo","input":{"n":1},"if_not_exists":"create"}`, 200)
		require.JSONEq(t, `{"n":1}`, out)
		require.Equal(t, graphserver.ThreadIdle, e.threadStatus(t, newID))
	})
}

func TestRunsStream(t *testing.T) {
	t.Parallel()
	t.Run("Frames", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		tid := e.thread(t)
		resp := e.do(t, t.Context(), "POST", "/threads/"+tid+"/runs/stream",
			`{"assistant_id":"parts","input":{"p":1},"stream_mode":["custom","values","updates"],"stream_subgraphs":true}`)
		defer resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
		require.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
		require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
		m := locationRE.FindStringSubmatch(resp.Header.Get("Content-Location"))
		require.NotNil(t, m)
		require.Equal(t, resp.Header.Get("Content-Location")+"/stream", resp.Header.Get("Location"))
		evs := newSSEReader(resp.Body).all()
		require.Equal(t, []string{"metadata", "custom", "custom", "custom", "updates", "values|child:1", "values"}, names(evs))
		require.JSONEq(t, `{"run_id":"`+m[2]+`","attempt":1}`, evs[0].Data)
		for i, ev := range evs {
			require.Equal(t, strings.TrimSpace(ev.ID), ev.ID)
			require.Equal(t, i, mustAtoi(t, ev.ID))
		}
		require.JSONEq(t, `{"p":1}`, evs[len(evs)-1].Data)
	})
	t.Run("Error", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		resp := e.do(t, t.Context(), "POST", "/runs/stream", `{"assistant_id":"fail","input":{"a":1}}`)
		defer resp.Body.Close()
		require.Equal(t, "/runs/", resp.Header.Get("Content-Location")[:6])
		evs := newSSEReader(resp.Body).all()
		require.Equal(t, []string{"metadata", "values", "error"}, names(evs))
		require.JSONEq(t, `{"error":"ValueError","message":"boom"}`, evs[2].Data)
	})
	t.Run("Heartbeat", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{http: httpapi.Options{HeartbeatInterval: 5 * time.Millisecond}})
		tid := e.thread(t)
		resp := e.do(t, t.Context(), "POST", "/threads/"+tid+"/runs/stream", `{"assistant_id":"block","input":{"a":1}}`)
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		e.started(t)
		for beats := 0; beats < 2; {
			line, err := br.ReadString('\n')
			require.NoError(t, err)
			if line == ": heartbeat\n" {
				beats++
			}
		}
		e.block.Release()
		rest := newSSEReader(br).all()
		require.Equal(t, "values", rest[len(rest)-1].Event)
	})
	t.Run("ResumeMidRun", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		tid := e.thread(t)
		ctx, cancel := context.WithCancel(t.Context())
		resp := e.do(t, ctx, "POST", "/threads/"+tid+"/runs/stream", `{"assistant_id":"block","input":{"a":1},"stream_resumable":true}`)
		loc := resp.Header.Get("Location")
		r := newSSEReader(resp.Body)
		first, _ := r.next()
		second, _ := r.next()
		require.Equal(t, []string{"metadata", "values"}, []string{first.Event, second.Event})
		cancel() // the client drops the connection; on_disconnect continue keeps the run
		resp.Body.Close()
		e.started(t)

		resp2 := e.do(t, t.Context(), "GET", loc, "", "Last-Event-ID", second.ID)
		defer resp2.Body.Close()
		require.Equal(t, 200, resp2.StatusCode)
		e.block.Release()
		rest := newSSEReader(resp2.Body).all()
		require.Equal(t, []string{"values"}, names(rest))
		require.Equal(t, "2", rest[0].ID)
		require.JSONEq(t, `{"done":true}`, rest[0].Data)
	})
	t.Run("ResumeAfterCompletion", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		resp := e.do(t, t.Context(), "POST", "/runs/stream", `{"assistant_id":"parts","input":{"p":1},"stream_mode":["custom","values"],"stream_resumable":true}`)
		loc := resp.Header.Get("Location")
		require.Regexp(t, `^/runs/[0-9a-f-]+/stream$`, loc)
		orig := newSSEReader(resp.Body).all()
		resp.Body.Close()
		require.Len(t, orig, 5)

		for _, last := range []string{"-1", "-"} {
			resp := e.do(t, t.Context(), "GET", loc, "", "Last-Event-ID", last)
			replay := newSSEReader(resp.Body).all()
			resp.Body.Close()
			require.Equal(t, orig, replay)
		}
		resp = e.do(t, t.Context(), "GET", loc+"?stream_mode=values", "", "Last-Event-ID", "0")
		filtered := newSSEReader(resp.Body).all()
		resp.Body.Close()
		require.Equal(t, []string{"values"}, names(filtered))
		require.Equal(t, "4", filtered[0].ID)
	})
	t.Run("TwoSubscribers", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		tid := e.thread(t)
		run := e.createRun(t, tid, `{"assistant_id":"block","input":{"a":1},"stream_mode":["values","updates"]}`)
		e.started(t)
		path := "/threads/" + tid + "/runs/" + run.RunID + "/stream"
		var wg sync.WaitGroup
		got := make([][]sseEvent, 2)
		ready := make(chan struct{}, 2)
		for i := range 2 {
			resp := e.do(t, t.Context(), "GET", path, "", "Last-Event-ID", "-1")
			wg.Go(func() {
				defer resp.Body.Close()
				r := newSSEReader(resp.Body)
				ev, _ := r.next()
				got[i] = append(got[i], ev)
				ready <- struct{}{}
				got[i] = append(got[i], r.all()...)
			})
		}
		<-ready
		<-ready
		e.block.Release()
		wg.Wait()
		require.Equal(t, got[0], got[1])
		require.Equal(t, []string{"metadata", "values", "values"}, names(got[0]))
	})
	t.Run("DisconnectCancels", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		tid := e.thread(t)
		ctx, cancel := context.WithCancel(t.Context())
		resp := e.do(t, ctx, "POST", "/threads/"+tid+"/runs/stream", `{"assistant_id":"block","input":{"a":1},"on_disconnect":"cancel"}`)
		m := locationRE.FindStringSubmatch(resp.Header.Get("Content-Location"))
		r := newSSEReader(resp.Body)
		_, _ = r.next()
		e.started(t)
		cancel()
		resp.Body.Close()
		// join waits for the run to end: it ends only because it was cancelled.
		e.call(t, "GET", "/threads/"+tid+"/runs/"+m[2]+"/join", "", 200)
		require.Equal(t, graphserver.RunInterrupted, e.runStatus(t, tid, m[2]))
	})
	t.Run("JoinStreamCancelOnDisconnect", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		tid := e.thread(t)
		run := e.createRun(t, tid, `{"assistant_id":"block","input":{"a":1}}`)
		e.started(t)
		ctx, cancel := context.WithCancel(t.Context())
		resp := e.do(t, ctx, "GET", "/runs/"+run.RunID+"/stream?cancel_on_disconnect=1", "", "Last-Event-ID", "-1")
		require.Equal(t, "/threads/"+tid+"/runs/"+run.RunID, resp.Header.Get("Content-Location"))
		require.Equal(t, "/runs/"+run.RunID+"/stream", resp.Header.Get("Location"))
		_, _ = newSSEReader(resp.Body).next()
		cancel()
		resp.Body.Close()
		e.call(t, "GET", "/threads/"+tid+"/runs/"+run.RunID+"/join", "", 200)
		require.Equal(t, graphserver.RunInterrupted, e.runStatus(t, tid, run.RunID))
	})
	t.Run("JoinMissing", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		e.call(t, "GET", "/runs/"+missingID+"/stream", "", 404)
	})
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	require.NoError(t, json.Unmarshal([]byte(s), &n))
	return n
}

func TestRunsMultitask(t *testing.T) {
	t.Parallel()
	t.Run("Reject", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		tid := e.thread(t)
		e.createRun(t, tid, `{"assistant_id":"block","input":{"a":1}}`)
		body := e.call(t, "POST", "/threads/"+tid+"/runs", `{"assistant_id":"echo","multitask_strategy":"reject"}`, 409)
		require.JSONEq(t, `{"detail":"`+graphserver.MultitaskRejectMessage+`"}`, body)
		require.Equal(t, graphserver.ThreadBusy, e.threadStatus(t, tid))
	})
	t.Run("Enqueue", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		tid := e.thread(t)
		first := e.createRun(t, tid, `{"assistant_id":"block","input":{"a":1}}`)
		e.started(t)
		second := e.createRun(t, tid, `{"assistant_id":"echo","input":{"b":2}}`)
		require.Equal(t, graphserver.MultitaskEnqueue, second.MultitaskStrategy)
		require.Equal(t, graphserver.RunPending, e.runStatus(t, tid, second.RunID))
		e.block.Release()
		require.JSONEq(t, `{"b":2}`, e.call(t, "GET", "/threads/"+tid+"/runs/"+second.RunID+"/join", "", 200))
		require.Equal(t, graphserver.RunSuccess, e.runStatus(t, tid, first.RunID))
		require.Equal(t, graphserver.ThreadIdle, e.threadStatus(t, tid))
	})
	for _, strategy := range []string{"interrupt", "rollback"} {
		t.Run(strategy, func(t *testing.T) {
			t.Parallel()
			e := newRunEnv(t, runEnvOptions{})
			tid := e.thread(t)
			first := e.createRun(t, tid, `{"assistant_id":"block","input":{"a":1}}`)
			e.started(t)
			second := e.createRun(t, tid, `{"assistant_id":"echo","input":{"b":2},"multitask_strategy":"`+strategy+`"}`)
			require.JSONEq(t, `{"b":2}`, e.call(t, "GET", "/threads/"+tid+"/runs/"+second.RunID+"/join", "", 200))
			if strategy == "interrupt" {
				require.Equal(t, graphserver.RunInterrupted, e.runStatus(t, tid, first.RunID))
			} else {
				e.call(t, "GET", "/threads/"+tid+"/runs/"+first.RunID, "", 404)
			}
			require.Equal(t, graphserver.ThreadIdle, e.threadStatus(t, tid))
		})
	}
	t.Run("RollbackPending", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		tid := e.thread(t)
		e.createRun(t, tid, `{"assistant_id":"block","input":{"a":1}}`)
		e.started(t)
		queued := e.createRun(t, tid, `{"assistant_id":"echo","input":{"q":1}}`)
		e.createRun(t, tid, `{"assistant_id":"echo","input":{"b":2},"multitask_strategy":"rollback"}`)
		e.call(t, "GET", "/threads/"+tid+"/runs/"+queued.RunID, "", 404)
	})
}

func TestRunsCancel(t *testing.T) {
	t.Parallel()
	for _, action := range []string{"interrupt", "rollback"} {
		t.Run("Pending/"+action, func(t *testing.T) {
			t.Parallel()
			e := newRunEnv(t, runEnvOptions{})
			tid := e.thread(t)
			run := e.createRun(t, tid, `{"assistant_id":"echo","input":{"a":1},"after_seconds":3600}`)
			require.Equal(t, graphserver.RunPending, e.runStatus(t, tid, run.RunID))
			require.Equal(t, graphserver.ThreadBusy, e.threadStatus(t, tid))
			e.call(t, "POST", "/threads/"+tid+"/runs/"+run.RunID+"/cancel?action="+action, "", 202)
			if action == "interrupt" {
				require.Equal(t, graphserver.RunInterrupted, e.runStatus(t, tid, run.RunID))
			} else {
				e.call(t, "GET", "/threads/"+tid+"/runs/"+run.RunID, "", 404)
			}
			require.Equal(t, graphserver.ThreadIdle, e.threadStatus(t, tid))
		})
		t.Run("Running/"+action, func(t *testing.T) {
			t.Parallel()
			e := newRunEnv(t, runEnvOptions{})
			tid := e.thread(t)
			run := e.createRun(t, tid, `{"assistant_id":"block","input":{"a":1}}`)
			e.started(t)
			require.Equal(t, graphserver.RunRunning, e.runStatus(t, tid, run.RunID))
			e.call(t, "DELETE", "/threads/"+tid+"/runs/"+run.RunID, "", 409)
			if action == "interrupt" {
				out := e.call(t, "POST", "/threads/"+tid+"/runs/"+run.RunID+"/cancel?wait=1&action=interrupt", "", 200)
				require.JSONEq(t, `{"a":1}`, out)
				require.Equal(t, graphserver.RunInterrupted, e.runStatus(t, tid, run.RunID))
				e.call(t, "DELETE", "/threads/"+tid+"/runs/"+run.RunID, "", 204)
				e.call(t, "GET", "/threads/"+tid+"/runs/"+run.RunID, "", 404)
				return
			}
			resp := e.do(t, t.Context(), "GET", "/threads/"+tid+"/runs/"+run.RunID+"/stream", "", "Last-Event-ID", "-1")
			defer resp.Body.Close()
			r := newSSEReader(resp.Body)
			_, _ = r.next()
			e.call(t, "POST", "/threads/"+tid+"/runs/"+run.RunID+"/cancel?action=rollback", "", 202)
			rest := r.all() // the stream ends with the run, without an error event
			require.Equal(t, []string{"values"}, names(rest))
			e.call(t, "GET", "/threads/"+tid+"/runs/"+run.RunID, "", 404)
			var th graphserver.Thread
			require.NoError(t, json.Unmarshal([]byte(e.call(t, "GET", "/threads/"+tid, "", 200)), &th))
			require.Equal(t, graphserver.ThreadIdle, th.Status)
			require.Equal(t, "null", string(th.Values))
		})
	}
	t.Run("Bulk", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		tid := e.thread(t)
		a := e.createRun(t, tid, `{"assistant_id":"echo","after_seconds":3600}`)
		b := e.createRun(t, tid, `{"assistant_id":"echo","after_seconds":3600}`)
		e.call(t, "POST", "/runs/cancel", `{"thread_id":"`+tid+`"}`, 422)
		e.call(t, "POST", "/runs/cancel", `{"status":"done"}`, 422)
		e.call(t, "POST", "/runs/cancel", `{"thread_id":"`+tid+`","run_ids":["`+a.RunID+`"],"status":"all"}`, 422)
		e.call(t, "POST", "/runs/cancel", `{"thread_id":"`+tid+`","run_ids":["`+missingID+`"]}`, 404)
		e.call(t, "POST", "/runs/cancel", `{"thread_id":"`+tid+`","run_ids":["`+a.RunID+`"]}`, 204)
		require.Equal(t, graphserver.RunInterrupted, e.runStatus(t, tid, a.RunID))
		require.Equal(t, graphserver.RunPending, e.runStatus(t, tid, b.RunID))
		e.call(t, "POST", "/runs/cancel?action=rollback", `{"status":"pending"}`, 204)
		e.call(t, "GET", "/threads/"+tid+"/runs/"+b.RunID, "", 404)
		e.call(t, "POST", "/runs/cancel", `{"status":"all"}`, 404)
		require.Equal(t, graphserver.ThreadIdle, e.threadStatus(t, tid))
	})
	t.Run("ListAndSelect", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		tid := e.thread(t)
		e.call(t, "POST", "/threads/"+tid+"/runs/wait", `{"assistant_id":"echo","input":{}}`, 200)
		e.call(t, "POST", "/threads/"+tid+"/runs/wait", `{"assistant_id":"echo","input":{}}`, 200)
		var runs []map[string]any
		require.NoError(t, json.Unmarshal([]byte(e.call(t, "GET", "/threads/"+tid+"/runs?limit=1&select=run_id&select=status", "", 200)), &runs))
		require.Len(t, runs, 1)
		require.Len(t, runs[0], 2)
		require.Equal(t, "success", runs[0]["status"])
		e.call(t, "GET", "/threads/"+tid+"/runs?status=done", "", 422)
		e.call(t, "GET", "/threads/"+missingID+"/runs", "", 404)
		require.NoError(t, json.Unmarshal([]byte(e.call(t, "GET", "/threads/"+tid+"/runs?status=pending", "", 200)), &runs))
		require.Empty(t, runs)
	})
	t.Run("Batch", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		var runs []graphserver.Run
		require.NoError(t, json.Unmarshal([]byte(e.call(t, "POST", "/runs/batch",
			`[{"assistant_id":"echo","input":{"i":1}},{"assistant_id":"echo","input":{"i":2},"on_completion":"keep"}]`, 200)), &runs))
		require.Len(t, runs, 2)
		require.True(t, runs[0].Kwargs.Temporary)
		require.False(t, runs[1].Kwargs.Temporary)
		require.JSONEq(t, `{"i":2}`, e.call(t, "GET", "/threads/"+runs[1].ThreadID+"/runs/"+runs[1].RunID+"/join", "", 200))
		e.call(t, "POST", "/runs/batch", `[]`, 422)
		e.call(t, "POST", "/runs/batch", `[{"assistant_id":"echo"},{"assistant_id":"echo","stream_mode":"x"}]`, 422)
	})
}

func TestRunsLifecycle(t *testing.T) {
	t.Parallel()
	t.Run("CrashRecovery", func(t *testing.T) {
		t.Parallel()
		// A run claimed by a worker that died (its lease lapsed) is swept back
		// to the queue and run again, with attempt 2.
		e := newRunEnv(t, runEnvOptions{noStart: true})
		tid := e.thread(t)
		run := e.createRun(t, tid, `{"assistant_id":"echo","input":{"c":1}}`)
		now := time.Now()
		claimed, err := e.db.ClaimRun(t.Context(), "dead-worker", now.Add(time.Second), now.Add(-time.Second))
		require.NoError(t, err)
		require.Equal(t, run.RunID, claimed.Run.RunID)
		require.Equal(t, graphserver.RunRunning, e.runStatus(t, tid, run.RunID))

		resp := e.do(t, t.Context(), "GET", "/threads/"+tid+"/runs/"+run.RunID+"/stream", "", "Last-Event-ID", "-1")
		defer resp.Body.Close()
		require.NoError(t, e.srv.Start(t.Context()))
		evs := newSSEReader(resp.Body).all()
		// The log of this process starts at creation (attempt 1); the retry
		// announces itself with attempt 2.
		require.Equal(t, []string{"metadata", "metadata", "values"}, names(evs))
		require.JSONEq(t, `{"run_id":"`+run.RunID+`","attempt":2}`, evs[1].Data)
		require.Equal(t, graphserver.RunSuccess, e.runStatus(t, tid, run.RunID))
	})
	t.Run("MaxAttempts", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{noStart: true, server: func(o *graphserver.Options) { o.MaxAttempts = 1 }})
		tid := e.thread(t)
		run := e.createRun(t, tid, `{"assistant_id":"echo","input":{"c":1}}`)
		now := time.Now()
		_, err := e.db.ClaimRun(t.Context(), "dead-worker", now.Add(time.Second), now.Add(-time.Second))
		require.NoError(t, err)
		require.NoError(t, e.srv.Start(t.Context()))
		out := e.call(t, "GET", "/threads/"+tid+"/runs/"+run.RunID+"/join", "", 200)
		require.Contains(t, out, "MaxAttemptsExceeded")
		require.Equal(t, graphserver.RunError, e.runStatus(t, tid, run.RunID))
		require.Equal(t, graphserver.ThreadError, e.threadStatus(t, tid))
	})
	t.Run("Timeout", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{server: func(o *graphserver.Options) { o.MaxRunTime = 2 * time.Second }})
		tid := e.thread(t)
		resp := e.do(t, t.Context(), "POST", "/threads/"+tid+"/runs/stream", `{"assistant_id":"block","input":{"a":1}}`)
		defer resp.Body.Close()
		evs := newSSEReader(resp.Body).all()
		require.Equal(t, []string{"metadata", "values", "error"}, names(evs))
		require.JSONEq(t, `{"error":"TimeoutError","message":"The run exceeded the maximum run time."}`, evs[2].Data)
		m := locationRE.FindStringSubmatch(resp.Header.Get("Content-Location"))
		require.Equal(t, graphserver.RunTimeout, e.runStatus(t, tid, m[2]))
		require.Equal(t, graphserver.ThreadError, e.threadStatus(t, tid))
	})
	t.Run("CloseReleasesRuns", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		tid := e.thread(t)
		run := e.createRun(t, tid, `{"assistant_id":"block","input":{"a":1}}`)
		e.started(t)
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		require.ErrorIs(t, e.srv.Close(ctx), context.DeadlineExceeded)
		got, err := e.db.GetRun(t.Context(), tid, run.RunID, nil)
		require.NoError(t, err)
		require.Equal(t, graphserver.RunPending, got.Status)
		_, err = e.srv.CreateRun(t.Context(), tid, graphserver.RunCreate{AssistantID: "echo"})
		require.Equal(t, graphserver.EUNAVAILABLE, graphserver.ErrorCode(err))
	})
}

func TestRunsWebhook(t *testing.T) {
	t.Parallel()
	type delivery struct {
		body []byte
		sig  string
		id   string
	}
	got := make(chan delivery, 10)
	var mu sync.Mutex
	calls := 0
	var ids []string // the X-Webhook-Id of every attempt
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls++
		n := calls
		ids = append(ids, r.Header.Get(graphserver.WebhookIDHeader))
		mu.Unlock()
		if n <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		got <- delivery{body: b, sig: r.Header.Get("X-Webhook-Signature"), id: r.Header.Get(graphserver.WebhookIDHeader)}
	}))
	t.Cleanup(recv.Close)

	e := newRunEnv(t, runEnvOptions{server: func(o *graphserver.Options) {
		// The receiver listens on 127.0.0.1: private addresses are opted in.
		o.Webhooks = graphserver.WebhookOptions{Sender: httpapi.NewWebhookSender(httpapi.WebhookSenderOptions{AllowPrivate: true}),
			Secret: "s3cret", Backoff: 5 * time.Millisecond, Policy: graphserver.WebhookPolicy{AllowPrivate: true}}
	}})
	tid := e.thread(t)
	out := e.call(t, "POST", "/threads/"+tid+"/runs/wait", `{"assistant_id":"echo","input":{"w":1},"webhook":"`+recv.URL+`/hook"}`, 200)
	require.JSONEq(t, `{"w":1}`, out)
	var d delivery
	select {
	case d = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook delivered")
	}
	mu.Lock()
	require.Equal(t, 3, calls)
	// At least once, de-duplicable: every attempt carries the same id.
	require.NotEmpty(t, ids[0])
	require.Equal(t, []string{ids[0], ids[0], ids[0]}, ids)
	mu.Unlock()
	var body map[string]any
	require.NoError(t, json.Unmarshal(d.body, &body))
	require.Equal(t, "success", body["status"])
	require.Equal(t, tid, body["thread_id"])
	require.Equal(t, map[string]any{"w": float64(1)}, body["values"])
	for _, k := range []string{"run_id", "kwargs", "run_started_at", "run_ended_at", "webhook_sent_at"} {
		require.Contains(t, body, k)
	}
	require.NotContains(t, body, "error")
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write(d.body)
	require.Equal(t, "sha256="+hex.EncodeToString(mac.Sum(nil)), d.sig)

	// A pending run cancelled before it ever ran still reports its end.
	run := e.createRun(t, tid, `{"assistant_id":"echo","after_seconds":3600,"webhook":"`+recv.URL+`/hook"}`)
	e.call(t, "POST", "/threads/"+tid+"/runs/"+run.RunID+"/cancel", "", 202)
	select {
	case d = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook delivered for the cancelled run")
	}
	body = nil
	require.NoError(t, json.Unmarshal(d.body, &body))
	require.Equal(t, run.RunID, body["run_id"])
	require.Equal(t, "interrupted", body["status"])
	require.Nil(t, body["run_started_at"])
	require.NotEmpty(t, d.id)
	require.NotEqual(t, ids[0], d.id, "each run's delivery has its own id")

	t.Run("Policy", func(t *testing.T) {
		e := newRunEnv(t, runEnvOptions{server: func(o *graphserver.Options) {
			o.Webhooks = graphserver.WebhookOptions{Sender: httpapi.NewWebhookSender(httpapi.WebhookSenderOptions{}),
				Policy: graphserver.WebhookPolicy{HTTPSOnly: true, AllowedHosts: []string{"*.example.com", "10.0.0.1", "169.254.169.254"}}}
		}})
		tid := e.thread(t)
		for _, u := range []string{"http://hooks.example.com/x", "https://evil.com/x", "https://10.0.0.1/x", "https://169.254.169.254/x", "/relative"} {
			e.call(t, "POST", "/threads/"+tid+"/runs", `{"assistant_id":"echo","webhook":"`+u+`"}`, 422)
		}
	})
	t.Run("PrivateRefusedByDefault", func(t *testing.T) {
		e := newRunEnv(t, runEnvOptions{server: func(o *graphserver.Options) {
			o.Webhooks = graphserver.WebhookOptions{Sender: httpapi.NewWebhookSender(httpapi.WebhookSenderOptions{})}
		}})
		tid := e.thread(t)
		for _, u := range []string{recv.URL + "/hook", "http://localhost:9/x", "http://[::1]/x", "http://192.168.1.1/x", "http://169.254.169.254/latest"} {
			e.call(t, "POST", "/threads/"+tid+"/runs", `{"assistant_id":"echo","webhook":"`+u+`"}`, 422)
		}
		// The sender refuses them too, whatever the policy let through.
		status, err := httpapi.NewWebhookSender(httpapi.WebhookSenderOptions{}).Send(t.Context(), recv.URL+"/hook", []byte(`{}`), nil)
		require.Error(t, err)
		require.Zero(t, status)
	})
}

func TestRunsRequestChecks(t *testing.T) {
	t.Parallel()
	t.Run("NullCommandFields", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		// RemoteGraph sends a whole Command: null fields are absent.
		out := e.call(t, "POST", "/runs/wait", `{"assistant_id":"echo","input":{"s":1},"command":{"update":null,"resume":null,"goto":null,"graph":null}}`, 200)
		require.JSONEq(t, `{"s":1}`, out)
		tid := e.thread(t)
		out = e.call(t, "POST", "/threads/"+tid+"/runs/wait", `{"assistant_id":"echo","command":{"update":null,"resume":"ok","goto":null}}`, 200)
		require.JSONEq(t, `{"resumed":"ok"}`, out)
	})
	t.Run("BatchAllOrNothing", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		e.call(t, "POST", "/runs/batch", `[{"assistant_id":"echo","after_seconds":3600,"on_completion":"keep"},{"assistant_id":"`+missingID+`"}]`, 404)
		e.call(t, "POST", "/runs/batch", `[{"assistant_id":"echo","after_seconds":3600,"on_completion":"keep"},{"assistant_id":"nograph"}]`, 404)
		require.JSONEq(t, `[]`, e.call(t, "POST", "/threads/search", `{}`, 200))
	})
	t.Run("BulkCancelIDs", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		tid := e.thread(t)
		run := e.createRun(t, tid, `{"assistant_id":"echo","after_seconds":3600}`)
		e.call(t, "POST", "/runs/cancel", `{"thread_id":"nope","run_ids":["`+run.RunID+`"]}`, 422)
		e.call(t, "POST", "/runs/cancel", `{"thread_id":"`+tid+`","run_ids":["nope"]}`, 422)
		e.call(t, "POST", "/runs/cancel", `{"thread_id":"`+strings.ToUpper(tid)+`","run_ids":["`+strings.ToUpper(run.RunID)+`"]}`, 204)
		require.Equal(t, graphserver.RunInterrupted, e.runStatus(t, tid, run.RunID))
	})
	t.Run("AfterSecondsBounds", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, runEnvOptions{})
		tid := e.thread(t)
		for _, v := range []string{"-1", "1e12", "31536001"} {
			e.call(t, "POST", "/threads/"+tid+"/runs", `{"assistant_id":"echo","after_seconds":`+v+`}`, 422)
		}
		e.call(t, "POST", "/threads/"+tid+"/runs", `{"assistant_id":"echo","after_seconds":31536000}`, 200)
	})
}

// readAll reads an SSE body to its end (or failure), bounded in time so that
// a stream that never ends fails the test instead of hanging it.
func readAllSSE(t *testing.T, body io.ReadCloser) ([]sseEvent, error) {
	t.Helper()
	type result struct {
		evs []sseEvent
		err error
	}
	done := make(chan result, 1)
	go func() {
		r := newSSEReader(body)
		evs := r.all()
		done <- result{evs, r.sc.Err()}
	}()
	select {
	case res := <-done:
		return res.evs, res.err
	case <-time.After(10 * time.Second):
		body.Close()
		t.Fatal("stream did not end")
		return nil, nil
	}
}

// waitBody reads a /join or /wait body, bounded in time.
func waitBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	done := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(resp.Body)
		done <- b
	}()
	select {
	case b := <-done:
		return strings.TrimSpace(string(b))
	case <-time.After(10 * time.Second):
		resp.Body.Close()
		t.Fatal("wait did not return")
		return ""
	}
}

func TestRunsThreadDeletion(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		del  func(e *runEnv, t *testing.T, tid string)
	}{
		{"DeleteThread", func(e *runEnv, t *testing.T, tid string) { e.call(t, "DELETE", "/threads/"+tid, "", 204) }},
		{"Prune", func(e *runEnv, t *testing.T, tid string) {
			require.JSONEq(t, `{"pruned_count":1}`, e.call(t, "POST", "/threads/prune", `{"thread_ids":["`+tid+`"]}`, 200))
		}},
		{"DeleteAssistant", func(e *runEnv, t *testing.T, tid string) {
			e.call(t, "DELETE", "/assistants/"+graphserver.SystemAssistantID("block")+"?delete_threads=true", "", 204)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// /join answers its headers with the first keep-alive.
			e := newRunEnv(t, runEnvOptions{http: httpapi.Options{HeartbeatInterval: 10 * time.Millisecond}})
			tid := e.thread(t)
			running := e.createRun(t, tid, `{"assistant_id":"block","input":{"a":1}}`)
			e.started(t)
			queued := e.createRun(t, tid, `{"assistant_id":"block","input":{"b":2}}`)

			stream := e.do(t, t.Context(), "GET", "/threads/"+tid+"/runs/"+running.RunID+"/stream", "", "Last-Event-ID", "-1")
			defer stream.Body.Close()
			r := newSSEReader(stream.Body)
			first, _ := r.next()
			require.Equal(t, "metadata", first.Event)
			join := e.do(t, t.Context(), "GET", "/threads/"+tid+"/runs/"+queued.RunID+"/join", "", "")
			defer join.Body.Close()

			c.del(e, t, tid)

			select {
			case id := <-e.block.Stopped:
				require.Equal(t, running.RunID, id)
			case <-time.After(10 * time.Second):
				t.Fatal("the running run was not cancelled")
			}
			_, err := readAllSSE(t, stream.Body)
			require.NoError(t, err)
			require.JSONEq(t, `{}`, waitBody(t, join))
			e.call(t, "GET", "/threads/"+tid, "", 404)
		})
	}
}

// TestRunsOtherProcess joins runs that another process (a second Server on
// the same database) executes or executed.
func TestRunsOtherProcess(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (exec, other *runEnv) {
		t.Helper()
		// The executing process sees a cancellation recorded by the other
		// one at its next renewal (every lease/3); the lease is long enough
		// that a loaded machine never lets it lapse by accident.
		exec = newRunEnv(t, runEnvOptions{server: func(o *graphserver.Options) { o.LeaseDuration = 2 * time.Second }})
		db := exec.db
		opts := graphserver.Options{Storage: db, PollInterval: 10 * time.Millisecond, Graphs: map[string]graphserver.Graph{
			"echo": graphtest.Echo{}, "fail": graphtest.Fail{}, "block": graphtest.NewBlocking()}}
		srv, err := graphserver.New(opts) // not started: it only serves joins
		require.NoError(t, err)
		ts := httptest.NewServer(httpapi.New(srv, httpapi.Options{HeartbeatInterval: 10 * time.Millisecond}))
		t.Cleanup(func() {
			ts.Close()
			require.NoError(t, srv.Close(context.Background()))
		})
		return exec, &runEnv{srv: srv, db: db, ts: ts}
	}
	t.Run("JoinRunning", func(t *testing.T) {
		t.Parallel()
		exec, other := setup(t)
		tid := exec.thread(t)
		run := exec.createRun(t, tid, `{"assistant_id":"block","input":{"a":1}}`)
		exec.started(t)
		base := "/threads/" + tid + "/runs/" + run.RunID
		stream := other.do(t, t.Context(), "GET", base+"/stream", "", "Last-Event-ID", "-1")
		defer stream.Body.Close()
		r := newSSEReader(stream.Body)
		first, _ := r.next()
		require.Equal(t, "metadata", first.Event)
		require.JSONEq(t, `{"run_id":"`+run.RunID+`","attempt":1}`, first.Data)
		join := other.do(t, t.Context(), "GET", base+"/join", "", "")
		defer join.Body.Close()

		exec.block.Release()
		require.JSONEq(t, `{"done":true}`, waitBody(t, join))
		rest, err := readAllSSE(t, stream.Body)
		require.NoError(t, err)
		require.Empty(t, rest)
	})
	t.Run("CancelWait", func(t *testing.T) {
		t.Parallel()
		exec, other := setup(t)
		tid := exec.thread(t)
		run := exec.createRun(t, tid, `{"assistant_id":"block","input":{"a":1}}`)
		exec.started(t)
		resp := other.do(t, t.Context(), "POST", "/threads/"+tid+"/runs/"+run.RunID+"/cancel?wait=1", "")
		defer resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
		require.JSONEq(t, `{"a":1}`, waitBody(t, resp))
		require.Equal(t, graphserver.RunInterrupted, exec.runStatus(t, tid, run.RunID))
	})
	t.Run("JoinFinishedFailed", func(t *testing.T) {
		t.Parallel()
		exec, other := setup(t)
		tid := exec.thread(t)
		exec.call(t, "POST", "/threads/"+tid+"/runs/wait", `{"assistant_id":"fail","input":{}}`, 200)
		var runs []graphserver.Run
		require.NoError(t, json.Unmarshal([]byte(exec.call(t, "GET", "/threads/"+tid+"/runs", "", 200)), &runs))
		require.Len(t, runs, 1)
		// The other process has no log of the run: metadata, then its error.
		stream := other.do(t, t.Context(), "GET", "/threads/"+tid+"/runs/"+runs[0].RunID+"/stream", "")
		defer stream.Body.Close()
		evs, err := readAllSSE(t, stream.Body)
		require.NoError(t, err)
		require.Equal(t, []string{"metadata", "error"}, names(evs))
		require.JSONEq(t, `{"run_id":"`+runs[0].RunID+`","attempt":1}`, evs[0].Data)
		require.JSONEq(t, `{"error":"ValueError","message":"boom"}`, evs[1].Data)
	})
}

// TestRunsReleasedStream: a stream whose run is released (server closing)
// breaks the connection instead of ending it, so that SDKs reconnect.
func TestRunsReleasedStream(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, runEnvOptions{})
	tid := e.thread(t)
	resp := e.do(t, t.Context(), "POST", "/threads/"+tid+"/runs/stream", `{"assistant_id":"block","input":{"a":1}}`)
	defer resp.Body.Close()
	r := newSSEReader(resp.Body)
	first, _ := r.next()
	require.Equal(t, "metadata", first.Event)
	e.started(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, e.srv.Close(ctx), context.DeadlineExceeded)
	evs, err := readAllSSE(t, resp.Body)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.NotContains(t, names(evs), "error")
}

// TestRunsRollbackAfterResume rolls back a run that resumed from an
// interrupt with a command update while it runs a later node: the thread's
// state afterwards is the state before the run (its pending writes on the
// checkpoint it resumed from are gone, the interrupt is back), and a run
// continuing the thread with input null does not see the rolled-back update.
func TestRunsRollbackAfterResume(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}, 4), make(chan struct{})
	g := graph.New(graph.Channels{"log": graph.AddMessages(), "note": graph.LastValue()})
	g.AddNode("ask", func(ctx context.Context, s graph.State) (any, error) {
		answer, err := graph.Interrupt(ctx, "ok?")
		if err != nil {
			return nil, err
		}
		return graph.Update{"note": answer}, nil
	})
	g.AddNode("slow", func(ctx context.Context, s graph.State) (any, error) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		return graph.Update{"note": "slow:" + s.String("note")}, nil
	})
	g.AddEdge(graph.Start, "ask").AddEdge("ask", "slow").AddEdge("slow", graph.End)
	compiled, err := g.Compile(graph.CompileOptions{Name: "resumer"})
	require.NoError(t, err)
	e := newRunEnv(t, runEnvOptions{server: func(o *graphserver.Options) { o.Graphs["resumer"] = compiled }})
	tid := e.thread(t)

	e.call(t, "POST", "/threads/"+tid+"/runs/wait", `{"assistant_id":"resumer","input":{"note":"start"}}`, 200)
	stateBefore := e.call(t, "GET", "/threads/"+tid+"/state", "", 200)
	threadBefore := e.call(t, "GET", "/threads/"+tid, "", 200)
	require.Contains(t, stateBefore, `"ok?"`)
	cpBefore, err := e.db.GetCheckpoint(t.Context(), tid, "", "")
	require.NoError(t, err)

	run := e.createRun(t, tid, `{"assistant_id":"resumer","command":{"update":{"note":"updated"},"resume":"yes"}}`)
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the resumed run did not reach slow")
	}
	e.call(t, "POST", "/threads/"+tid+"/runs/"+run.RunID+"/cancel?action=rollback&wait=1", "", 200)
	e.call(t, "GET", "/threads/"+tid+"/runs/"+run.RunID, "", 404)

	require.JSONEq(t, stateBefore, e.call(t, "GET", "/threads/"+tid+"/state", "", 200))
	cpAfter, err := e.db.GetCheckpoint(t.Context(), tid, "", "")
	require.NoError(t, err)
	require.Equal(t, cpBefore.CheckpointID, cpAfter.CheckpointID)
	require.ElementsMatch(t, cpBefore.PendingWrites, cpAfter.PendingWrites, "the run's command writes are gone")
	var before, after map[string]any
	require.NoError(t, json.Unmarshal([]byte(threadBefore), &before))
	require.NoError(t, json.Unmarshal([]byte(e.call(t, "GET", "/threads/"+tid, "", 200)), &after))
	for _, k := range []string{"status", "values", "interrupts"} {
		require.Equal(t, before[k], after[k], k)
	}

	// Continuing with input null does not apply the rolled-back command:
	// the graph stops at the same interrupt again.
	close(release)
	out := e.call(t, "POST", "/threads/"+tid+"/runs/wait", `{"assistant_id":"resumer","input":null}`, 200)
	require.Contains(t, out, `"__interrupt__"`)
	require.Contains(t, out, `"ok?"`)
	var th graphserver.Thread
	require.NoError(t, json.Unmarshal([]byte(e.call(t, "GET", "/threads/"+tid, "", 200)), &th))
	require.Equal(t, graphserver.ThreadInterrupted, th.Status)
	require.JSONEq(t, `{"log":[],"note":"start"}`, string(th.Values))
}
