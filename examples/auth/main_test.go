package main

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/client"
	"github.com/graphserver/graphserver/internal/cmdtest"
)

// TestTenants drives the example through the Go client as two users and
// checks that each sees only their own threads, runs, crons and notes.
func TestTenants(t *testing.T) {
	t.Parallel()
	runIt := func(ctx context.Context, args []string, stdout io.Writer) error {
		return run(ctx, args, stdout, io.Discard)
	}
	s := cmdtest.Start(t, runIt, "-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "gs.db"), "-keys", "ann=key-a,bob=key-b")
	as := func(key string) *client.Client {
		c, err := client.New(client.Options{URL: s.URL, APIKey: key, NoEnvAPIKey: true})
		require.NoError(t, err)
		return c
	}
	ann, bob, nobody := as("key-a"), as("key-b"), as("")
	ctx := t.Context()

	th, err := ann.Threads.Create(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	require.Equal(t, "ann", th.Metadata["owner"])
	for _, note := range []string{"buy tea", "call bob"} {
		_, err := ann.Runs.Wait(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "notes", Input: json.RawMessage(`{"note": "` + note + `"}`)})
		require.NoError(t, err)
	}
	out, err := bob.Runs.Wait(ctx, "", graphserver.RunCreate{AssistantID: "notes", Input: json.RawMessage(`{"note": "bob's"}`)})
	require.NoError(t, err)
	require.JSONEq(t, `{"note": "bob's", "notes": ["bob's"]}`, string(out), "bob's notes are his own")
	item, err := ann.Store.GetItem(ctx, []string{"ann", "notes"}, "all", nil)
	require.NoError(t, err)
	require.Equal(t, []any{"buy tea", "call bob"}, item.Value["notes"])

	_, err = ann.Crons.Create(ctx, th.ThreadID, graphserver.CronCreate{RunCreate: graphserver.RunCreate{AssistantID: "notes"}, Schedule: "0 9 * * 1"})
	require.NoError(t, err)

	_, err = bob.Threads.Get(ctx, th.ThreadID)
	require.Equal(t, graphserver.ENOTFOUND, graphserver.ErrorCode(err))
	_, err = bob.Runs.List(ctx, th.ThreadID, graphserver.RunSearch{})
	require.Equal(t, graphserver.ENOTFOUND, graphserver.ErrorCode(err))
	_, err = bob.Runs.Create(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "notes"})
	require.Equal(t, graphserver.ENOTFOUND, graphserver.ErrorCode(err))
	page, err := bob.Threads.Search(ctx, graphserver.ThreadSearch{})
	require.NoError(t, err)
	require.Empty(t, page.Items, "bob's stateless run thread was deleted; ann's are hidden")
	n, err := bob.Crons.Count(ctx, graphserver.CronSearch{})
	require.NoError(t, err)
	require.Zero(t, n)
	n, err = ann.Crons.Count(ctx, graphserver.CronSearch{})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = bob.Store.GetItem(ctx, []string{"ann", "notes"}, "all", nil)
	require.Equal(t, graphserver.EFORBIDDEN, graphserver.ErrorCode(err))
	ns, err := bob.Store.ListNamespaces(ctx, graphserver.NamespaceList{})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"bob", "notes"}}, ns)

	_, err = nobody.Threads.Search(ctx, graphserver.ThreadSearch{})
	require.Equal(t, graphserver.EUNAUTHORIZED, graphserver.ErrorCode(err))
}
