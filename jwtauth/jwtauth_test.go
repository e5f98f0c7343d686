package jwtauth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/jwtauth"
)

var secret = []byte("09d25e094faa6ca2556c818166b7a9563b93f7099f6f0f4caa6cf63b88e8d3e7")

func sign(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	require.NoError(t, err)
	return s
}

func bearer(token string) *graphserver.AuthRequest {
	return &graphserver.AuthRequest{Headers: map[string][]string{"Authorization": {"Bearer " + token}}}
}

// requireReject fails unless err is a 401 with msg and WWW-Authenticate.
func requireReject(t *testing.T, err error, msg string) {
	t.Helper()
	var e *graphserver.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, http.StatusUnauthorized, e.Status)
	require.Equal(t, msg, e.Message)
	require.Equal(t, "Bearer", e.Headers["WWW-Authenticate"])
}

func TestHS256(t *testing.T) {
	t.Parallel()
	a, err := jwtauth.New(jwtauth.Options{HMACKey: secret})
	require.NoError(t, err)
	exp := time.Now().Add(time.Hour).Unix()

	u, err := a.Authenticate(t.Context(), bearer(sign(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{
		"sub": "ann", "scopes": []string{"me", "read"}, "name": "Ann", "tenant": "t1", "exp": exp,
	})))
	require.NoError(t, err)
	require.Equal(t, &graphserver.User{Identity: "ann", DisplayName: "Ann", Permissions: []string{"me", "read"},
		IsAuthenticated: true, Extra: graphserver.Object{"tenant": "t1"}}, u)

	u, err = a.Authenticate(t.Context(), bearer(sign(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "bob", "scope": "a b", "exp": exp})))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, u.Permissions, "OAuth scope string")

	for name, req := range map[string]*graphserver.AuthRequest{
		"no header":   {},
		"basic":       {Headers: map[string][]string{"Authorization": {"Basic YTpi"}}},
		"empty token": {Headers: map[string][]string{"Authorization": {"Bearer "}}},
	} {
		_, err := a.Authenticate(t.Context(), req)
		require.Error(t, err, name)
		requireReject(t, err, jwtauth.MessageMissing)
	}
	lower := &graphserver.AuthRequest{Headers: map[string][]string{"Authorization": {"bearer " + sign(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "ann", "exp": exp})}}}
	_, err = a.Authenticate(t.Context(), lower)
	require.NoError(t, err, "the scheme is case-insensitive")

	for name, token := range map[string]string{
		"expired":      sign(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "ann", "exp": time.Now().Add(-time.Minute).Unix()}),
		"no exp":       sign(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "ann"}),
		"wrong secret": sign(t, jwt.SigningMethodHS256, []byte("other"), jwt.MapClaims{"sub": "ann", "exp": exp}),
		"HS512":        sign(t, jwt.SigningMethodHS512, secret, jwt.MapClaims{"sub": "ann", "exp": exp}),
		"alg none":     sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, jwt.MapClaims{"sub": "ann", "exp": exp}),
		"garbage":      "not.a.jwt",
	} {
		_, err := a.Authenticate(t.Context(), bearer(token))
		requireReject(t, err, jwtauth.MessageInvalid)
		require.Error(t, errors.Unwrap(err), "%s: the cause is kept", name)
	}
	_, err = a.Authenticate(t.Context(), bearer(sign(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"exp": exp})))
	requireReject(t, err, jwtauth.MessageMissing)
}

func TestRS256AndClaimsMapping(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	a, err := jwtauth.New(jwtauth.Options{
		RSAPublicKey: &key.PublicKey,
		Issuer:       "https://issuer.example",
		User: func(ctx context.Context, claims jwt.MapClaims) (*graphserver.User, error) {
			sub, _ := claims.GetSubject()
			if sub == "mallory" {
				return nil, graphserver.AuthError(http.StatusForbidden, "Banned", nil)
			}
			return &graphserver.User{Identity: "user:" + sub, IsAuthenticated: true}, nil
		},
	})
	require.NoError(t, err)
	claims := func(sub, iss string) jwt.MapClaims {
		return jwt.MapClaims{"sub": sub, "iss": iss, "exp": time.Now().Add(time.Hour).Unix()}
	}
	u, err := a.Authenticate(t.Context(), bearer(sign(t, jwt.SigningMethodRS256, key, claims("ann", "https://issuer.example"))))
	require.NoError(t, err)
	require.Equal(t, "user:ann", u.Identity)

	_, err = a.Authenticate(t.Context(), bearer(sign(t, jwt.SigningMethodRS256, key, claims("ann", "https://evil.example"))))
	requireReject(t, err, jwtauth.MessageInvalid)
	_, err = a.Authenticate(t.Context(), bearer(sign(t, jwt.SigningMethodHS256, []byte("x"), claims("ann", "https://issuer.example"))))
	requireReject(t, err, jwtauth.MessageInvalid) // an HS256 token against an RSA key
	_, err = a.Authenticate(t.Context(), bearer(sign(t, jwt.SigningMethodRS256, key, claims("mallory", "https://issuer.example"))))
	var e *graphserver.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, http.StatusForbidden, e.Status, "the mapping's own error")

	_, err = jwtauth.New(jwtauth.Options{})
	require.Error(t, err)
	_, err = jwtauth.New(jwtauth.Options{HMACKey: secret, RSAPublicKey: &key.PublicKey})
	require.Error(t, err)
}
