package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// server is one running instance of run.
type server struct {
	url  string
	stop func() error // cancels run and returns its error
}

// start runs the reference server on a free port with a fresh database and
// the given extra flags, and waits for its "listening on" line.
func start(t *testing.T, args ...string) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	args = append([]string{"-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "gs.db")}, args...)
	go func() {
		err := run(ctx, args, pw, slog.New(slog.DiscardHandler))
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
		t.Fatalf("reference exited before listening: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("reference did not print its address")
	}
	require.True(t, strings.HasPrefix(line, "listening on http://127.0.0.1:"), line)
	s := &server{url: strings.TrimPrefix(line, "listening on "), stop: sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			return context.DeadlineExceeded
		}
	})}
	t.Cleanup(func() { _ = s.stop() })
	return s
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

type assistant struct {
	AssistantID string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Name        string         `json:"name"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
}

func TestSystemAssistantsAndSeeding(t *testing.T) {
	t.Parallel()
	s := start(t)
	var all []assistant
	require.Equal(t, http.StatusOK, do(t, "POST", s.url+"/assistants/search", `{"metadata": {"created_by": "system"}, "limit": 100}`, &all))
	byGraph := map[string]assistant{}
	for _, a := range all {
		byGraph[a.GraphID] = a
	}
	require.Len(t, byGraph, 11)
	require.Equal(t, "fe096781-5601-53d2-b2f6-0d3403f7e9ca", byGraph["agent"].AssistantID)
	require.Equal(t, map[string]any{"configurable": map[string]any{"model_name": "openai"}}, byGraph["agent"].Config)
	require.Equal(t, map[string]any{"model": "unknown"}, byGraph["simple_runtime"].Context)
	require.Equal(t, map[string]any{}, byGraph["nested"].Config)

	// simple_runtime copies the seeded context into its state.
	var out map[string]any
	require.Equal(t, http.StatusOK, do(t, "POST", s.url+"/runs/wait", `{"assistant_id": "simple_runtime", "input": {"ignored": 1}}`, &out))
	require.Equal(t, map[string]any{"model": "unknown"}, out)
}

func TestConfigFlag(t *testing.T) {
	t.Parallel()
	s := start(t, "-config", `{"agent_simple": {"configurable": {"x": 1}}}`)
	var a assistant
	require.Equal(t, http.StatusOK, do(t, "GET", s.url+"/assistants/agent_simple", "", &a))
	require.Equal(t, map[string]any{"configurable": map[string]any{"x": 1.0}}, a.Config)
	var agent assistant
	require.Equal(t, http.StatusOK, do(t, "GET", s.url+"/assistants/agent", "", &agent))
	require.Equal(t, map[string]any{}, agent.Config)
}

func TestAgentWaitAndTruncate(t *testing.T) {
	t.Parallel()
	s := start(t)
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	require.Equal(t, http.StatusOK, do(t, "POST", s.url+"/threads", `{}`, &th))
	var out struct {
		Messages []struct {
			Type    string `json:"type"`
			Content string `json:"content"`
		} `json:"messages"`
		SharedStateFromStoreConfig map[string]any `json:"sharedStateFromStoreConfig"`
	}
	require.Equal(t, http.StatusOK, do(t, "POST", s.url+"/threads/"+th.ThreadID+"/runs/wait",
		`{"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "foo"}]}, "config": {"configurable": {"user_id": "u1"}}}`, &out))
	var got []string
	for _, m := range out.Messages {
		got = append(got, m.Type+":"+m.Content)
	}
	require.Equal(t, []string{"human:foo", "ai:begin", "tool:tool_call__begin", "ai:end"}, got)
	require.Equal(t, map[string]any{"id": "u1"}, out.SharedStateFromStoreConfig)

	var mine assistant
	require.Equal(t, http.StatusOK, do(t, "POST", s.url+"/assistants", `{"graph_id": "agent"}`, &mine))

	var ok map[string]any
	require.Equal(t, http.StatusOK, do(t, "POST", s.url+"/internal/truncate", `{"threads": true, "assistants": true, "store": true, "checkpointer": true, "runs": true}`, &ok))
	require.Equal(t, map[string]any{"ok": true}, ok)

	var n int
	require.Equal(t, http.StatusOK, do(t, "POST", s.url+"/threads/count", `{}`, &n))
	require.Zero(t, n)
	require.Equal(t, http.StatusOK, do(t, "POST", s.url+"/assistants/count", `{}`, &n))
	require.Equal(t, 11, n, "system assistants are kept")
	require.Equal(t, http.StatusNotFound, do(t, "GET", s.url+"/assistants/"+mine.AssistantID, "", nil))
	var item any
	require.Equal(t, http.StatusOK, do(t, "GET", s.url+"/store/items?namespace=sharedState.data&key=user_id", "", &item))
	require.Nil(t, item)
}
