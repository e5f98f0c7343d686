package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/sqlite"
)

// TestMain runs the real main when re-executed by TestMainHelp.
func TestMain(m *testing.M) {
	if os.Getenv("QUICKSTART_RUN_MAIN") == "1" {
		os.Args = append([]string{"quickstart"}, strings.Fields(os.Getenv("QUICKSTART_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runMain runs main in a child process with args and returns its exit
// code, stdout and stderr.
func runMain(t *testing.T, args string) (int, string, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "QUICKSTART_RUN_MAIN=1", "QUICKSTART_ARGS="+args)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return code, stdout.String(), stderr.String()
}

func TestMainHelp(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runMain(t, "-h")
	require.Equal(t, 0, code)
	for _, f := range []string{"-addr", "-db", "-log-level", "-log-format", "-shutdown-timeout", "-token-delay"} {
		require.Contains(t, stdout, f)
	}

	code, _, stderr := runMain(t, "-log-format xml")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "-log-format must be text or json")
}

// syncBuffer is a bytes.Buffer safe for the logger and the test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines decodes the JSON log lines written so far.
func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(s.b.Bytes()))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "log line %q", sc.Text())
		out = append(out, m)
	}
	return out
}

// find returns the log lines with message msg whose fields include want.
func find(lines []map[string]any, msg string, want map[string]any) []map[string]any {
	var out []map[string]any
next:
	for _, l := range lines {
		if l["msg"] != msg {
			continue
		}
		for k, v := range want {
			if l[k] != v {
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}

func TestLogs(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	q := startLogging(t, &logs, filepath.Join(t.TempDir(), "gs.db"), "-log-format", "json", "-log-level", "debug")

	// A client's request id is echoed and logged; a missing one is made up.
	req, err := http.NewRequestWithContext(t.Context(), "POST", q.URL+"/threads", strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("X-Request-Id", "req-from-client-1")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var th map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&th))
	resp.Body.Close()
	require.Equal(t, "req-from-client-1", resp.Header.Get("X-Request-Id"))
	tid := th["thread_id"].(string)

	resp, err = http.Get(q.URL + "/ok")
	require.NoError(t, err)
	resp.Body.Close()
	generated := resp.Header.Get("X-Request-Id")
	require.Len(t, generated, 36)

	var out map[string]any
	require.Equal(t, 200, do(t, "POST", q.URL+"/threads/"+tid+"/runs/wait", `{"assistant_id":"chat","input":{"messages":["hello"]}}`, &out))
	require.Equal(t, 200, do(t, "POST", q.URL+"/threads/"+tid+"/runs/wait", `{"assistant_id":"chat","input":{"messages":["/fail"]}}`, &out))
	require.Contains(t, out, "__error__")
	require.NoError(t, q.Stop())
	lines := logs.lines(t)

	// One line per request: method, route pattern, path, status, duration, request id.
	l := find(lines, "request", map[string]any{"request_id": "req-from-client-1"})
	require.Len(t, l, 1)
	require.Equal(t, "INFO", l[0]["level"])
	require.Equal(t, "POST", l[0]["method"])
	require.Equal(t, "/threads", l[0]["route"])
	require.Equal(t, "/threads", l[0]["path"])
	require.EqualValues(t, 200, l[0]["status"])
	require.Contains(t, l[0], "duration")
	l = find(lines, "request", map[string]any{"route": "/threads/{thread_id}/runs/wait", "path": "/threads/" + tid + "/runs/wait"})
	require.Len(t, l, 2)
	l = find(lines, "request", map[string]any{"request_id": generated})
	require.Len(t, l, 1)
	require.Equal(t, "DEBUG", l[0]["level"], "health checks are logged at debug")
	require.Equal(t, "/ok", l[0]["route"])

	// One line per run state change, with the same keys.
	for _, msg := range []string{"run created", "run started", "run ended"} {
		l = find(lines, msg, map[string]any{"thread_id": tid})
		require.Len(t, l, 2, msg)
		require.Len(t, l[0]["run_id"], 36, msg)
	}
	l = find(lines, "run ended", map[string]any{"thread_id": tid, "run_status": "error"})
	require.Len(t, l, 1)
	require.Equal(t, "WARN", l[0]["level"])
	require.Contains(t, l[0]["err"], "failed, as asked")
	require.Len(t, find(lines, "run ended", map[string]any{"thread_id": tid, "run_status": "success"}), 1)

	// Errors are always under "err".
	for _, l := range lines {
		require.NotContains(t, l, "error", "line %v", l)
	}
	require.Len(t, find(lines, "stopped", nil), 1)
}

// storedRunStatus reads a run's status from the database file of a stopped
// quickstart.
func storedRunStatus(t *testing.T, path, runID string) string {
	t.Helper()
	db, err := sqlite.Open(path)
	require.NoError(t, err)
	defer db.Close()
	r, err := db.GetRun(t.Context(), "", runID, nil)
	require.NoError(t, err)
	return r.Status
}

// createRun starts a background run of the chat graph on a new thread and
// waits until it is running. It returns the thread and run ids.
func createRun(t *testing.T, url, message string) (string, string) {
	t.Helper()
	var th, run map[string]any
	require.Equal(t, 200, do(t, "POST", url+"/threads", `{}`, &th))
	tid := th["thread_id"].(string)
	body, _ := json.Marshal(map[string]any{"assistant_id": "chat", "input": map[string]any{"messages": []string{message}}})
	require.Equal(t, 200, do(t, "POST", url+"/threads/"+tid+"/runs", string(body), &run))
	rid := run["run_id"].(string)
	require.Eventually(t, func() bool {
		var r map[string]any
		do(t, "GET", url+"/threads/"+tid+"/runs/"+rid, "", &r)
		return r["status"] == "running"
	}, 10*time.Second, 5*time.Millisecond)
	return tid, rid
}

func TestShutdownLetsRunsFinish(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "gs.db")
	q := start(t, db, "-token-delay", "20ms", "-shutdown-timeout", "1m")
	words := strings.Repeat("word ", 15)
	tid, rid := createRun(t, q.URL, words)
	require.NoError(t, q.Stop()) // SIGTERM while the run streams its reply

	require.Equal(t, graphserver.RunSuccess, storedRunStatus(t, db, rid), "the run finished before the server stopped")
	q = start(t, db, "-token-delay", "1h") // a run handed back would not finish now
	var r map[string]any
	require.Equal(t, 200, do(t, "GET", q.URL+"/threads/"+tid+"/runs/"+rid, "", &r))
	require.Equal(t, "success", r["status"])
	var st map[string]any
	require.Equal(t, 200, do(t, "GET", q.URL+"/threads/"+tid+"/state", "", &st))
	require.Contains(t, st["values"].(map[string]any)["messages"].([]any)[1].(map[string]any)["content"], strings.TrimSpace(words))
}

func TestShutdownHandsRunsBack(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "gs.db")
	q := start(t, db, "-token-delay", "1h", "-shutdown-timeout", "1ms")
	tid, rid := createRun(t, q.URL, "a reply that takes forever")
	require.NoError(t, q.Stop()) // the deadline passes at once: the run goes back to the queue
	require.Equal(t, graphserver.RunPending, storedRunStatus(t, db, rid))

	// The next start resumes it (here without delays, so it finishes).
	q = start(t, db)
	var r map[string]any
	require.Eventually(t, func() bool {
		do(t, "GET", q.URL+"/threads/"+tid+"/runs/"+rid, "", &r)
		return r["status"] == "success"
	}, 10*time.Second, 10*time.Millisecond, "run: %v", r)
}

func TestQuickstartMetrics(t *testing.T) {
	t.Parallel()
	q := start(t, filepath.Join(t.TempDir(), "gs.db"))
	var out map[string]any
	require.Equal(t, 200, do(t, "POST", q.URL+"/runs/wait", `{"assistant_id":"chat","input":{"messages":["hi"]}}`, &out))
	resp, err := http.Get(q.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, string(b), `graphserver_http_requests_total{code="200",method="POST",route="/runs/wait"} 1`)
	require.Contains(t, string(b), `graphserver_runs_ended_total{status="success"} 1`)
}

func TestShutdownEndsThreadStreams(t *testing.T) {
	t.Parallel()
	q := start(t, filepath.Join(t.TempDir(), "gs.db"), "-shutdown-timeout", "1h")
	var th map[string]any
	require.Equal(t, 200, do(t, "POST", q.URL+"/threads", `{}`, &th))
	// A thread stream never ends by itself: shutdown must end it, not wait an hour.
	resp, err := http.Get(q.URL + "/threads/" + th["thread_id"].(string) + "/stream")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.NoError(t, q.Stop())
	// The connection is broken (not ended), so that clients reconnect.
	_, err = io.Copy(io.Discard, resp.Body)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

func TestQuickstartChatPage(t *testing.T) {
	t.Parallel()
	q := start(t, filepath.Join(t.TempDir(), "gs.db"))
	resp, err := http.Get(q.URL + "/chat") // redirected to /chat/
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "/chat/", resp.Request.URL.Path)
	page, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, string(page), `src="app.js"`)
	// The API stays at the root, where the page calls it.
	var ok map[string]bool
	require.Equal(t, 200, do(t, "GET", q.URL+"/ok", "", &ok))
}
