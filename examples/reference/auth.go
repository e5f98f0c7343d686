package main

import (
	"context"
	"net/http"
	"slices"

	"github.com/golang-jwt/jwt/v5"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/jwtauth"
)

// referenceSecret signs the reference suite's tokens: the UTF-8 bytes of
// this string, not its hex decoding (reference-auth.md).
const referenceSecret = "09d25e094faa6ca2556c818166b7a9563b93f7099f6f0f4caa6cf63b88e8d3e7"

// referenceUser is a row of the reference user table.
type referenceUser struct {
	username, identity, displayName, email string
	permissions                            []string
	disabled                               bool
}

var referenceUsers = map[string]referenceUser{
	"johndoe": {"johndoe", "johndoe", "John Doe", "johndoe@example.com", []string{"read", "write", "assistants:write", "me"}, false},
	"alice":   {"alice", "alice", "Alice Chains", "alicechains@example.com", []string{"read", "write", "assistants:write", "me"}, true},
}

// notAuthorized is the refusal of every reference handler.
func notAuthorized() error { return graphserver.Forbidden("Not authorized") }

// referenceAuth is the access control of reference-auth.md, built with
// the library's public API only: HS256 bearer JWTs whose sub names a row
// of the user table, and the reference handlers.
func referenceAuth() (*graphserver.Auth, error) {
	authn, err := jwtauth.New(jwtauth.Options{
		HMACKey:        []byte(referenceSecret),
		ExpiryOptional: true, // the suite's tokens carry no exp; an expired one is refused
		User:           referenceUserFromClaims,
	})
	if err != nil {
		return nil, err
	}
	owner := func(ev *graphserver.AuthEvent) graphserver.Filter {
		return graphserver.Filter{"owner": ev.User.Identity}
	}
	return graphserver.NewAuth(authn).
		// Everything not matched below (crons, for instance).
		On("*", "*", func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
			if len(ev.User.Permissions) == 0 {
				return nil, notAuthorized()
			}
			return nil, nil
		}).
		On("assistants", "create", func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
			if !ev.User.HasPermission("assistants:write") {
				return nil, notAuthorized()
			}
			ev.SetMetadata("owner", ev.User.Identity)
			return nil, nil
		}).
		On("assistants", "search", func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
			return owner(ev), nil
		}).
		On("assistants", "*", ownerOnEveryAction(owner)).
		On("threads", "*", ownerOnEveryAction(owner)).
		On("threads", "create", func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
			if !slices.ContainsFunc([]string{"me", "threads:write", "threads:*"}, ev.User.HasPermission) {
				return nil, notAuthorized()
			}
			ev.SetMetadata("owner", ev.User.Identity)
			return owner(ev), nil
		}).
		On("store", "*", func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
			id := ev.User.Identity
			if id == "" {
				return nil, notAuthorized()
			}
			if ns := ev.Value.(*graphserver.StoreRequest).Namespace; len(ns) > 0 && !slices.Contains(ns, id) {
				return nil, notAuthorized()
			}
			return graphserver.Filter{"namespace": graphserver.Object{"$contains": id}}, nil
		}), nil
}

// ownerOnEveryAction narrows every action to the caller's own resources,
// and stamps the caller as owner on what create, update and create_run
// write.
func ownerOnEveryAction(owner func(*graphserver.AuthEvent) graphserver.Filter) graphserver.AuthHandler {
	return func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
		switch ev.Action {
		case "create", "update", "create_run":
			ev.SetMetadata("owner", ev.User.Identity)
		}
		return owner(ev), nil
	}
}

// referenceUserFromClaims looks the token's sub up in the user table; the
// user's permissions are the token's scopes the row grants, in the order
// of the scopes.
func referenceUserFromClaims(ctx context.Context, claims jwt.MapClaims) (*graphserver.User, error) {
	sub, _ := claims.GetSubject()
	row, ok := referenceUsers[sub]
	if !ok {
		return nil, graphserver.AuthError(http.StatusUnauthorized, jwtauth.MessageMissing, map[string]string{"WWW-Authenticate": "Bearer"})
	}
	perms := []string{}
	for _, s := range jwtauth.Scopes(claims) {
		if slices.Contains(row.permissions, s) {
			perms = append(perms, s)
		}
	}
	return &graphserver.User{
		Identity:        row.identity,
		DisplayName:     row.displayName,
		Permissions:     perms,
		IsAuthenticated: true,
		Extra: graphserver.Object{
			"username": row.username,
			"email":    row.email,
			"disabled": row.disabled,
		},
	}, nil
}
