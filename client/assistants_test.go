package client_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
)

// TestAssistants drives every /assistants operation through the client.
func TestAssistants(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := t.Context()
	c := e.c

	// the system assistant, by graph id and by uuid
	sys, err := c.Assistants.Get(ctx, "chat")
	require.NoError(t, err)
	require.Equal(t, graphserver.SystemAssistantID("chat"), sys.AssistantID)
	require.Equal(t, "system", sys.Metadata["created_by"])

	a, err := c.Assistants.Create(ctx, graphserver.AssistantCreate{
		GraphID: "chat", Name: "bot", Metadata: graphserver.Metadata{"team": "a"},
		Config: graphserver.Object{"configurable": map[string]any{"model": "x"}},
	})
	require.NoError(t, err)
	require.Equal(t, "bot", a.Name)
	require.Equal(t, 1, a.Version)

	_, err = c.Assistants.Create(ctx, graphserver.AssistantCreate{GraphID: "chat", AssistantID: a.AssistantID})
	requireCode(t, err, graphserver.ECONFLICT)
	same, err := c.Assistants.Create(ctx, graphserver.AssistantCreate{GraphID: "chat", AssistantID: a.AssistantID, IfExists: graphserver.IfExistsDoNothing})
	require.NoError(t, err)
	require.Equal(t, "bot", same.Name)
	_, err = c.Assistants.Create(ctx, graphserver.AssistantCreate{GraphID: "nope"})
	requireCode(t, err, graphserver.ENOTFOUND)

	got, err := c.Assistants.Get(ctx, a.AssistantID)
	require.NoError(t, err)
	require.Equal(t, a.AssistantID, got.AssistantID)
	require.Equal(t, map[string]any{"model": "x"}, got.Config["configurable"])

	up, err := c.Assistants.Update(ctx, a.AssistantID, graphserver.AssistantPatch{Name: ptr("bot2"), Metadata: graphserver.Metadata{"v": 2.0}})
	require.NoError(t, err)
	require.Equal(t, 2, up.Version)
	require.Equal(t, graphserver.Metadata{"team": "a", "v": 2.0}, up.Metadata)

	vs, err := c.Assistants.GetVersions(ctx, a.AssistantID, graphserver.AssistantVersionSearch{})
	require.NoError(t, err)
	require.Len(t, vs, 2)
	require.Equal(t, 2, vs[0].Version)
	vs, err = c.Assistants.GetVersions(ctx, a.AssistantID, graphserver.AssistantVersionSearch{Limit: 1, Offset: 1})
	require.NoError(t, err)
	require.Len(t, vs, 1)
	require.Equal(t, "bot", vs[0].Name)

	back, err := c.Assistants.SetLatest(ctx, a.AssistantID, 1)
	require.NoError(t, err)
	require.Equal(t, 1, back.Version)
	require.Equal(t, "bot", back.Name)
	_, err = c.Assistants.SetLatest(ctx, a.AssistantID, 9)
	requireCode(t, err, graphserver.ENOTFOUND)

	// search: paging headers become Next and Total
	for range 2 {
		_, err := c.Assistants.Create(ctx, graphserver.AssistantCreate{GraphID: "echo", Metadata: graphserver.Metadata{"team": "b"}})
		require.NoError(t, err)
	}
	page, err := c.Assistants.Search(ctx, graphserver.AssistantSearch{Metadata: graphserver.Metadata{"team": "b"}, Limit: 1})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.NotNil(t, page.Next)
	require.Equal(t, 1, *page.Next)
	require.Equal(t, 2, page.Total)
	page, err = c.Assistants.Search(ctx, graphserver.AssistantSearch{Metadata: graphserver.Metadata{"team": "b"}, Limit: 1, Offset: 1})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Nil(t, page.Next)
	page, err = c.Assistants.Search(ctx, graphserver.AssistantSearch{GraphID: "chat", Select: []string{"assistant_id", "name"}, SortBy: "name", SortOrder: "asc"})
	require.NoError(t, err)
	require.Len(t, page.Items, 2)
	require.Equal(t, "bot", page.Items[0].Name)
	require.Empty(t, page.Items[0].GraphID, "select projects the fields")
	require.Equal(t, []string{"assistant_id", "name"}, page.Select)
	_, err = c.Assistants.Search(ctx, graphserver.AssistantSearch{SortBy: "bogus"})
	requireCode(t, err, graphserver.EINVALID)

	n, err := c.Assistants.Count(ctx, graphserver.AssistantSearch{GraphID: "echo"})
	require.NoError(t, err)
	require.Equal(t, 3, n) // the system assistant and two more

	d, err := c.Assistants.GetGraph(ctx, a.AssistantID, 0)
	require.NoError(t, err)
	ids := []string{}
	for _, nd := range d.Nodes {
		ids = append(ids, nd.ID)
	}
	require.Contains(t, ids, "agent")
	_, err = c.Assistants.GetGraph(ctx, a.AssistantID, 2)
	require.NoError(t, err)

	sc, err := c.Assistants.GetSchemas(ctx, "chat")
	require.NoError(t, err)
	require.Equal(t, "chat", sc.GraphID)
	require.Contains(t, string(sc.StateSchema), "messages")

	subs, err := c.Assistants.GetSubgraphs(ctx, "chat", "", true)
	require.NoError(t, err)
	require.Empty(t, subs)
	_, err = c.Assistants.GetSubgraphs(ctx, "chat", "agent", false)
	require.NoError(t, err)

	require.NoError(t, c.Assistants.Delete(ctx, a.AssistantID, false))
	_, err = c.Assistants.Get(ctx, a.AssistantID)
	requireCode(t, err, graphserver.ENOTFOUND)
	err = c.Assistants.Delete(ctx, a.AssistantID, true)
	requireCode(t, err, graphserver.ENOTFOUND)
}

// TestAssistantDeleteThreads: delete_threads reaches the server.
func TestAssistantDeleteThreads(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := t.Context()
	a, err := e.c.Assistants.Create(ctx, graphserver.AssistantCreate{GraphID: "echo"})
	require.NoError(t, err)
	th, err := e.c.Threads.Create(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	_, err = e.c.Runs.Wait(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: a.AssistantID, Input: raw(t, map[string]any{"x": 1})})
	require.NoError(t, err)
	require.NoError(t, e.c.Assistants.Delete(ctx, a.AssistantID, true))
	_, err = e.c.Threads.Get(ctx, th.ThreadID)
	requireCode(t, err, graphserver.ENOTFOUND)
}
