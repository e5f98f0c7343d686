package apikey_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/apikey"
)

func TestAPIKey(t *testing.T) {
	t.Parallel()
	users := map[string]graphserver.User{
		"k-ann": {Identity: "ann", Permissions: []string{"admin"}},
		"k-bob": {Identity: "bob"},
		"":      {Identity: "nobody"},
	}
	a := apikey.New(users)
	users["k-ann"] = graphserver.User{Identity: "changed"}

	req := func(key string) *graphserver.AuthRequest {
		return &graphserver.AuthRequest{Headers: map[string][]string{"X-Api-Key": {key}}}
	}
	u, err := a.Authenticate(t.Context(), req("k-ann"))
	require.NoError(t, err)
	require.Equal(t, "ann", u.Identity, "New copied the table")
	require.True(t, u.IsAuthenticated)
	require.Equal(t, []string{"admin"}, u.Permissions)
	u.Permissions[0] = "mutated"
	u, err = a.Authenticate(t.Context(), req("k-ann"))
	require.NoError(t, err)
	require.Equal(t, []string{"admin"}, u.Permissions, "each call gets its own copy")

	for _, key := range []string{"", "k-an", "k-ann ", "K-ANN"} {
		_, err := a.Authenticate(t.Context(), req(key))
		var e *graphserver.Error
		require.ErrorAs(t, err, &e, "key %q", key)
		require.Equal(t, http.StatusUnauthorized, e.Status)
		require.Equal(t, apikey.MessageInvalid, e.Message)
	}
	_, err = a.Authenticate(t.Context(), &graphserver.AuthRequest{})
	require.Error(t, err)
}
