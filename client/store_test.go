package client_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
)

// TestStore drives every /store operation.
func TestStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := t.Context()
	s := e.c.Store

	missing, err := s.GetItem(ctx, []string{"users", "ann"}, "prefs", nil)
	require.NoError(t, err)
	require.Nil(t, missing, "a missing item is nil, not an error")

	require.NoError(t, s.PutItem(ctx, graphserver.ItemPut{Namespace: []string{"users", "ann"}, Key: "prefs", Value: graphserver.Object{"theme": "dark", "n": 1}}))
	require.NoError(t, s.PutItem(ctx, graphserver.ItemPut{Namespace: []string{"users", "bob"}, Key: "prefs", Value: graphserver.Object{"theme": "light", "n": 2}, TTL: ptr(5.0)}))
	require.NoError(t, s.PutItem(ctx, graphserver.ItemPut{Namespace: []string{"docs"}, Key: "d1", Value: graphserver.Object{"text": "x"}, Index: &graphserver.ItemIndex{Disabled: true}}))
	err = s.PutItem(ctx, graphserver.ItemPut{Namespace: []string{"a.b"}, Key: "k", Value: graphserver.Object{}})
	requireCode(t, err, graphserver.EINVALID)

	it, err := s.GetItem(ctx, []string{"users", "ann"}, "prefs", ptr(false))
	require.NoError(t, err)
	require.Equal(t, []string{"users", "ann"}, it.Namespace)
	require.Equal(t, "dark", it.Value["theme"])
	require.False(t, it.CreatedAt.IsZero())

	items, err := s.SearchItems(ctx, graphserver.ItemSearchRequest{NamespacePrefix: []string{"users"}})
	require.NoError(t, err)
	require.Len(t, items, 2)
	items, err = s.SearchItems(ctx, graphserver.ItemSearchRequest{NamespacePrefix: []string{"users"}, ItemSearch: graphserver.ItemSearch{Filter: map[string]any{"n": map[string]any{"$gt": 1}}}})
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, "light", items[0].Value["theme"])
	items, err = s.SearchItems(ctx, graphserver.ItemSearchRequest{ItemSearch: graphserver.ItemSearch{Limit: 1, Offset: 2}})
	require.NoError(t, err)
	require.Len(t, items, 1, "a nil prefix searches everything")

	nss, err := s.ListNamespaces(ctx, graphserver.NamespaceList{})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"docs"}, {"users", "ann"}, {"users", "bob"}}, nss)
	nss, err = s.ListNamespaces(ctx, graphserver.NamespaceList{Prefix: []string{"users"}, MaxDepth: 1})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"users"}}, nss)
	nss, err = s.ListNamespaces(ctx, graphserver.NamespaceList{Suffix: []string{"bob"}})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"users", "bob"}}, nss)

	require.NoError(t, s.DeleteItem(ctx, []string{"users", "ann"}, "prefs"))
	require.NoError(t, s.DeleteItem(ctx, []string{"users", "ann"}, "prefs"), "deleting a missing item is no error")
	it, err = s.GetItem(ctx, []string{"users", "ann"}, "prefs", nil)
	require.NoError(t, err)
	require.Nil(t, it)
}
