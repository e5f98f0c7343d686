package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver/internal/cmdtest"
)

// start runs the agents server on a free port with a fresh database.
func start(t *testing.T) *cmdtest.Server {
	t.Helper()
	return startDB(t, filepath.Join(t.TempDir(), "gs.db"))
}

// startDB runs the agents server on a free port on database db (-db).
func startDB(t *testing.T, db string) *cmdtest.Server {
	t.Helper()
	return cmdtest.Start(t, func(ctx context.Context, args []string, stdout io.Writer) error {
		return run(ctx, args, stdout, slog.New(slog.DiscardHandler))
	}, "-addr", "127.0.0.1:0", "-db", db)
}

// TestAgentsPostgres: -db takes a postgres:// URL (a fresh schema of the
// database GRAPHSERVER_POSTGRES_URL names), and the agents answer from it.
func TestAgentsPostgres(t *testing.T) {
	t.Parallel()
	url := os.Getenv("GRAPHSERVER_POSTGRES_URL")
	if url == "" {
		t.Skip("PostgreSQL skipped: set GRAPHSERVER_POSTGRES_URL (for example postgres://postgres@127.0.0.1:5432/test) to run it")
	}
	ctx := context.WithoutCancel(t.Context())
	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	schema := fmt.Sprintf("agents_%d", time.Now().UnixNano())
	_, err = admin.Exec(ctx, `CREATE SCHEMA `+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := admin.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`)
		require.NoError(t, err)
		require.NoError(t, admin.Close(ctx))
	})
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	s := startDB(t, url+sep+"search_path="+schema)
	var out struct{ Messages []message }
	require.Equal(t, http.StatusOK, cmdtest.Do(t, "POST", s.URL+"/runs/wait",
		`{"assistant_id": "react", "input": {"messages": [{"role": "user", "content": "What is the weather in Paris?"}]}}`, &out))
	require.Equal(t, "Here is what I found: It's always sunny in Paris!", out.Messages[len(out.Messages)-1].Content)
	var n int // the agents' system assistants live in PostgreSQL
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM `+schema+`.assistants WHERE graph_id = 'react'`).Scan(&n))
	require.Equal(t, 1, n)
}

type message struct {
	Type    string `json:"type"`
	Name    string `json:"name"`
	Content string `json:"content"`
}

func contents(msgs []message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Content
	}
	return out
}

// The five agents answer over HTTP (e2e/test/agents.test.js drives them
// through the JS SDK in every detail).
func TestAgents(t *testing.T) {
	t.Parallel()
	s := start(t)

	t.Run("react", func(t *testing.T) {
		var out struct{ Messages []message }
		require.Equal(t, http.StatusOK, cmdtest.Do(t, "POST", s.URL+"/runs/wait",
			`{"assistant_id": "react", "input": {"messages": [{"role": "user", "content": "What is the weather in Paris?"}]}}`, &out))
		require.Equal(t, []string{"What is the weather in Paris?", "", "It's always sunny in Paris!", "Here is what I found: It's always sunny in Paris!"}, contents(out.Messages))

		out.Messages = nil
		require.Equal(t, http.StatusOK, cmdtest.Do(t, "POST", s.URL+"/runs/wait",
			`{"assistant_id": "react", "input": {"messages": [{"role": "user", "content": "keep searching for gold"}]}, "config": {"recursion_limit": 8}}`, &out))
		require.Equal(t, "Sorry, need more steps to process this request.", out.Messages[len(out.Messages)-1].Content)
	})
	t.Run("map_reduce", func(t *testing.T) {
		var out struct {
			Jokes    []string
			Audience []string
			Best     string
		}
		require.Equal(t, http.StatusOK, cmdtest.Do(t, "POST", s.URL+"/runs/wait", `{"assistant_id": "map_reduce", "input": {"topic": "cats"}}`, &out))
		require.Len(t, out.Jokes, 3)
		require.Len(t, out.Audience, 4)
		require.Equal(t, "Why are cats at home so funny? Because they never stop.", out.Best)
	})
	t.Run("supervisor", func(t *testing.T) {
		var out struct {
			Messages    []message
			ActiveAgent string `json:"active_agent"`
		}
		require.Equal(t, http.StatusOK, cmdtest.Do(t, "POST", s.URL+"/runs/wait",
			`{"assistant_id": "supervisor", "input": {"messages": [{"role": "user", "content": "go"}]}}`, &out))
		require.Equal(t, "supervisor", out.ActiveAgent)
		var names []string
		for _, m := range out.Messages[1:] {
			names = append(names, m.Type+":"+m.Name)
		}
		require.Equal(t, []string{"ai:supervisor", "tool:transfer_to_researcher", "ai:researcher", "tool:transfer_to_writer",
			"ai:writer", "tool:transfer_back_to_supervisor", "ai:supervisor"}, names)
		require.True(t, strings.HasPrefix(out.Messages[len(out.Messages)-1].Content, "The team is done. Final report"))
	})
	t.Run("approval", func(t *testing.T) {
		var th struct {
			ThreadID string `json:"thread_id"`
			Status   string
		}
		require.Equal(t, http.StatusOK, cmdtest.Do(t, "POST", s.URL+"/threads", `{}`, &th))
		var paused map[string]any
		require.Equal(t, http.StatusOK, cmdtest.Do(t, "POST", s.URL+"/threads/"+th.ThreadID+"/runs/wait", `{"assistant_id": "approval", "input": {"request": "Oslo"}}`, &paused))
		require.Contains(t, paused, "__interrupt__")
		var out struct{ Status []string }
		require.Equal(t, http.StatusOK, cmdtest.Do(t, "POST", s.URL+"/threads/"+th.ThreadID+"/runs/wait", `{"assistant_id": "approval", "command": {"resume": "approve"}}`, &out))
		require.Equal(t, []string{"booked: flight to Oslo, seat 12A"}, out.Status)
	})
	t.Run("essay", func(t *testing.T) {
		var th struct {
			ThreadID string `json:"thread_id"`
		}
		require.Equal(t, http.StatusOK, cmdtest.Do(t, "POST", s.URL+"/threads", `{}`, &th))
		var paused map[string]any
		require.Equal(t, http.StatusOK, cmdtest.Do(t, "POST", s.URL+"/threads/"+th.ThreadID+"/runs/wait", `{"assistant_id": "essay", "input": "cats"}`, &paused))
		require.Contains(t, paused, "__interrupt__")
		var out map[string]string
		require.Equal(t, http.StatusOK, cmdtest.Do(t, "POST", s.URL+"/threads/"+th.ThreadID+"/runs/wait", `{"assistant_id": "essay", "command": {"resume": "Great."}}`, &out))
		require.Equal(t, map[string]string{"essay": "An essay about cats", "review": "Great.", "earlier_topics": ""}, out)
	})
}
