package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/client"
	"github.com/graphserver/graphserver/internal/cmdtest"
)

func start(t *testing.T, flags ...string) *cmdtest.Server {
	t.Helper()
	runIt := func(ctx context.Context, args []string, stdout io.Writer) error {
		return run(ctx, args, stdout, io.Discard)
	}
	return cmdtest.Start(t, runIt, append([]string{"-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "gs.db")}, flags...)...)
}

// TestPublisher drives the example through the Go client: the remote
// review pauses the local run, the remote parts show under the node's
// namespace, and resuming the local run resumes the remote one.
func TestPublisher(t *testing.T) {
	t.Parallel()
	s := start(t)
	c, err := client.New(client.Options{URL: s.URL, NoEnvAPIKey: true})
	require.NoError(t, err)
	ctx := t.Context()

	for _, answer := range []string{"yes", "no"} {
		th, err := c.Threads.Create(ctx, graphserver.ThreadCreate{})
		require.NoError(t, err)
		var sub []string
		for ev, err := range c.Runs.Stream(ctx, th.ThreadID, graphserver.RunCreate{
			AssistantID: "publisher", Input: json.RawMessage(`{"topic": "Go"}`),
			StreamMode: []string{"updates"}, StreamSubgraphs: true,
		}, client.StreamOptions{}) {
			require.NoError(t, err)
			if strings.HasPrefix(ev.Event, "updates|review:") {
				sub = append(sub, string(ev.Data))
			}
		}
		require.NotEmpty(t, sub, "the remote graph's updates, under the review node")
		st, err := c.Threads.GetState(ctx, th.ThreadID, graphserver.ThreadStateQuery{})
		require.NoError(t, err)
		require.Equal(t, []string{"review"}, st.Next)
		require.Equal(t, map[string]any{"question": "Publish this draft?", "draft": "A post about Go"}, st.Interrupts[0].Value)

		out, err := c.Runs.Wait(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "publisher", Command: &graphserver.RunCommand{Resume: json.RawMessage(`"` + answer + `"`)}})
		require.NoError(t, err)
		var vals map[string]any
		require.NoError(t, json.Unmarshal(out, &vals))
		require.Equal(t, answer == "yes", vals["approved"])
		if answer == "yes" {
			require.Equal(t, "A post about Go", vals["published"])
		} else {
			require.Nil(t, vals["published"])
		}
	}
}

// TestExternalRemote: -remote points the node at another server (here the
// local server of a first instance); an assistant that server does not have
// fails the node with the remote's 404, named as the Python SDK names it.
func TestExternalRemote(t *testing.T) {
	t.Parallel()
	first := start(t)
	second := start(t, "-remote", first.URL, "-remote-graph", "00000000-0000-4000-8000-00000000dead")
	c, err := client.New(client.Options{URL: second.URL, NoEnvAPIKey: true})
	require.NoError(t, err)
	_, err = c.Runs.Wait(t.Context(), "", graphserver.RunCreate{AssistantID: "publisher", Input: json.RawMessage(`{"topic": "x"}`)})
	var re *client.RunError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "NotFoundError", re.Name)
}

func TestFlags(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	require.ErrorIs(t, run(t.Context(), []string{"-h"}, &out, io.Discard), flag.ErrHelp)
	require.Contains(t, out.String(), "-remote-graph")
	require.Error(t, run(t.Context(), []string{"extra"}, io.Discard, io.Discard))
}
