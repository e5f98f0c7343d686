package httpapi

import (
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
)

func TestQueryBool(t *testing.T) {
	t.Parallel()
	for q, want := range map[string]bool{
		"": false, "x=true": true, "x=TRUE": true, "x=1": true, "x=yes": true, "x=Yes": true,
		"x=false": false, "x=0": false, "x=no": false, "x=NO": false,
	} {
		got, err := queryBool(httptest.NewRequest("GET", "/?"+q, nil), "x", false)
		require.NoError(t, err, q)
		require.Equal(t, want, got, q)
	}
	got, err := queryBool(httptest.NewRequest("GET", "/", nil), "x", true)
	require.NoError(t, err)
	require.True(t, got, "absent gives the default")
	_, err = queryBool(httptest.NewRequest("GET", "/?x=2", nil), "x", false)
	require.Equal(t, graphserver.EINVALID, graphserver.ErrorCode(err))
}

func TestQueryStrings(t *testing.T) {
	t.Parallel()
	for q, want := range map[string][]string{
		"":                              nil,
		"a=x&a=y":                       {"x", "y"},
		"a=x,y":                         {"x", "y"},
		"a=x,%20y,":                     {"x", "y"},
		`a=["x","y"]`:                   {"x", "y"},
		`a=["x"]&a=y,z`:                 {"x", "y", "z"},
		`b=["x"]`:                       nil,
		`a=%5B%22x%2Cy%22%2C%22z%22%5D`: {"x,y", "z"},
	} {
		got, err := queryStrings(httptest.NewRequest("GET", "/?"+q, nil), "a")
		require.NoError(t, err, q)
		require.Equal(t, want, got, q)
	}
	_, err := queryStrings(httptest.NewRequest("GET", `/?a=["x",`, nil), "a")
	require.Equal(t, graphserver.EINVALID, graphserver.ErrorCode(err))
}

func TestQueryInt(t *testing.T) {
	t.Parallel()
	n, ok, err := queryInt(httptest.NewRequest("GET", "/?v=12", nil), "v")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 12, n)
	_, ok, err = queryInt(httptest.NewRequest("GET", "/", nil), "v")
	require.NoError(t, err)
	require.False(t, ok)
	_, _, err = queryInt(httptest.NewRequest("GET", "/?v=1.5", nil), "v")
	require.Equal(t, graphserver.EINVALID, graphserver.ErrorCode(err))
}

func TestWriteErrorAuthRejection(t *testing.T) {
	t.Parallel()
	h := &handler{logger: slog.New(slog.DiscardHandler)}
	rec := httptest.NewRecorder()
	err := &graphserver.Error{Code: graphserver.EUNAUTHORIZED, Message: "Bad token", Status: 419, Headers: map[string]string{"WWW-Authenticate": "Bearer"}}
	h.writeError(rec, httptest.NewRequest("GET", "/", nil), err)
	require.Equal(t, 419, rec.Code)
	require.Equal(t, "Bearer", rec.Header().Get("WWW-Authenticate"))
	require.JSONEq(t, `{"detail":"Bad token"}`, rec.Body.String())

	rec = httptest.NewRecorder()
	h.writeError(rec, httptest.NewRequest("GET", "/", nil), graphserver.Errorf(graphserver.EFORBIDDEN, ""))
	require.Equal(t, 403, rec.Code)
	require.JSONEq(t, `{"detail":"Forbidden"}`, rec.Body.String(), "an empty message becomes the reason phrase")
}

func TestErrorStatusCode(t *testing.T) {
	t.Parallel()
	for code, status := range map[string]int{
		graphserver.EINVALID: 422, graphserver.EBADREQUEST: 400, graphserver.ENOTFOUND: 404, graphserver.ECONFLICT: 409,
		graphserver.EBUSY: 409, graphserver.EUNAUTHORIZED: 401, graphserver.EFORBIDDEN: 403, graphserver.EUNAVAILABLE: 503,
		graphserver.EINTERNAL: 500, graphserver.ETOOLARGE: 413, "something_else": 500,
	} {
		require.Equal(t, status, ErrorStatusCode(code), code)
	}
}
