// Package jwtauth authenticates requests carrying a JSON Web Token as a
// bearer token ("Authorization: Bearer <jwt>"), verified with
// github.com/golang-jwt/jwt/v5: HS256 with a shared secret, or RS256 with an
// RSA public key. The verified claims become the graphserver.User, by
// default sub as the identity and scopes as the permissions; Options.User
// maps them otherwise (a user table lookup, say).
//
// Use it as the Authenticator of a graphserver.Auth:
//
//	authn, err := jwtauth.New(jwtauth.Options{HMACKey: secret})
//	auth := graphserver.NewAuth(authn).On(...)
//
// Limits: one key (no JWKS fetching or key rotation); tokens must carry exp
// unless Options.ExpiryOptional.
package jwtauth

import (
	"context"
	"crypto/rsa"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/graphserver/graphserver"
)

// Messages of the 401 answers, as LangGraph's reference JWT example words
// them.
const (
	MessageMissing = "Could not validate credentials"
	MessageInvalid = "Failed to verify JWT token"
)

// Options configures an Authenticator. Exactly one of HMACKey and
// RSAPublicKey is required.
type Options struct {
	// HMACKey verifies HS256 tokens.
	HMACKey []byte
	// RSAPublicKey verifies RS256 tokens.
	RSAPublicKey *rsa.PublicKey

	// Issuer and Audience, when set, must match the iss and aud claims.
	Issuer   string
	Audience string
	// Leeway tolerates clock skew on exp, nbf and iat. Default 0.
	Leeway time.Duration
	// ExpiryOptional accepts tokens without exp. Default false: a token
	// without exp is invalid.
	ExpiryOptional bool

	// User maps a verified token's claims to the user. It may return an
	// *graphserver.Error (graphserver.AuthError) to reject the token with
	// its own status; any other error is answered 401 MessageMissing.
	// Default: DefaultUser.
	User func(ctx context.Context, claims jwt.MapClaims) (*graphserver.User, error)
}

// Authenticator verifies bearer JWTs. It is safe for concurrent use.
type Authenticator struct {
	parser *jwt.Parser
	key    any
	user   func(ctx context.Context, claims jwt.MapClaims) (*graphserver.User, error)
}

var _ graphserver.Authenticator = (*Authenticator)(nil)

// New returns an Authenticator, or an error when the options name no key
// or two.
func New(opts Options) (*Authenticator, error) {
	var alg string
	var key any
	switch {
	case len(opts.HMACKey) > 0 && opts.RSAPublicKey != nil:
		return nil, errors.New("jwtauth: set HMACKey or RSAPublicKey, not both")
	case len(opts.HMACKey) > 0:
		alg, key = jwt.SigningMethodHS256.Alg(), slices.Clone(opts.HMACKey)
	case opts.RSAPublicKey != nil:
		alg, key = jwt.SigningMethodRS256.Alg(), opts.RSAPublicKey
	default:
		return nil, errors.New("jwtauth: HMACKey or RSAPublicKey is required")
	}
	popts := []jwt.ParserOption{jwt.WithValidMethods([]string{alg}), jwt.WithLeeway(opts.Leeway)}
	if !opts.ExpiryOptional {
		popts = append(popts, jwt.WithExpirationRequired())
	}
	if opts.Issuer != "" {
		popts = append(popts, jwt.WithIssuer(opts.Issuer))
	}
	if opts.Audience != "" {
		popts = append(popts, jwt.WithAudience(opts.Audience))
	}
	a := &Authenticator{parser: jwt.NewParser(popts...), key: key, user: opts.User}
	if a.user == nil {
		a.user = DefaultUser
	}
	return a, nil
}

// bearerHeaders go with every 401 (RFC 6750).
var bearerHeaders = map[string]string{"WWW-Authenticate": "Bearer"}

// Authenticate reads the bearer token of r, verifies it and maps its
// claims to the user. A missing Authorization header, or one not starting
// with "Bearer " (any case), is answered 401 MessageMissing; a token that
// fails verification (signature, algorithm, exp, nbf, iss, aud) 401
// MessageInvalid; both with WWW-Authenticate: Bearer.
func (a *Authenticator) Authenticate(ctx context.Context, r *graphserver.AuthRequest) (*graphserver.User, error) {
	h := r.Header("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") || strings.TrimSpace(token) == "" {
		return nil, graphserver.AuthError(http.StatusUnauthorized, MessageMissing, bearerHeaders)
	}
	claims := jwt.MapClaims{}
	if _, err := a.parser.ParseWithClaims(strings.TrimSpace(token), claims, func(*jwt.Token) (any, error) { return a.key, nil }); err != nil {
		e := graphserver.AuthError(http.StatusUnauthorized, MessageInvalid, bearerHeaders)
		e.Err = err
		return nil, e
	}
	u, err := a.user(ctx, claims)
	var ge *graphserver.Error
	switch {
	case errors.As(err, &ge):
		return nil, err
	case err != nil || u == nil || u.Identity == "":
		e := graphserver.AuthError(http.StatusUnauthorized, MessageMissing, bearerHeaders)
		e.Err = err
		return nil, e
	}
	return u, nil
}

// registered are the claims DefaultUser does not copy into User.Extra.
var registered = []string{"sub", "iss", "aud", "exp", "nbf", "iat", "jti", "scope", "scopes", "name"}

// DefaultUser maps claims to a user: sub is the identity, name the display
// name, the scopes list (or the space-separated scope string) the
// permissions; the other non-registered claims go to Extra. A token
// without sub is rejected.
func DefaultUser(ctx context.Context, claims jwt.MapClaims) (*graphserver.User, error) {
	sub, err := claims.GetSubject()
	if err != nil || sub == "" {
		return nil, errors.New("jwtauth: the token has no sub claim")
	}
	u := &graphserver.User{Identity: sub, Permissions: Scopes(claims), IsAuthenticated: true, Extra: graphserver.Object{}}
	u.DisplayName, _ = claims["name"].(string)
	for k, v := range claims {
		if !slices.Contains(registered, k) {
			u.Extra[k] = v
		}
	}
	return u, nil
}

// Scopes returns the token's scopes: the "scopes" claim (a list of
// strings), else the "scope" claim split on spaces (OAuth 2.0), else none.
func Scopes(claims jwt.MapClaims) []string {
	if list, ok := claims["scopes"].([]any); ok {
		var out []string
		for _, s := range list {
			if s, ok := s.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	if s, ok := claims["scope"].(string); ok {
		return strings.Fields(s)
	}
	return nil
}
