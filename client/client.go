// Package client is a Go client for the LangGraph Platform HTTP API, as
// served by graphserver's httpapi and by the official servers (the Python
// Platform and the JS dev server of `langgraph dev`), plus RemoteGraph, a
// graph hosted by such a server used as a local graphserver.Graph or as a
// node of a graph built with package graph.
//
// Operations are grouped as the official SDKs group them — Assistants,
// Threads, Runs, Crons, Store — and take and return the root package's
// domain types (graphserver.Thread, graphserver.RunCreate, ...), so code
// written against *graphserver.Server in-process reads the same over HTTP:
//
//	c, err := client.New(client.Options{URL: "http://127.0.0.1:2024"})
//	th, err := c.Threads.Create(ctx, graphserver.ThreadCreate{})
//	for ev, err := range c.Runs.Stream(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "agent", Input: in}, client.StreamOptions{}) {
//		...
//	}
//
// Errors: a non-2xx response is an *Error carrying the status, the server's
// detail and the raw body; it unwraps to a *graphserver.Error whose code is
// read from the status through the table httpapi writes it with, so
// graphserver.ErrorCode(err) == graphserver.ENOTFOUND holds over HTTP as it
// does in-process (409 reads as ECONFLICT; EBUSY cannot be told apart). A
// run that failed, reported by Wait, Join or a stream's error event, is a
// *RunError naming the remote exception.
//
// Retries: requests that are safe to repeat (GET, PUT, DELETE and the POSTs
// that only read: search, count, state, history, versions, store search)
// are retried with exponential back-off and jitter after 429, 502, 503, 504
// or a network error, honouring Retry-After. A request that creates a run is
// never retried, nor is any other POST or PATCH.
//
// Streams: run streams decode Server-Sent Events into graphserver.StreamEvent
// values ({ID, Event, Data}) delivered by an iter.Seq2. Heartbeat comments are
// skipped. When the connection breaks mid-stream, the client reconnects to
// the stream's Location (or Content-Location + "/stream" when the server sets
// no Location, as the JS dev server does) with Last-Event-ID, and drops an
// event repeating the last id it delivered, so no event is lost or repeated.
//
// Protocol v2 (the SDKs' thread-centric client.threads.stream): commands
// with Threads.Command (StartRun, Respond), a thread's events as
// graphserver.ThreadEvent values with Threads.Events (SSE) or
// Threads.EventsWebSocket, which reconnect with since = the last seq.
//
// Limits: the JS dev server answers crons and some routes with 500 or 404;
// those errors surface as they are.
//
// A Client is safe for concurrent use.
package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/graphserver/graphserver"
)

// Defaults of Options.
const (
	// URLDefault is the base URL when Options.URL is empty (the JS SDK's).
	URLDefault = "http://127.0.0.1:8123"
	// MaxRetriesDefault is how often an idempotent request is retried.
	MaxRetriesDefault = 3
	// RetryBackoffDefault is the delay before the first retry; each next
	// one doubles it, up to RetryBackoffMax.
	RetryBackoffDefault = 500 * time.Millisecond
	// RetryBackoffMax caps a retry's delay (and a Retry-After the server sends).
	RetryBackoffMax = 10 * time.Second
	// MaxReconnectsDefault is how often a broken stream, wait or join is
	// reconnected in a row (the Python SDK's limit).
	MaxReconnectsDefault = 5
)

// apiKeyEnv lists the environment variables an API key is read from, in
// order (as both official SDKs do).
var apiKeyEnv = []string{"LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"}

// Options configure a Client. The zero value talks to URLDefault with the
// API key found in the environment.
type Options struct {
	// URL is the server's base URL, including the path prefix it is mounted
	// under, if any. Default URLDefault.
	URL string

	// APIKey is sent as the x-api-key header. When empty, the first of
	// LANGGRAPH_API_KEY, LANGSMITH_API_KEY and LANGCHAIN_API_KEY that is
	// non-empty once surrounding whitespace and quotes are stripped is used,
	// unless NoEnvAPIKey is set; none set means no key.
	APIKey string
	// NoEnvAPIKey disables reading the API key from the environment (the
	// SDKs' apiKey: null).
	NoEnvAPIKey bool

	// Headers are sent with every request; nil means none. x-api-key may
	// not be set here (use APIKey).
	Headers map[string]string

	// OnRequest, when set, is called with every outgoing request — each
	// retry and reconnection again — after the client set its headers and
	// before it is sent. It may change the request (add an Authorization
	// header, say); an error it returns fails the call with that error.
	OnRequest func(*http.Request) error

	// Timeout bounds each request and the reading of its response, except
	// run streams, waits and joins, which last as long as their run (as in
	// both SDKs). 0 means no timeout.
	Timeout time.Duration

	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client

	// MaxRetries is how many times an idempotent request is retried after a
	// 429, 502, 503 or 504 answer or a network error. 0 means
	// MaxRetriesDefault; -1 disables retries.
	MaxRetries int
	// RetryBackoff is the delay before the first retry, doubled for each
	// next one up to RetryBackoffMax, each with up to 50% random jitter.
	// 0 means RetryBackoffDefault.
	RetryBackoff time.Duration

	// MaxReconnects is how many times in a row a run stream, wait or join
	// whose connection broke is reconnected. 0 means MaxReconnectsDefault;
	// -1 disables reconnection.
	MaxReconnects int
}

// Client talks to one server. Create it with New; it is safe for
// concurrent use.
type Client struct {
	// Assistants, Threads, Runs, Crons and Store group the API's operations
	// as the official SDKs do.
	Assistants *Assistants
	Threads    *Threads
	Runs       *Runs
	Crons      *Crons
	Store      *Store

	base       *url.URL
	apiKey     string
	headers    map[string]string
	onRequest  func(*http.Request) error
	timeout    time.Duration
	hc         *http.Client
	retries    int
	backoff    time.Duration
	reconnects int
	commandID  atomic.Int64 // ids of protocol-v2 commands
}

// New returns a Client for opts. It does no I/O. It fails when the URL is
// not an absolute http(s) URL or Headers sets x-api-key.
func New(opts Options) (*Client, error) {
	base, err := url.Parse(cmp.Or(opts.URL, URLDefault))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("client: URL %q must be an absolute http or https URL", opts.URL)
	}
	base.Path = strings.TrimRight(base.Path, "/")
	base.RawPath = ""
	headers := make(map[string]string, len(opts.Headers))
	for k, v := range opts.Headers {
		if strings.EqualFold(k, "x-api-key") {
			return nil, errors.New("client: Headers may not set x-api-key; use Options.APIKey")
		}
		headers[k] = v
	}
	c := &Client{
		base:       base,
		apiKey:     opts.APIKey,
		headers:    headers,
		onRequest:  opts.OnRequest,
		timeout:    opts.Timeout,
		hc:         cmp.Or(opts.HTTPClient, http.DefaultClient),
		retries:    limit(opts.MaxRetries, MaxRetriesDefault),
		backoff:    cmp.Or(opts.RetryBackoff, RetryBackoffDefault),
		reconnects: limit(opts.MaxReconnects, MaxReconnectsDefault),
	}
	if c.apiKey == "" && !opts.NoEnvAPIKey {
		c.apiKey = envAPIKey()
	}
	c.Assistants = &Assistants{c}
	c.Threads = &Threads{c}
	c.Runs = &Runs{c}
	c.Crons = &Crons{c}
	c.Store = &Store{c}
	return c, nil
}

// limit applies the 0 = default, negative = none convention.
func limit(n, def int) int {
	switch {
	case n == 0:
		return def
	case n < 0:
		return 0
	}
	return n
}

// envAPIKey returns the first API key set in the environment, stripped of
// surrounding whitespace and quotes, or "".
func envAPIKey() string {
	for _, name := range apiKeyEnv {
		if v := strings.Trim(os.Getenv(name), " \t\r\n\"'"); v != "" {
			return v
		}
	}
	return ""
}

// Info returns what GET /info reports: version and feature flags.
func (c *Client) Info(ctx context.Context) (*graphserver.Info, error) {
	var out graphserver.Info
	return &out, c.json(ctx, call{method: http.MethodGet, path: "/info", idempotent: true}, &out)
}

// Ok checks that the server answers GET /ok; with checkDB it also asks the
// server to ping its storage.
func (c *Client) Ok(ctx context.Context, checkDB bool) error {
	q := url.Values{}
	if checkDB {
		q.Set("check_db", "1")
	}
	return c.json(ctx, call{method: http.MethodGet, path: "/ok", query: q, idempotent: true}, nil)
}

// call describes one API request.
type call struct {
	method string
	path   string // API path below the base URL, segments escaped
	query  url.Values
	body   any // encoded as JSON; nil sends no body
	// header holds extra request headers (a run's pass-through headers,
	// Last-Event-ID).
	header map[string]string
	// idempotent requests may be retried.
	idempotent bool
	// long requests (streams, waits, joins) are not bounded by
	// Options.Timeout.
	long bool
	// stream asks for text/event-stream.
	stream bool
	// url, when set, replaces base URL + path (a reconnection Location).
	url string
}

// json sends cl and decodes a 2xx JSON answer into out (nil: discard it).
// Bodies of 202 and 204 answers, and empty bodies, leave out unchanged.
func (c *Client) json(ctx context.Context, cl call, out any) error {
	_, err := c.do(ctx, cl, func(resp *http.Response) error { return decodeBody(resp, out) })
	return err
}

// decodeBody reads a JSON answer into out, tolerating the keep-alive
// whitespace /wait and /join write before their body.
func decodeBody(resp *http.Response, out any) error {
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if out == nil || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusAccepted || len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return &decodeError{err: err, status: resp.StatusCode, body: b}
	}
	return nil
}

// decodeError is a 2xx answer the client could not decode.
type decodeError struct {
	err    error
	status int
	body   []byte
}

func (e *decodeError) Error() string {
	return fmt.Sprintf("client: decode %d answer: %v (body %.200q)", e.status, e.err, e.body)
}

func (e *decodeError) Unwrap() error { return e.err }

// do sends cl, retrying it as the retry rules allow, and hands a 2xx answer
// to handle before closing its body; it returns the answer's headers. A
// non-2xx answer is an *Error. Each attempt, handle included, is bounded by
// Options.Timeout unless cl.long.
func (c *Client) do(ctx context.Context, cl call, handle func(*http.Response) error) (http.Header, error) {
	body, err := encode(cl.body)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		hdr, retryAfter, err := c.attempt(ctx, cl, body, handle)
		if err == nil {
			return hdr, nil
		}
		if !cl.idempotent || attempt >= c.retries || !retryable(ctx, err) {
			return hdr, err
		}
		if err := sleep(ctx, c.delay(attempt, retryAfter)); err != nil {
			return nil, err
		}
	}
}

// attempt sends cl once.
func (c *Client) attempt(ctx context.Context, cl call, body []byte, handle func(*http.Response) error) (http.Header, time.Duration, error) {
	if c.timeout > 0 && !cl.long {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	resp, err := c.send(ctx, cl, body)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return resp.Header, retryAfter(resp.Header), readError(resp)
	}
	if handle != nil {
		if err := handle(resp); err != nil {
			return resp.Header, 0, c.wrap(ctx, cl, err)
		}
	}
	return resp.Header, 0, nil
}

// send builds and sends one request for cl. The caller closes the body of
// the answer.
func (c *Client) send(ctx context.Context, cl call, body []byte) (*http.Response, error) {
	target := cl.url
	if target == "" {
		u := *c.base
		u.Path = c.base.Path + cl.path
		u.RawQuery = cl.query.Encode()
		target = u.String()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, target, rd)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", cl.method, cl.path, err)
	}
	req.Header.Set("User-Agent", "graphserver-go-client/"+graphserver.Version)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if cl.stream {
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Cache-Control", "no-store")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	for k, v := range cl.header {
		req.Header.Set(k, v)
	}
	if c.apiKey != "" {
		req.Header.Set("x-api-key", c.apiKey)
	}
	if c.onRequest != nil {
		if err := c.onRequest(req); err != nil {
			return nil, err
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.wrap(ctx, cl, err)
	}
	return resp, nil
}

// wrap names the request in a transport error; a ctx that ended gives its
// cause instead.
func (c *Client) wrap(ctx context.Context, cl call, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var de *decodeError
	if errors.As(err, &de) {
		return err
	}
	return &netError{op: cl.method + " " + cmp.Or(cl.path, cl.url), err: err}
}

// netError is a failure to reach the server or to read its answer.
type netError struct {
	op  string
	err error
}

func (e *netError) Error() string { return "client: " + e.op + ": " + e.err.Error() }
func (e *netError) Unwrap() error { return e.err }

// retryable reports whether a failed attempt may be repeated: a network
// error (not a cancelled ctx) or a 429, 502, 503 or 504 answer.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var e *Error
	if errors.As(err, &e) {
		switch e.Status {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	return isNetError(err)
}

// isNetError reports whether err is a transport failure (connection refused
// or reset, an answer cut short), as opposed to an answer or a decode error.
func isNetError(err error) bool {
	var ne *netError
	return errors.As(err, &ne)
}

// delay is the wait before retry number attempt+1.
func (c *Client) delay(attempt int, retryAfter time.Duration) time.Duration {
	d := c.backoff << min(attempt, 16)
	d = min(d, RetryBackoffMax)
	d += time.Duration(rand.Int64N(int64(d)/2 + 1))
	if retryAfter > 0 {
		d = max(d, min(retryAfter, RetryBackoffMax))
	}
	return d
}

// retryAfter reads a Retry-After header given in seconds.
func retryAfter(h http.Header) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After"))); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

// sleep waits d or until ctx ends (returning its cause).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// encode marshals a request body; nil gives none.
func encode(v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	if raw, ok := v.(json.RawMessage); ok {
		return raw, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("client: encode request body: %w", err)
	}
	return b, nil
}

// resolve turns a Location header into a URL on the client's server: a
// path is taken as relative to the API's base URL (servers mounted under a
// prefix do not know it); an absolute URL must have the base URL's origin,
// so credentials never leave for another host.
func (c *Client) resolve(loc string) (string, error) {
	u, err := url.Parse(loc)
	if err != nil {
		return "", fmt.Errorf("client: invalid Location %q: %w", loc, err)
	}
	if u.Scheme == "" && u.Host == "" {
		b := *c.base
		b.Path = c.base.Path + "/" + strings.TrimLeft(u.Path, "/")
		b.RawQuery = u.RawQuery
		return b.String(), nil
	}
	if !strings.EqualFold(u.Scheme, c.base.Scheme) || !strings.EqualFold(hostPort(u), hostPort(c.base)) {
		return "", fmt.Errorf("client: refusing to follow cross-origin Location %q", loc)
	}
	return u.String(), nil
}

// hostPort returns host:port with the scheme's default port filled in.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return u.Hostname() + ":443"
	}
	return u.Hostname() + ":80"
}

// esc escapes one path segment.
func esc(s string) string { return url.PathEscape(s) }
