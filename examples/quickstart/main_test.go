package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// quickstart is one running instance of run.
type quickstart struct {
	url  string
	stop func() error // cancels run and returns its error
}

// start runs the quickstart on a free port with the given database and
// waits for its "listening on" line.
func start(t *testing.T, db string) *quickstart {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"-addr", "127.0.0.1:0", "-db", db}, pw)
		pw.CloseWithError(io.EOF)
		done <- err
	}()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	var line string
	select {
	case line = <-lines:
	case err := <-done:
		cancel()
		t.Fatalf("quickstart exited before listening: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("quickstart did not print its address")
	}
	require.True(t, strings.HasPrefix(line, "listening on http://127.0.0.1:"), line)
	q := &quickstart{url: strings.TrimPrefix(line, "listening on "), stop: sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			return context.DeadlineExceeded
		}
	})}
	t.Cleanup(func() { _ = q.stop() })
	return q
}

// do sends a request and decodes the JSON response into out.
func do(t *testing.T, method, url, body string, out any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if out != nil {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	}
	return resp.StatusCode
}

func TestRun(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "gs.db")
	q := start(t, db)

	var ok map[string]bool
	require.Equal(t, 200, do(t, "GET", q.url+"/ok", "", &ok))
	require.Equal(t, map[string]bool{"ok": true}, ok)

	var th map[string]any
	require.Equal(t, 200, do(t, "POST", q.url+"/threads", "{}", &th))
	require.Equal(t, "idle", th["status"])
	require.Contains(t, th, "values")
	require.Nil(t, th["values"])
	id := th["thread_id"].(string)
	require.Len(t, id, 36)

	var detail map[string]string
	require.Equal(t, 409, do(t, "POST", q.url+"/threads", `{"thread_id":"`+id+`","if_exists":"raise"}`, &detail))
	require.NotEmpty(t, detail["detail"])
	require.Equal(t, 422, do(t, "GET", q.url+"/threads/not-a-uuid", "", &detail))

	var chat map[string]any
	require.Equal(t, 200, do(t, "GET", q.url+"/assistants/chat", "", &chat))
	require.Equal(t, "chat", chat["name"])

	// The chat graph answers the last message.
	var out struct {
		Messages []struct {
			Type    string `json:"type"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	require.Equal(t, 200, do(t, "POST", q.url+"/threads/"+id+"/runs/wait",
		`{"assistant_id":"chat","input":{"messages":[{"role":"human","content":"hi there"}]}}`, &out))
	require.Len(t, out.Messages, 2)
	require.Equal(t, "ai", out.Messages[1].Type)
	require.Equal(t, "You said: hi there", out.Messages[1].Content)

	// Restarting on the same file keeps the thread.
	require.NoError(t, q.stop())
	q = start(t, db)
	var again map[string]any
	require.Equal(t, 200, do(t, "GET", q.url+"/threads/"+id, "", &again))
	require.Equal(t, th["created_at"], again["created_at"])
	require.Contains(t, fmt.Sprint(again["values"]), "You said: hi there")
}

func TestRunPortInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	err = run(t.Context(), []string{"-addr", ln.Addr().String(), "-db", filepath.Join(t.TempDir(), "gs.db")}, io.Discard)
	require.Error(t, err)
	require.Contains(t, err.Error(), "address already in use")
}

func TestRunBadFlag(t *testing.T) {
	t.Parallel()
	err := run(t.Context(), []string{"-nope"}, io.Discard)
	require.Error(t, err)
}

func TestQuickstartWebhooks(t *testing.T) {
	t.Parallel()
	q := start(t, filepath.Join(t.TempDir(), "gs.db"))
	var th map[string]any
	require.Equal(t, http.StatusOK, do(t, "POST", q.url+"/threads", `{}`, &th))
	runs := q.url + "/threads/" + th["thread_id"].(string) + "/runs"

	// Webhooks are wired: a public URL is accepted (its delivery may fail here,
	// offline, and is retried in the background without touching the run)...
	var run map[string]any
	code := do(t, "POST", runs, `{"assistant_id":"chat","input":{"messages":["hi"]},"webhook":"https://93.184.216.34/hook"}`, &run)
	require.Equal(t, http.StatusOK, code, "%v", run)
	require.Equal(t, "https://93.184.216.34/hook", run["kwargs"].(map[string]any)["webhook"])
	// ...and a private address is refused before anything is created.
	var detail map[string]any
	require.Equal(t, http.StatusUnprocessableEntity, do(t, "POST", runs, `{"assistant_id":"chat","webhook":"http://127.0.0.1:9/hook"}`, &detail))
	require.Contains(t, detail["detail"], "webhook")
}
