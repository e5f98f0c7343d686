package graphserver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/textproto"
	"reflect"
	"slices"
)

// Auth is a deployment's access control: one authentication step that turns
// a request into a User, and authorization handlers, registered per event
// (resource and action), that allow, deny or narrow what the user reaches.
// Set it as Options.Auth; a nil Auth allows everything.
//
// Build one with NewAuth and On:
//
//	auth := graphserver.NewAuth(authenticator).
//		On("threads", "create", stampOwner).
//		On("threads", "*", ownerFilter).
//		On("*", "*", requirePermission)
//
// Resources are "assistants", "threads", "crons" and "store"; actions are
// "create", "read", "update", "delete", "search" and "create_run" (threads),
// and "put", "get", "search", "list_namespaces" and "delete" (store). For one
// event exactly one handler runs, the most specific registered: the one for
// resource:action, else resource:*, else *:action, else *:*. With none, the
// event is allowed without a filter.
//
// The Server enforces the handlers' answers on every method, whether called
// over HTTP (httpapi authenticates each request) or in-process (the caller
// puts the User in the context with NewContextWithUser). A method called
// without a User while an Auth is set fails with EUNAUTHORIZED. An Auth is
// safe for concurrent use once built; do not call On after passing it to New.
type Auth struct {
	authenticator Authenticator
	handlers      map[string]AuthHandler // "resource:action", "*" for any
}

// NewAuth returns an Auth authenticating requests with a. Register
// authorization handlers with On.
func NewAuth(a Authenticator) *Auth {
	return &Auth{authenticator: a, handlers: map[string]AuthHandler{}}
}

// On registers h for the events of resource and action, "*" (or "")
// standing for any resource or any action, and returns a for chaining. A
// later registration for the same pair replaces the earlier one.
func (a *Auth) On(resource, action string, h AuthHandler) *Auth {
	a.handlers[eventKey(resource, action)] = h
	return a
}

func eventKey(resource, action string) string {
	if resource == "" {
		resource = "*"
	}
	if action == "" {
		action = "*"
	}
	return resource + ":" + action
}

// handler returns the most specific handler for resource:action, or nil.
func (a *Auth) handler(resource, action string) AuthHandler {
	for _, k := range []string{eventKey(resource, action), eventKey(resource, "*"), eventKey("*", action), eventKey("*", "*")} {
		if h, ok := a.handlers[k]; ok {
			return h
		}
	}
	return nil
}

// Authenticator identifies the caller of a request. It returns the User, or
// an error rejecting the request: an *Error (made with AuthError) carries
// the status, message and headers of the answer; any other error is
// answered 401 "Unauthorized", keeping the error as the cause.
type Authenticator interface {
	Authenticate(ctx context.Context, r *AuthRequest) (*User, error)
}

// AuthenticatorFunc adapts a function to the Authenticator interface.
type AuthenticatorFunc func(ctx context.Context, r *AuthRequest) (*User, error)

// Authenticate calls f.
func (f AuthenticatorFunc) Authenticate(ctx context.Context, r *AuthRequest) (*User, error) {
	return f(ctx, r)
}

// AuthRequest is what an Authenticator sees of a request. The maps belong to
// the request: read them, do not keep them.
type AuthRequest struct {
	Method string
	// Path is the URL path, without the query.
	Path string
	// Headers are keyed by canonical MIME header name ("Authorization",
	// "X-Api-Key"); Header looks one up by any spelling.
	Headers map[string][]string
	// Query holds the URL query parameters.
	Query map[string][]string
	// PathParams holds the route's path parameters, such as "thread_id".
	PathParams map[string]string
}

// Header returns the first value of the named header, matched without
// regard to case, or "".
func (r *AuthRequest) Header(name string) string {
	if v := r.Headers[textproto.CanonicalMIMEHeaderKey(name)]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// User is an authenticated caller. Graphs see it in their run's
// config.configurable as langgraph_auth_user (User.Object),
// langgraph_auth_user_id (Identity) and langgraph_auth_permissions; its
// Identity is the default user_id of the runs it creates and the user_id of
// the crons it creates.
type User struct {
	// Identity names the user (required): owner filters compare it.
	Identity string
	// DisplayName defaults to Identity in Object.
	DisplayName string
	// Permissions are free strings the handlers interpret ("threads:write").
	Permissions []string
	// IsAuthenticated is false for an anonymous caller an Authenticator lets
	// through.
	IsAuthenticated bool
	// Extra holds more fields (email, tenant, ...), kept on the user object
	// graphs see.
	Extra Object
}

// Object returns the user object graphs see as
// configurable.langgraph_auth_user: the Extra fields, then identity,
// display_name, is_authenticated and permissions (never null).
func (u *User) Object() Object {
	o := u.Extra.Clone()
	o["identity"] = u.Identity
	o["display_name"] = u.DisplayName
	if u.DisplayName == "" {
		o["display_name"] = u.Identity
	}
	o["is_authenticated"] = u.IsAuthenticated
	perms := slices.Clone(u.Permissions)
	if perms == nil {
		perms = []string{}
	}
	o["permissions"] = perms
	return o
}

// HasPermission reports whether p is one of the user's permissions.
func (u *User) HasPermission(p string) bool {
	return u != nil && slices.Contains(u.Permissions, p)
}

type userKey struct{}

// NewContextWithUser returns a copy of ctx carrying u as the caller of the
// Server methods called with it. httpapi does this for every authenticated
// request; in-process callers do it themselves when an Auth is set.
func NewContextWithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFromContext returns the User NewContextWithUser put in ctx, or nil.
func UserFromContext(ctx context.Context) *User {
	u, _ := ctx.Value(userKey{}).(*User)
	return u
}

// AuthHandler decides one event. It returns a nil Filter and a nil error to
// allow the event as it is; a Filter to allow it on the resources whose
// metadata (store: namespace) matches only; or an error to refuse it, an
// *Error carrying its status and headers (Forbidden, AuthError) or any
// other error, answered 500. It may modify ev.Value (SetMetadata) to change
// what is created or updated.
type AuthHandler func(ctx context.Context, ev *AuthEvent) (Filter, error)

// AuthEvent is what an AuthHandler decides on: who asks to do what, with
// which value. Value is a pointer the handler may modify:
//
//	assistants:create           *AssistantCreate
//	assistants:read, delete     *AssistantRef
//	assistants:update           *AssistantUpdate (PATCH, or set latest version)
//	assistants:search           *AssistantSearch (search and count)
//	threads:create              *ThreadCreate (create, and the new thread of a copy)
//	threads:read                *ThreadRef (get, state, history, runs, joins, streams, copy source)
//	threads:update              *ThreadUpdate (PATCH, state updates, run cancels, supersteps)
//	threads:delete              *ThreadRef (thread or run delete), *ThreadPrune (prune)
//	threads:search              *ThreadSearch (search and count)
//	threads:create_run          *RunRequest (every run creation, stateless ones included)
//	crons:create                *CronCreateValue
//	crons:read, delete          *CronRef
//	crons:update                *CronUpdateValue
//	crons:search                *CronSearch (search and count)
//	store:<action>              *StoreRequest
type AuthEvent struct {
	User     *User
	Resource string
	Action   string
	Value    any
}

// Metadata returns the metadata of the event's value (nil when the value
// has none).
func (ev *AuthEvent) Metadata() Metadata {
	if p := metadataOf(ev.Value); p != nil {
		return *p
	}
	return nil
}

// SetMetadata sets metadata key to v on the event's value, so that the
// resource created or updated carries it (the usual owner stamp), and
// reports whether the value has metadata to set.
func (ev *AuthEvent) SetMetadata(key string, v any) bool {
	p := metadataOf(ev.Value)
	if p == nil {
		return false
	}
	m := p.Clone() // the caller may share the map
	m[key] = v
	*p = m
	return true
}

// metadataOf returns the metadata of the event values that carry metadata,
// nil for the others.
func metadataOf(v any) *Metadata {
	switch v := v.(type) {
	case *AssistantCreate:
		return &v.Metadata
	case *AssistantUpdate:
		return &v.Metadata
	case *AssistantSearch:
		return &v.Metadata
	case *ThreadCreate:
		return &v.Metadata
	case *ThreadUpdate:
		return &v.Metadata
	case *ThreadSearch:
		return &v.Metadata
	case *RunRequest:
		return &v.RunCreate.Metadata
	case *CronCreateValue:
		return &v.Metadata
	case *CronUpdateValue:
		return &v.Metadata
	case *CronSearch:
		return &v.Metadata
	}
	return nil
}

// AssistantRef is the value of assistants:read and assistants:delete.
type AssistantRef struct {
	AssistantID string `json:"assistant_id"`
}

// AssistantUpdate is the value of assistants:update: a PATCH, or (Version
// set) making a version the latest.
type AssistantUpdate struct {
	AssistantID string `json:"assistant_id"`
	Version     int    `json:"version,omitempty"`
	AssistantPatch
}

// ThreadRef is the value of threads:read and threads:delete; RunID names
// the run when the event is about one.
type ThreadRef struct {
	ThreadID string `json:"thread_id"`
	RunID    string `json:"run_id,omitempty"`
}

// ThreadUpdate is the value of threads:update. Action is "" for a PATCH,
// "update_state" for a state update, "supersteps" for a thread created with
// supersteps (after its threads:create), and "interrupt" or "rollback" for a
// run cancel (Metadata then holds run_ids and status, as in LangGraph).
type ThreadUpdate struct {
	ThreadID string `json:"thread_id"`
	Action   string `json:"action,omitempty"`
	ThreadPatch
}

// RunRequest is the value of threads:create_run. ThreadID is the run's
// thread, a new one for a stateless run (its temporary thread gets the
// run's metadata, so an owner stamped here owns it too).
type RunRequest struct {
	ThreadID string `json:"thread_id"`
	RunID    string `json:"run_id"`
	*RunCreate
}

// CronRef is the value of crons:read and crons:delete.
type CronRef struct {
	CronID string `json:"cron_id"`
}

// StoreRequest is the value of the store events. Namespace is the item's
// namespace (put, get, delete) or the prefix searched or listed (search,
// list_namespaces).
type StoreRequest struct {
	Namespace []string       `json:"namespace"`
	Key       string         `json:"key,omitempty"`
	Value     Object         `json:"value,omitempty"`
	Filter    map[string]any `json:"filter,omitempty"`
	Query     string         `json:"query,omitempty"`
	Suffix    []string       `json:"suffix,omitempty"`
	MaxDepth  int            `json:"max_depth,omitempty"`
	Limit     int            `json:"limit,omitempty"`
	Offset    int            `json:"offset,omitempty"`
}

// Forbidden returns the EFORBIDDEN error (403) a handler returns to refuse
// an event; an empty message reads "Forbidden".
func Forbidden(msg string) *Error {
	if msg == "" {
		msg = "Forbidden"
	}
	return &Error{Code: EFORBIDDEN, Message: msg}
}

// AuthError returns an error answered with status, {"detail": msg} and the
// given response headers (a 401 usually sets WWW-Authenticate), for
// Authenticators and handlers. Its code follows the status: EUNAUTHORIZED
// for 401, ENOTFOUND for 404, EFORBIDDEN otherwise.
func AuthError(status int, msg string, headers map[string]string) *Error {
	code := EFORBIDDEN
	switch status {
	case 401:
		code = EUNAUTHORIZED
	case 404:
		code = ENOTFOUND
	}
	return &Error{Code: code, Message: msg, Status: status, Headers: maps.Clone(headers)}
}

// ErrUnauthenticated is returned by Server methods called without a User in
// the context while an Auth is set.
var ErrUnauthenticated = Errorf(EUNAUTHORIZED, "Authentication required.")

// AuthEnabled reports whether an Auth is set: requests then need
// credentials.
func (s *Server) AuthEnabled() bool { return s.auth != nil }

// Authenticate runs the Auth's Authenticator on r; httpapi calls it once
// per request and puts the User in the request's context. Without an Auth
// it returns nil, nil. Errors are *Error values with the status to answer.
func (s *Server) Authenticate(ctx context.Context, r *AuthRequest) (*User, error) {
	if s.auth == nil {
		return nil, nil
	}
	var u *User
	var err error
	if s.recovered("authenticator", func() { u, err = s.auth.authenticator.Authenticate(ctx, r) }) {
		return nil, Errorf(EINTERNAL, "The authenticator failed.")
	}
	var e *Error
	switch {
	case errors.As(err, &e):
		return nil, err
	case err != nil:
		return nil, &Error{Code: EUNAUTHORIZED, Message: "Unauthorized", Err: err}
	case u == nil || u.Identity == "":
		return nil, Errorf(EINTERNAL, "The authenticator returned no identity.")
	}
	return u, nil
}

// systemKey marks a context whose calls bypass access control: the Server's
// own work, such as the store a graph reads and writes during a run.
type systemKey struct{}

func systemContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, systemKey{}, true)
}

// authFilter returns the access-control filter that narrows the caller's
// (identity taken from ctx) view of resource for action; value is the
// request as the authorization handlers see it, which they may modify.
// Every storage call of a Server method passes through here. A nil Filter
// lets the caller see everything (no Auth, no handler, or a handler
// returning none). It returns ErrUnauthenticated without a User in ctx, and
// the handler's error when it refuses.
func (s *Server) authFilter(ctx context.Context, resource, action string, value any) (Filter, error) {
	if s.auth == nil || ctx.Value(systemKey{}) != nil {
		return nil, nil
	}
	u := UserFromContext(ctx)
	if u == nil {
		return nil, ErrUnauthenticated
	}
	h := s.auth.handler(resource, action)
	if h == nil {
		return nil, nil
	}
	var f Filter
	var err error
	ev := &AuthEvent{User: u, Resource: resource, Action: action, Value: value}
	if s.recovered("auth handler", func() { f, err = h(ctx, ev) }, "event", resource+":"+action) {
		return nil, Errorf(EINTERNAL, "The authorization handler of %s:%s failed.", resource, action)
	}
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, err
		}
		return nil, fmt.Errorf("authorization handler %s:%s: %w", resource, action, err)
	}
	if err := checkAuthFilter(f); err != nil {
		return nil, fmt.Errorf("authorization handler %s:%s: %w", resource, action, err)
	}
	return f, nil
}

// checkAuthFilter checks that every condition of f is a JSON value or an
// object of $eq / $contains: storage drivers refuse anything else, and a
// handler's mistake must be a 500, not a client error.
func checkAuthFilter(f Filter) error {
	for k, v := range f {
		c, err := canonicalJSON(v)
		if err != nil {
			return fmt.Errorf("filter key %q: %w", k, err)
		}
		if ops, ok := operatorObject(c); ok {
			for op := range ops {
				if op != "$eq" && op != "$contains" {
					return fmt.Errorf("filter key %q: unsupported operator %q (use $eq or $contains)", k, op)
				}
			}
		}
	}
	return nil
}

// matchFilter reports whether doc (a JSON object) matches f, with the
// semantics storage drivers apply in SQL (see Filter). It serves the checks
// made on values held in memory: a store item's namespace and key, a run's
// event log whose thread is gone.
func matchFilter(doc map[string]any, f Filter) (bool, error) {
	if len(f) == 0 {
		return true, nil
	}
	d, err := canonicalJSON(doc)
	if err != nil {
		return false, err
	}
	dm, _ := d.(map[string]any)
	for k, cond := range f {
		got, present := dm[k]
		c, err := canonicalJSON(cond)
		if err != nil {
			return false, err
		}
		ops, isOps := operatorObject(c)
		if !isOps {
			if !present || !jsonContains(got, c) {
				return false, nil
			}
			continue
		}
		for op, arg := range ops {
			switch op {
			case "$eq":
				if !present || !jsonContains(got, arg) {
					return false, nil
				}
			case "$contains":
				want, ok := arg.([]any)
				if !ok {
					want = []any{arg}
				}
				if _, isList := got.([]any); !present || !isList || !jsonContains(got, want) {
					return false, nil
				}
			default:
				return false, Errorf(EINVALID, "The filter operator %q on key %q is not supported: use $eq or $contains.", op, k)
			}
		}
	}
	return true, nil
}

// jsonContains is PostgreSQL's jsonb @> on decoded JSON: objects contain
// objects key by key, arrays contain arrays element by element (each
// wanted element contained in some element), scalars are equal.
func jsonContains(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok || !jsonContains(hv, wv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return false
		}
		for _, wv := range w {
			if !slices.ContainsFunc(h, func(hv any) bool { return jsonContains(hv, wv) }) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(have, want)
	}
}
