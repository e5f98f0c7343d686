package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver/internal/cmdtest"
)

// start runs the quickstart on a free port with the given database (and
// extra flags), its logs discarded.
func start(t *testing.T, db string, flags ...string) *cmdtest.Server {
	t.Helper()
	return startLogging(t, io.Discard, db, flags...)
}

// startLogging is start with the logs written to stderr.
func startLogging(t *testing.T, stderr io.Writer, db string, flags ...string) *cmdtest.Server {
	t.Helper()
	runIt := func(ctx context.Context, args []string, stdout io.Writer) error {
		return run(ctx, args, stdout, stderr)
	}
	return cmdtest.Start(t, runIt, append([]string{"-addr", "127.0.0.1:0", "-db", db, "-token-delay", "0"}, flags...)...)
}

// do is cmdtest.Do.
var do = cmdtest.Do

func TestRun(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "gs.db")
	q := start(t, db)

	var ok map[string]bool
	require.Equal(t, 200, do(t, "GET", q.URL+"/ok", "", &ok))
	require.Equal(t, map[string]bool{"ok": true}, ok)

	var th map[string]any
	require.Equal(t, 200, do(t, "POST", q.URL+"/threads", "{}", &th))
	require.Equal(t, "idle", th["status"])
	require.Contains(t, th, "values")
	require.Nil(t, th["values"])
	id := th["thread_id"].(string)
	require.Len(t, id, 36)

	var detail map[string]string
	require.Equal(t, 409, do(t, "POST", q.URL+"/threads", `{"thread_id":"`+id+`","if_exists":"raise"}`, &detail))
	require.NotEmpty(t, detail["detail"])
	require.Equal(t, 422, do(t, "GET", q.URL+"/threads/not-a-uuid", "", &detail))

	var chat map[string]any
	require.Equal(t, 200, do(t, "GET", q.URL+"/assistants/chat", "", &chat))
	require.Equal(t, "chat", chat["name"])

	// The chat graph answers the last message.
	var out struct {
		Messages []struct {
			Type    string `json:"type"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	require.Equal(t, 200, do(t, "POST", q.URL+"/threads/"+id+"/runs/wait",
		`{"assistant_id":"chat","input":{"messages":[{"role":"human","content":"hi there"}]}}`, &out))
	require.Len(t, out.Messages, 2)
	require.Equal(t, "ai", out.Messages[1].Type)
	require.Equal(t, "You said: hi there", out.Messages[1].Content)

	// Restarting on the same file keeps the thread.
	require.NoError(t, q.Stop())
	q = start(t, db)
	var again map[string]any
	require.Equal(t, 200, do(t, "GET", q.URL+"/threads/"+id, "", &again))
	require.Equal(t, th["created_at"], again["created_at"])
	require.Contains(t, fmt.Sprint(again["values"]), "You said: hi there")
}

func TestRunPortInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	err = run(t.Context(), []string{"-addr", ln.Addr().String(), "-db", filepath.Join(t.TempDir(), "gs.db")}, io.Discard, io.Discard)
	require.Error(t, err)
	require.Contains(t, err.Error(), "address already in use")
}

func TestRunBadFlag(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-nope"}, {"-log-format", "xml"}, {"-log-level", "loud"}, {"-shutdown-timeout", "-1s"}, {"extra"}} {
		err := run(t.Context(), args, io.Discard, io.Discard)
		require.Error(t, err, "%v", args)
		require.NotErrorIs(t, err, flag.ErrHelp)
	}
}

func TestQuickstartWebhooks(t *testing.T) {
	t.Parallel()
	q := start(t, filepath.Join(t.TempDir(), "gs.db"))
	var th map[string]any
	require.Equal(t, http.StatusOK, do(t, "POST", q.URL+"/threads", `{}`, &th))
	runs := q.URL + "/threads/" + th["thread_id"].(string) + "/runs"

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

// TestQuickstartCancelStopsReply: cancelling a run while the chat node
// streams a very long reply stops the node between tokens: the run is
// interrupted and the thread keeps no partial reply.
func TestQuickstartCancelStopsReply(t *testing.T) {
	t.Parallel()
	q := start(t, filepath.Join(t.TempDir(), "gs.db"))
	var th map[string]any
	require.Equal(t, http.StatusOK, do(t, "POST", q.URL+"/threads", `{}`, &th))
	tid := th["thread_id"].(string)
	long := strings.Repeat("w ", 1_000_000) // a million tokens: the node streams for seconds at least
	var run map[string]any
	require.Equal(t, http.StatusOK, do(t, "POST", q.URL+"/threads/"+tid+"/runs",
		`{"assistant_id":"chat","input":{"messages":[{"role":"human","content":"`+long+`"}]},"stream_mode":["messages-tuple"]}`, &run))
	runURL := q.URL + "/threads/" + tid + "/runs/" + run["run_id"].(string)
	require.Eventually(t, func() bool {
		var r map[string]any
		do(t, "GET", runURL, "", &r)
		return r["status"] == "running"
	}, 30*time.Second, 5*time.Millisecond)

	require.Equal(t, http.StatusAccepted, do(t, "POST", runURL+"/cancel", "", nil))
	require.Equal(t, http.StatusOK, do(t, "GET", runURL+"/join", "", nil))
	var r map[string]any
	require.Equal(t, http.StatusOK, do(t, "GET", runURL, "", &r))
	require.Equal(t, "interrupted", r["status"])
	var after map[string]any
	require.Equal(t, http.StatusOK, do(t, "GET", q.URL+"/threads/"+tid, "", &after))
	require.NotContains(t, fmt.Sprint(after["values"]), "You said", "no partial reply is kept")
	require.NotEqual(t, "busy", after["status"])
}

// TestQuickstartAsk: "/ask" pauses the run at an interrupt asking a
// question; resuming with an answer streams "You answered: <answer>".
func TestQuickstartAsk(t *testing.T) {
	t.Parallel()
	q := start(t, filepath.Join(t.TempDir(), "gs.db"))
	var th map[string]any
	require.Equal(t, http.StatusOK, do(t, "POST", q.URL+"/threads", `{}`, &th))
	tid := th["thread_id"].(string)
	var out map[string]any
	require.Equal(t, http.StatusOK, do(t, "POST", q.URL+"/threads/"+tid+"/runs/wait",
		`{"assistant_id":"chat","input":{"messages":[{"role":"human","content":"/ask"}]}}`, &out))
	var st struct {
		Values     map[string]any `json:"values"`
		Interrupts map[string][]struct {
			Value any `json:"value"`
		} `json:"interrupts"`
		Status string `json:"status"`
	}
	require.Equal(t, http.StatusOK, do(t, "GET", q.URL+"/threads/"+tid, "", &st))
	require.Equal(t, "interrupted", st.Status)
	var asked []any
	for _, list := range st.Interrupts {
		for _, in := range list {
			asked = append(asked, in.Value)
		}
	}
	require.Equal(t, []any{askQuestion}, asked)

	require.Equal(t, http.StatusOK, do(t, "POST", q.URL+"/threads/"+tid+"/runs/wait",
		`{"assistant_id":"chat","command":{"resume":"hello there"}}`, &out))
	msgs := out["messages"].([]any)
	require.Len(t, msgs, 2)
	require.Equal(t, "You answered: hello there", msgs[1].(map[string]any)["content"])
}
