package soaktest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/internal/sse"
	"github.com/graphserver/graphserver/sqlite"
)

var (
	seedFlag     = flag.Uint64("soak.seed", 0, "seed of the soak test's random choices (0: a new one, logged)")
	sessionsFlag = flag.Int("soak.sessions", 0, "runs the soak test streams at once (0: 400, 150 under -race)")
)

const (
	steps         = 4 // nodes of the "soak" graph, run in sequence
	customPerStep = 8 // custom events each of its nodes emits
	holdCustom    = 5 // custom events the "hold" graph emits before it waits to be cancelled
)

// modes are the stream modes every stream asks for.
var modes = []string{"values", "updates", "custom"}

// sessionCount is the number of runs streamed at once.
func sessionCount() int {
	switch {
	case *sessionsFlag > 0:
		return *sessionsFlag
	case raceEnabled:
		return 150
	default:
		return 400
	}
}

// TestSoak is issue 17's load and soak proof: hundreds of runs streamed at
// once over loopback HTTP, a share of the streams dropped mid-run and
// resumed with Last-Event-ID (the SDKs' reconnection), others joined by a
// second subscriber or joined after creation, some runs cancelled while
// running or while pending. Every stream must equal the full replay of its
// run's log (ids 0..n-1, no gap, no duplicate, same payloads), runs end with
// the status the contract gives them, and afterwards goroutines and file
// descriptors return to their baseline: while the server still runs, and
// exactly once server and storage are closed. It stops by itself; its
// timeouts only guard against a hang.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test skipped under -short; go test ./internal/soaktest/ runs it (so does .ci/run's go test -race ./...)")
	}
	t.Run("SQLite", func(t *testing.T) {
		soak(t, func(t *testing.T) backend {
			db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
			require.NoError(t, err)
			// A reader connection holds the database and its WAL open.
			readConns := max(sqlite.ReadConnsDefault, runtime.NumCPU())
			return backend{
				set:     func(o *graphserver.Options) { o.Storage = db },
				close:   db.Close,
				fdSlack: 2 * readConns,
			}
		})
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		soak(t, openPostgres)
	})
}

// backend is the storage a soak runs on.
type backend struct {
	set     func(*graphserver.Options) // puts the storage in the options
	close   func() error
	fdSlack int // descriptors its connection pool may keep open after a load
}

// soak runs the load on the storage open gives and checks it.
func soak(t *testing.T, open func(t *testing.T) backend) {
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (rerun with -soak.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	// Before anything is opened: what must remain once all is closed.
	goroutines0 := runtime.NumGoroutine()
	fds0, haveFDs := countFDs()

	be := open(t)
	opts := graphserver.Options{
		Graphs: graphs(),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	be.set(&opts)
	srv, err := graphserver.New(opts)
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	hs := httptest.NewServer(httpapi.New(srv, httpapi.Options{}))
	port := hs.Listener.Addr().(*net.TCPAddr).Port
	tr := &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}
	c := &client{base: hs.URL, hc: &http.Client{Transport: tr}}
	closed := false
	closeAll := func() {
		if closed {
			return
		}
		closed = true
		tr.CloseIdleConnections()
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, srv.Close(ctx))
		require.NoError(t, be.close())
	}
	t.Cleanup(closeAll)

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute) // a guard against a hang only
	defer cancel()

	// The baseline of the load: the server idle after one run streamed
	// (its background work started: the PostgreSQL listener connects
	// after Start returns) and the connection closed.
	warm := &session{i: -1, kind: threadStream}
	require.NoError(t, warm.run(ctx, c))
	tr.CloseIdleConnections()
	goroutines1, fds1 := quiet(t, port)

	sessions := plan(rng, sessionCount())
	began := time.Now()
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(func() {
			if err := s.run(ctx, c); err != nil {
				s.err = fmt.Errorf("session %d (%s, run %s): %w", s.i, s.kind, s.runID, err)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(began)
	var errs []error
	var events, resumes, joins, cancels, streams int
	for _, s := range sessions {
		if s.err != nil {
			errs = append(errs, s.err)
			continue
		}
		events += len(s.events) + len(s.joined)
		resumes += s.resumes
		streams += 1 + s.resumes
		if s.joiner != nil {
			joins++
			streams++
		}
		if s.kind == cancelRunning || s.kind == cancelPending {
			cancels++
		}
	}
	if len(errs) > 0 {
		for _, err := range errs[:min(len(errs), 10)] {
			t.Error(err)
		}
		t.Fatalf("%d of %d sessions failed", len(errs), len(sessions))
	}
	t.Logf("%d runs, %d streams (%d open at once at most), %d events received, %d Last-Event-ID resumes, %d joined by a second stream, %d cancelled, in %v",
		len(sessions), streams, c.peak.Load(), events, resumes, joins, cancels, elapsed.Round(10*time.Millisecond))

	// While the server runs: with the client's idle connections closed, no
	// connection, stream or goroutine of the load is left.
	tr.CloseIdleConnections()
	settle(t, "with the server idle again", func() error {
		if g := runtime.NumGoroutine(); g > goroutines1 {
			return fmt.Errorf("%d goroutines, %d before the load", g, goroutines1)
		}
		if !haveFDs {
			return nil
		}
		if n := httpSockets(port); n > 0 {
			return fmt.Errorf("%d sockets of HTTP connections still open", n)
		}
		if n, _ := countFDs(); n > fds1+be.fdSlack {
			return fmt.Errorf("%d open descriptors, %d before the load (and %d the storage's pool may add)", n, fds1, be.fdSlack)
		}
		return nil
	})

	fdsNow, _ := countFDs()
	t.Logf("idle again: %d goroutines (%d before the load), %d descriptors (%d before)", runtime.NumGoroutine(), goroutines1, fdsNow, fds1)

	// Closed: everything is back to where it was before anything opened.
	closeAll()
	settle(t, "once server and storage are closed", func() error {
		if g := runtime.NumGoroutine(); g > goroutines0 {
			return fmt.Errorf("%d goroutines, %d before the server was opened", g, goroutines0)
		}
		if n, _ := countFDs(); haveFDs && n > fds0 {
			return fmt.Errorf("%d open descriptors, %d before the server was opened", n, fds0)
		}
		return nil
	})
}

// quiet waits for the process to be quiet, no HTTP connection open and the
// number of goroutines steady, and returns the goroutines and descriptors
// then open.
func quiet(t *testing.T, port int) (goroutines, fds int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	steady := 0
	for last := -1; steady < 5; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server did not settle after the warm-up run")
		}
		g := runtime.NumGoroutine()
		if g == last && httpSockets(port) == 0 {
			steady++
		} else {
			steady = 0
		}
		last = g
	}
	fds, _ = countFDs()
	return runtime.NumGoroutine(), fds
}

// settle waits for ok to hold, failing with its last error (and the
// goroutines then running) if it does not within a bound.
func settle(t *testing.T, when string, ok func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := ok()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
			t.Fatalf("%s: %v\n%s", when, err, b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// graphs are the graphs the soak runs: "soak", steps nodes in sequence,
// each emitting customPerStep custom events (yielding the processor between
// them, as a node streaming tokens does) and appending its name to "steps";
// and "hold", one node emitting holdCustom custom events and then waiting
// for its run to be cancelled.
func graphs() map[string]graphserver.Graph {
	g := graph.New(graph.Channels{"steps": graph.Append(), "session": graph.LastValue()})
	prev := graph.Start
	for n := range steps {
		name := "n" + strconv.Itoa(n)
		g.AddNode(name, func(ctx context.Context, s graph.State) (any, error) {
			write := graph.StreamWriter(ctx)
			for i := range customPerStep {
				write(map[string]any{"node": name, "i": i, "session": s["session"]})
				runtime.Gosched()
			}
			return graph.Update{"steps": name}, nil
		})
		g.AddEdge(prev, name)
		prev = name
	}
	g.AddEdge(prev, graph.End)
	soakGraph, err := g.Compile(graph.CompileOptions{Name: "soak"})
	if err != nil {
		panic(err)
	}

	h := graph.New(graph.Channels{"steps": graph.Append(), "session": graph.LastValue()})
	h.AddNode("hold", func(ctx context.Context, s graph.State) (any, error) {
		write := graph.StreamWriter(ctx)
		for i := range holdCustom {
			write(map[string]any{"node": "hold", "i": i, "session": s["session"]})
		}
		guard := time.NewTimer(2 * time.Minute) // a guard: the test cancels the run long before
		defer guard.Stop()
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-guard.C:
			return nil, errors.New("hold: not cancelled")
		}
	})
	h.AddEdge(graph.Start, "hold").AddEdge("hold", graph.End)
	holdGraph, err := h.Compile(graph.CompileOptions{Name: "hold"})
	if err != nil {
		panic(err)
	}
	return map[string]graphserver.Graph{"soak": soakGraph, "hold": holdGraph}
}

// kind is how a session creates and follows its run.
type kind int

const (
	threadStream  kind = iota // POST /threads/{tid}/runs/stream
	statelessRun              // POST /runs/stream, resumed at /runs/{rid}/stream
	backgroundRun             // POST /threads/{tid}/runs, then the join stream
	cancelRunning             // a thread stream of "hold", cancelled once running
	cancelPending             // a thread stream of a delayed run, cancelled while pending
)

func (k kind) String() string {
	return [...]string{"thread stream", "stateless stream", "background run joined", "cancel running", "cancel pending"}[k]
}

// event is one SSE frame received.
type event struct {
	ID, Event, Data string
}

// session is one run and the streams following it.
type session struct {
	i        int
	kind     kind
	cuts     []int  // events read on each connection before it is dropped and resumed
	joiner   []int  // a second stream's cuts; nil: no second stream
	joinHdr  string // Last-Event-ID of a background run's first join ("" = none)
	waitJoin bool   // also GET .../join once the stream ended

	threadID, runID, loc string
	events, joined       []event
	resumes              int
	err                  error
}

// plan draws the sessions: their kinds, where their streams drop, and
// which have a second stream.
func plan(rng *rand.Rand, n int) []*session {
	out := make([]*session, n)
	for i := range out {
		s := &session{i: i}
		switch i % 10 {
		case 0:
			s.kind = cancelRunning
		case 1:
			s.kind = cancelPending
		case 2, 3:
			s.kind = backgroundRun
			if rng.IntN(2) == 0 {
				s.joinHdr = "-1"
			}
		case 4:
			s.kind = statelessRun
		default:
			s.kind = threadStream
		}
		cuts := func() []int {
			var c []int
			for range rng.IntN(4) { // 0-3 drops
				c = append(c, 1+rng.IntN(12))
			}
			return c
		}
		if s.kind != cancelPending {
			s.cuts = cuts()
			if rng.IntN(3) == 0 {
				s.joiner = append([]int{}, cuts()...) // non-nil: a second stream
			}
		}
		s.waitJoin = s.kind != statelessRun && rng.IntN(4) == 0
		out[i] = s
	}
	return out
}

// locationRE parses Content-Location: /threads/{tid}/runs/{rid} or /runs/{rid}.
var locationRE = regexp.MustCompile(`^(?:/threads/([0-9a-f-]+))?/runs/([0-9a-f-]+)$`)

// run creates the session's run, follows it to its end (with its drops,
// resumes, second stream and cancel), then checks every stream against the
// run's full replay and the run's final status.
func (s *session) run(ctx context.Context, c *client) error {
	input := map[string]any{"session": s.i}
	body := map[string]any{"input": input, "stream_mode": modes, "stream_resumable": true, "assistant_id": "soak"}
	if s.kind != statelessRun {
		var th graphserver.Thread
		if err := c.json(ctx, "POST", "/threads", map[string]any{}, &th); err != nil {
			return err
		}
		s.threadID = th.ThreadID
	}
	var resp *http.Response
	var stop context.CancelFunc
	var err error
	switch s.kind {
	case threadStream, cancelRunning, cancelPending:
		if s.kind == cancelRunning {
			body["assistant_id"] = "hold"
		}
		if s.kind == cancelPending {
			body["after_seconds"] = 3600
		}
		resp, stop, err = c.stream(ctx, "POST", "/threads/"+s.threadID+"/runs/stream", body, "")
	case statelessRun:
		resp, stop, err = c.stream(ctx, "POST", "/runs/stream", body, "")
	case backgroundRun:
		var run graphserver.Run
		if err := c.json(ctx, "POST", "/threads/"+s.threadID+"/runs", body, &run); err != nil {
			return err
		}
		s.runID = run.RunID
		s.loc = "/threads/" + s.threadID + "/runs/" + s.runID + "/stream"
		resp, stop, err = c.stream(ctx, "GET", s.loc, nil, s.joinHdr)
	}
	if err != nil {
		return err
	}
	if s.kind != backgroundRun {
		m := locationRE.FindStringSubmatch(resp.Header.Get("Content-Location"))
		if m == nil || m[1] != s.threadID {
			stop()
			return fmt.Errorf("Content-Location %q", resp.Header.Get("Content-Location"))
		}
		s.runID, s.loc = m[2], resp.Header.Get("Location")
	}
	runPath := "/threads/" + s.threadID + "/runs/" + s.runID

	var hook func([]event) error
	switch s.kind {
	case cancelPending:
		// The run waits an hour: it is pending whatever the load.
		if err := c.json(ctx, "POST", runPath+"/cancel", nil, nil); err != nil {
			stop()
			return err
		}
	case cancelRunning:
		cancelled := false
		hook = func(evs []event) error {
			if cancelled || countCustom(evs) < holdCustom {
				return nil
			}
			// Every custom event arrived: the run is running, waiting.
			cancelled = true
			return c.json(ctx, "POST", runPath+"/cancel", nil, nil)
		}
	}

	var joinErr error
	var jwg sync.WaitGroup
	if s.joiner != nil {
		jwg.Go(func() {
			resp, stop, err := c.stream(ctx, "GET", s.loc, nil, "-1")
			if err != nil {
				joinErr = err
				return
			}
			s.joined, _, joinErr = c.follow(ctx, resp, stop, s.loc, s.joiner, nil)
			if joinErr != nil {
				joinErr = fmt.Errorf("second stream: %w", joinErr)
			}
		})
	}
	s.events, s.resumes, err = c.follow(ctx, resp, stop, s.loc, s.cuts, hook)
	jwg.Wait()
	if err = errors.Join(err, joinErr); err != nil {
		return err
	}

	// What the run's log holds, replayed from the start.
	resp, stop, err = c.stream(ctx, "GET", s.loc, nil, "-1")
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	replay, _, err := c.follow(ctx, resp, stop, s.loc, nil, nil)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	if err := s.check(replay); err != nil {
		return err
	}

	if s.kind == statelessRun {
		return nil // its run went with its temporary thread (on_completion delete)
	}
	var run graphserver.Run
	if err := c.json(ctx, "GET", runPath, nil, &run); err != nil {
		return err
	}
	want := graphserver.RunSuccess
	if s.kind == cancelRunning || s.kind == cancelPending {
		want = graphserver.RunInterrupted
	}
	if run.Status != want {
		return fmt.Errorf("run status %s, want %s", run.Status, want)
	}
	var th graphserver.Thread
	if err := c.json(ctx, "GET", "/threads/"+s.threadID, nil, &th); err != nil {
		return err
	}
	if th.Status == graphserver.ThreadBusy {
		return fmt.Errorf("thread %s still busy", s.threadID)
	}
	if s.waitJoin {
		var out map[string]any
		if err := c.json(ctx, "GET", runPath+"/join", nil, &out); err != nil {
			return fmt.Errorf("join: %w", err)
		}
		if s.kind == threadStream || s.kind == backgroundRun {
			if got, _ := out["steps"].([]any); len(got) != steps {
				return fmt.Errorf("join: output %v, want %d steps", out, steps)
			}
		}
	}
	return nil
}

// check compares what the session's streams received with the replay of
// its run's log, and the replay with what the graph emitted.
func (s *session) check(replay []event) error {
	for i, ev := range replay {
		if ev.ID != strconv.Itoa(i) {
			return fmt.Errorf("replay: event %d has id %q: the log has a gap or a duplicate", i, ev.ID)
		}
		if ev.Event == "error" {
			return fmt.Errorf("replay: error event %s", ev.Data)
		}
	}
	if err := sameEvents("stream", s.events, replay); err != nil {
		return err
	}
	if s.joiner != nil {
		if err := sameEvents("second stream", s.joined, replay); err != nil {
			return err
		}
	}
	custom := countCustom(replay)
	switch s.kind {
	case cancelPending:
		// The metadata event goes out when the run is created, and no more.
		if len(replay) != 1 {
			return fmt.Errorf("a run cancelled while pending logged %d events, want its metadata only: %+v", len(replay), replay)
		}
	case cancelRunning:
		if custom != holdCustom {
			return fmt.Errorf("%d custom events, want %d", custom, holdCustom)
		}
	default:
		if custom != steps*customPerStep {
			return fmt.Errorf("%d custom events, want %d", custom, steps*customPerStep)
		}
		last := replay[len(replay)-1]
		var v struct {
			Steps   []string `json:"steps"`
			Session int      `json:"session"`
		}
		if last.Event != "values" || json.Unmarshal([]byte(last.Data), &v) != nil || len(v.Steps) != steps || v.Session != s.i {
			return fmt.Errorf("last event %s %s, want the final values", last.Event, last.Data)
		}
	}
	if len(replay) == 0 || replay[0].Event != "metadata" {
		return fmt.Errorf("first event %s, want metadata", replay[0].Event)
	}
	return nil
}

// sameEvents reports the first difference between got and want.
func sameEvents(what string, got, want []event) error {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Errorf("%s: event %d is %+v, the log's is %+v", what, i, got[i], want[i])
		}
	}
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d events, the log has %d", what, len(got), len(want))
	}
	return nil
}

func countCustom(evs []event) int {
	n := 0
	for _, ev := range evs {
		if ev.Event == "custom" {
			n++
		}
	}
	return n
}

// client sends the soak's requests.
type client struct {
	base string
	hc   *http.Client
	open atomic.Int64 // streams open now
	peak atomic.Int64 // most streams open at once
}

// json sends a request with body encoded as JSON (none if nil), requires a
// 2xx answer and decodes it into out (unless nil).
func (c *client) json(ctx context.Context, method, path string, body, out any) error {
	req, err := c.request(ctx, method, path, body)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func (c *client) request(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// stream opens an SSE stream; stop drops its connection.
func (c *client) stream(ctx context.Context, method, path string, body any, lastEventID string) (resp *http.Response, stop context.CancelFunc, err error) {
	cctx, cancel := context.WithCancel(ctx)
	req, err := c.request(cctx, method, path, body)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err = c.hc.Do(req)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return nil, nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if n := c.open.Add(1); n > c.peak.Load() {
		for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
		}
	}
	return resp, func() { cancel(); c.open.Add(-1) }, nil
}

// follow reads the stream resp to its end. On connection i it drops the
// connection after cuts[i] events (if given) and resumes at loc with
// Last-Event-ID, as the SDKs reconnect. hook, if not nil, sees the events
// received so far after each one. It returns the events and the resumes.
func (c *client) follow(ctx context.Context, resp *http.Response, stop context.CancelFunc, loc string, cuts []int, hook func([]event) error) ([]event, int, error) {
	var evs []event
	resumes := 0
	for conn := 0; ; conn++ {
		limit := -1
		if conn < len(cuts) {
			limit = cuts[conn]
		}
		dec := sse.NewDecoder(bufio.NewReader(resp.Body), 0)
		cut := false
		for n := 0; ; n++ {
			if n == limit {
				cut = true
				break
			}
			ev, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				resp.Body.Close()
				stop()
				return evs, resumes, fmt.Errorf("read %s: %w", loc, err)
			}
			evs = append(evs, event{ID: ev.ID, Event: ev.Event, Data: string(ev.Data)})
			if hook != nil {
				if err := hook(evs); err != nil {
					resp.Body.Close()
					stop()
					return evs, resumes, err
				}
			}
		}
		stop() // drops the connection first when cut: the server sees a disconnect
		resp.Body.Close()
		if !cut {
			return evs, resumes, nil
		}
		last := "-1"
		if len(evs) > 0 {
			last = evs[len(evs)-1].ID
		}
		resumes++
		var err error
		if resp, stop, err = c.stream(ctx, "GET", loc, nil, last); err != nil {
			return evs, resumes, fmt.Errorf("resume after %s: %w", last, err)
		}
	}
}

// countFDs counts this process's open file descriptors; false where
// /proc/self/fd does not exist (not Linux).
func countFDs() (int, bool) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	return len(entries), true
}

// httpSockets counts this process's descriptors of TCP connections to or
// from port (the test server's; its listening socket excluded), from
// /proc/self/net/tcp{,6} and /proc/self/fd.
func httpSockets(port int) int {
	inodes := map[string]bool{}
	hexPort := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 10 || fields[3] == "0A" { // 0A: listening
				continue
			}
			if strings.HasSuffix(fields[1], hexPort) || strings.HasSuffix(fields[2], hexPort) {
				inodes["socket:["+fields[9]+"]"] = true
			}
		}
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && inodes[target] {
			n++
		}
	}
	return n
}
