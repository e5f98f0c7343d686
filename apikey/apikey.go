// Package apikey authenticates requests by a static API key sent in the
// x-api-key header, the header the official LangGraph SDKs send (their
// apiKey option, or the LANGGRAPH_API_KEY environment variable). Keys are
// compared in constant time.
//
//	authn := apikey.New(map[string]graphserver.User{
//		os.Getenv("ANN_KEY"): {Identity: "ann", Permissions: []string{"admin"}},
//	})
//	auth := graphserver.NewAuth(authn).On(...)
//
// Limits: the keys are fixed when New is called; keep them out of source
// code.
package apikey

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"slices"

	"github.com/graphserver/graphserver"
)

// Header is the request header holding the key.
const Header = "X-Api-Key"

// MessageInvalid is the message of the 401 for a missing or unknown key.
const MessageInvalid = "Invalid or missing API key"

// Authenticator maps API keys to users. It is safe for concurrent use.
type Authenticator struct {
	keys []entry
}

type entry struct {
	digest [sha256.Size]byte
	user   graphserver.User
}

var _ graphserver.Authenticator = (*Authenticator)(nil)

// New returns an Authenticator accepting the keys of users, each
// authenticating as its user (IsAuthenticated is set). Empty keys are
// ignored. New copies what it keeps.
func New(users map[string]graphserver.User) *Authenticator {
	a := &Authenticator{}
	for key, u := range users {
		if key == "" {
			continue
		}
		u.Permissions = slices.Clone(u.Permissions)
		u.Extra = u.Extra.Clone()
		u.IsAuthenticated = true
		a.keys = append(a.keys, entry{digest: sha256.Sum256([]byte(key)), user: u})
	}
	return a
}

// Authenticate returns the user of the request's x-api-key, or a 401
// MessageInvalid. The key is compared with every known key in constant
// time (through their SHA-256 digests, so that lengths do not leak), and
// every key is compared, so the time taken does not tell which matched.
func (a *Authenticator) Authenticate(ctx context.Context, r *graphserver.AuthRequest) (*graphserver.User, error) {
	given := r.Header(Header)
	if given == "" {
		return nil, graphserver.AuthError(http.StatusUnauthorized, MessageInvalid, nil)
	}
	d := sha256.Sum256([]byte(given))
	var found *entry
	for i := range a.keys {
		if subtle.ConstantTimeCompare(d[:], a.keys[i].digest[:]) == 1 {
			found = &a.keys[i]
		}
	}
	if found == nil {
		return nil, graphserver.AuthError(http.StatusUnauthorized, MessageInvalid, nil)
	}
	u := found.user
	u.Permissions = slices.Clone(u.Permissions)
	u.Extra = u.Extra.Clone()
	return &u, nil
}
