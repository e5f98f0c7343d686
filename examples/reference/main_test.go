package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver/internal/cmdtest"
)

// start runs the reference server on a free port with a fresh database and
// the given extra flags.
func start(t *testing.T, args ...string) *cmdtest.Server {
	t.Helper()
	args = append([]string{"-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "gs.db")}, args...)
	return cmdtest.Start(t, func(ctx context.Context, args []string, stdout io.Writer) error {
		return run(ctx, args, stdout, slog.New(slog.DiscardHandler))
	}, args...)
}

// do is cmdtest.Do.
var do = cmdtest.Do

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
	require.Equal(t, http.StatusOK, do(t, "POST", s.URL+"/assistants/search", `{"metadata": {"created_by": "system"}, "limit": 100}`, &all))
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
	require.Equal(t, http.StatusOK, do(t, "POST", s.URL+"/runs/wait", `{"assistant_id": "simple_runtime", "input": {"ignored": 1}}`, &out))
	require.Equal(t, map[string]any{"model": "unknown"}, out)
}

func TestConfigFlag(t *testing.T) {
	t.Parallel()
	s := start(t, "-config", `{"agent_simple": {"configurable": {"x": 1}}}`)
	var a assistant
	require.Equal(t, http.StatusOK, do(t, "GET", s.URL+"/assistants/agent_simple", "", &a))
	require.Equal(t, map[string]any{"configurable": map[string]any{"x": 1.0}}, a.Config)
	var agent assistant
	require.Equal(t, http.StatusOK, do(t, "GET", s.URL+"/assistants/agent", "", &agent))
	require.Equal(t, map[string]any{}, agent.Config)
}

func TestAgentWaitAndTruncate(t *testing.T) {
	t.Parallel()
	s := start(t)
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	require.Equal(t, http.StatusOK, do(t, "POST", s.URL+"/threads", `{}`, &th))
	var out struct {
		Messages []struct {
			Type    string `json:"type"`
			Content string `json:"content"`
		} `json:"messages"`
		SharedStateFromStoreConfig map[string]any `json:"sharedStateFromStoreConfig"`
	}
	require.Equal(t, http.StatusOK, do(t, "POST", s.URL+"/threads/"+th.ThreadID+"/runs/wait",
		`{"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "foo"}]}, "config": {"configurable": {"user_id": "u1"}}}`, &out))
	var got []string
	for _, m := range out.Messages {
		got = append(got, m.Type+":"+m.Content)
	}
	require.Equal(t, []string{"human:foo", "ai:begin", "tool:tool_call__begin", "ai:end"}, got)
	require.Equal(t, map[string]any{"id": "u1"}, out.SharedStateFromStoreConfig)

	var mine assistant
	require.Equal(t, http.StatusOK, do(t, "POST", s.URL+"/assistants", `{"graph_id": "agent"}`, &mine))

	var ok map[string]any
	require.Equal(t, http.StatusOK, do(t, "POST", s.URL+"/internal/truncate", `{"threads": true, "assistants": true, "store": true, "checkpointer": true, "runs": true}`, &ok))
	require.Equal(t, map[string]any{"ok": true}, ok)

	var n int
	require.Equal(t, http.StatusOK, do(t, "POST", s.URL+"/threads/count", `{}`, &n))
	require.Zero(t, n)
	require.Equal(t, http.StatusOK, do(t, "POST", s.URL+"/assistants/count", `{}`, &n))
	require.Equal(t, 11, n, "system assistants are kept")
	require.Equal(t, http.StatusNotFound, do(t, "GET", s.URL+"/assistants/"+mine.AssistantID, "", nil))
	var item any
	require.Equal(t, http.StatusOK, do(t, "GET", s.URL+"/store/items?namespace=sharedState.data&key=user_id", "", &item))
	require.Nil(t, item)
}
