package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/client"
)

// recorder is a fake server recording the requests it gets and answering
// each with the next scripted answer for its path (the last one repeats).
type recorder struct {
	mu      sync.Mutex
	reqs    []*http.Request
	answers map[string][]func(w http.ResponseWriter, r *http.Request)
	srv     *httptest.Server
}

func newRecorder(t testing.TB) *recorder {
	t.Helper()
	rec := &recorder{answers: map[string][]func(http.ResponseWriter, *http.Request){}}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, r.Clone(context.WithoutCancel(r.Context())))
		key := r.Method + " " + r.URL.Path
		as := rec.answers[key]
		var a func(http.ResponseWriter, *http.Request)
		if len(as) > 0 {
			a = as[0]
			if len(as) > 1 {
				rec.answers[key] = as[1:]
			}
		}
		rec.mu.Unlock()
		if a == nil {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"version":"x","flags":{}}`))
			return
		}
		a(w, r)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

// on scripts the answers to method+path.
func (rec *recorder) on(key string, answers ...func(http.ResponseWriter, *http.Request)) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.answers[key] = answers
}

// count returns how many requests reached method+path.
func (rec *recorder) count(key string) int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	n := 0
	for _, r := range rec.reqs {
		if r.Method+" "+r.URL.Path == key {
			n++
		}
	}
	return n
}

func (rec *recorder) last() *http.Request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.reqs[len(rec.reqs)-1]
}

// status answers with a status and a body.
func status(code int, contentType, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}
}

// hangUp closes the connection without an answer.
func hangUp(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) }

func (rec *recorder) client(t testing.TB, opts client.Options) *client.Client {
	t.Helper()
	opts.URL = rec.srv.URL
	if opts.RetryBackoff == 0 {
		opts.RetryBackoff = time.Millisecond
	}
	c, err := client.New(opts)
	require.NoError(t, err)
	return c
}

// TestAPIKeyEnvOrder: an explicit key wins; otherwise LANGGRAPH_API_KEY,
// LANGSMITH_API_KEY, LANGCHAIN_API_KEY, the first non-empty one with
// whitespace and quotes stripped (the SDKs' _get_api_key / getApiKey).
// It sets environment variables, so it does not run in parallel.
func TestAPIKeyEnvOrder(t *testing.T) {
	rec := newRecorder(t)
	key := func(opts client.Options) string {
		t.Helper()
		_, err := rec.client(t, opts).Info(t.Context())
		require.NoError(t, err)
		return rec.last().Header.Get("x-api-key")
	}
	t.Setenv("LANGGRAPH_API_KEY", "")
	t.Setenv("LANGSMITH_API_KEY", "")
	t.Setenv("LANGCHAIN_API_KEY", "")
	require.Empty(t, key(client.Options{}), "no key anywhere: no header")

	t.Setenv("LANGCHAIN_API_KEY", "chain")
	require.Equal(t, "chain", key(client.Options{}))
	t.Setenv("LANGSMITH_API_KEY", "  'smith'\n")
	require.Equal(t, "smith", key(client.Options{}), "LANGSMITH before LANGCHAIN, stripped")
	t.Setenv("LANGGRAPH_API_KEY", ` " " `)
	require.Equal(t, "smith", key(client.Options{}), "a key of only quotes and spaces is empty")
	t.Setenv("LANGGRAPH_API_KEY", `"graph"`)
	require.Equal(t, "graph", key(client.Options{}), "LANGGRAPH first")
	require.Equal(t, "explicit", key(client.Options{APIKey: "explicit"}), "the option wins")
	require.Empty(t, key(client.Options{NoEnvAPIKey: true}), "NoEnvAPIKey skips the environment")
}

// TestHeadersAndHook: default headers on every request, the hook may change
// each request (every retry included) and fail the call.
func TestHeadersAndHook(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	var calls atomic.Int32
	c := rec.client(t, client.Options{
		APIKey:  "k1",
		Headers: map[string]string{"X-Tenant": "acme", "User-Agent": "mine/1"},
		OnRequest: func(r *http.Request) error {
			n := calls.Add(1)
			r.Header.Set("Authorization", fmt.Sprintf("Bearer t%d", n))
			return nil
		},
	})
	_, err := c.Info(t.Context())
	require.NoError(t, err)
	r := rec.last()
	require.Equal(t, "acme", r.Header.Get("X-Tenant"))
	require.Equal(t, "mine/1", r.Header.Get("User-Agent"), "default headers override the client's own")
	require.Equal(t, "k1", r.Header.Get("x-api-key"))
	require.Equal(t, "Bearer t1", r.Header.Get("Authorization"))

	// the hook runs for each attempt
	rec.on("GET /threads/t1", status(503, "", "busy"), status(200, "application/json", `{"thread_id":"t1"}`))
	th, err := c.Threads.Get(t.Context(), "t1")
	require.NoError(t, err)
	require.Equal(t, "t1", th.ThreadID)
	require.Equal(t, int32(3), calls.Load())
	require.Equal(t, "Bearer t3", rec.last().Header.Get("Authorization"))
	require.Equal(t, "acme", rec.last().Header.Get("X-Tenant"))

	_, err = client.New(client.Options{Headers: map[string]string{"X-API-Key": "nope"}})
	require.ErrorContains(t, err, "x-api-key")
	_, err = client.New(client.Options{URL: "localhost:2024"})
	require.Error(t, err)
	_, err = client.New(client.Options{Headers: nil})
	require.NoError(t, err, "nil headers are allowed")
}

// TestHookError: an error from OnRequest is the call's error, and nothing
// is sent.
func TestHookError(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	boom := errors.New("hook says no")
	c := rec.client(t, client.Options{OnRequest: func(*http.Request) error { return boom }})
	_, err := c.Info(t.Context())
	require.ErrorIs(t, err, boom)
	require.Zero(t, rec.count("GET /info"))
}

// TestTimeout: Options.Timeout bounds plain requests but not streams.
func TestTimeout(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	rec.on("GET /threads/slow", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	rec.on("GET /threads/t/runs/r/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: metadata\ndata: {}\nid: 0\n\n: heartbeat\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-time.After(300 * time.Millisecond): // well past the timeout
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write([]byte("event: values\ndata: {}\nid: 1\n\n"))
	})
	c := rec.client(t, client.Options{Timeout: 50 * time.Millisecond, MaxRetries: -1})
	_, err := c.Threads.Get(t.Context(), "slow")
	require.ErrorIs(t, err, context.DeadlineExceeded)

	evs := collect(t, c.Runs.JoinStream(t.Context(), "t", "r", graphserver.JoinStreamOptions{}))
	require.Equal(t, []string{"metadata", "values"}, names(evs), "streams outlast the timeout; heartbeats are skipped")
}

// TestErrors: statuses map back to graphserver codes, and the detail comes
// from JSON or plain-text bodies.
func TestErrors(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	c := rec.client(t, client.Options{MaxRetries: -1})
	for _, tc := range []struct {
		status       int
		contentType  string
		body, detail string
		code         string
	}{
		{404, "application/json", `{"detail":"Thread with ID x not found"}`, "Thread with ID x not found", graphserver.ENOTFOUND},
		{409, "application/json", `{"detail":"Thread is busy"}`, "Thread is busy", graphserver.ECONFLICT},
		{422, "application/json", `{"detail":"Invalid JSON in request body"}`, "Invalid JSON in request body", graphserver.EINVALID},
		// the JS dev server: plain text, and zod's 400
		{404, "text/plain", "Thread not found", "Thread not found", graphserver.ENOTFOUND},
		{400, "application/json", `{"success":false,"error":{"issues":[],"name":"ZodError"}}`, "ZodError", graphserver.EBADREQUEST},
		{401, "", "", "Unauthorized", graphserver.EUNAUTHORIZED},
		{403, "application/json", `{"message":"nope"}`, "nope", graphserver.EFORBIDDEN},
		{413, "application/json", `{"detail":"too big"}`, "too big", graphserver.ETOOLARGE},
		{429, "application/json", `{"error":"slow down"}`, "slow down", graphserver.EUNAVAILABLE},
		{503, "application/json", `{"detail":"closing"}`, "closing", graphserver.EUNAVAILABLE},
		{500, "text/plain", "Not implemented", "Not implemented", graphserver.EINTERNAL},
	} {
		rec.on("GET /threads/x", status(tc.status, tc.contentType, tc.body))
		_, err := c.Threads.Get(t.Context(), "x")
		var ce *client.Error
		require.ErrorAs(t, err, &ce, tc.body)
		require.Equal(t, tc.status, ce.Status)
		require.Equal(t, tc.detail, ce.Detail)
		require.Equal(t, tc.body, string(ce.Body))
		require.Equal(t, tc.code, graphserver.ErrorCode(err), "%d %s", tc.status, tc.body)
		require.Equal(t, tc.detail, graphserver.ErrorMessage(err))
		var ge *graphserver.Error
		require.ErrorAs(t, err, &ge)
		require.Equal(t, tc.status, ge.Status)
		require.Equal(t, fmt.Sprintf("HTTP %d: %s", tc.status, tc.detail), err.Error())
	}
}

// TestRetries: what is retried, how often, and what never is.
func TestRetries(t *testing.T) {
	t.Parallel()
	ok := status(200, "application/json", `[]`)
	for _, tc := range []struct {
		name    string
		key     string
		answers []func(http.ResponseWriter, *http.Request)
		call    func(c *client.Client) error
		opts    client.Options
		sent    int
		wantErr string // graphserver code; "" = success
	}{
		{"GET retried after 502, 503, 504", "GET /threads/t/runs",
			[]func(http.ResponseWriter, *http.Request){status(502, "", ""), status(503, "", ""), status(504, "", ""), ok},
			func(c *client.Client) error {
				_, err := c.Runs.List(t.Context(), "t", graphserver.RunSearch{})
				return err
			},
			client.Options{}, 4, ""},
		{"429 retried", "GET /threads/t/runs",
			[]func(http.ResponseWriter, *http.Request){status(429, "", ""), ok},
			func(c *client.Client) error {
				_, err := c.Runs.List(t.Context(), "t", graphserver.RunSearch{})
				return err
			},
			client.Options{}, 2, ""},
		{"network error retried", "GET /threads/t/runs",
			[]func(http.ResponseWriter, *http.Request){hangUp, hangUp, ok},
			func(c *client.Client) error {
				_, err := c.Runs.List(t.Context(), "t", graphserver.RunSearch{})
				return err
			},
			client.Options{}, 3, ""},
		{"retries run out", "GET /threads/t/runs",
			[]func(http.ResponseWriter, *http.Request){status(503, "", "")},
			func(c *client.Client) error {
				_, err := c.Runs.List(t.Context(), "t", graphserver.RunSearch{})
				return err
			},
			client.Options{MaxRetries: 2}, 3, graphserver.EUNAVAILABLE},
		{"retries disabled", "GET /threads/t/runs",
			[]func(http.ResponseWriter, *http.Request){status(503, "", ""), ok},
			func(c *client.Client) error {
				_, err := c.Runs.List(t.Context(), "t", graphserver.RunSearch{})
				return err
			},
			client.Options{MaxRetries: -1}, 1, graphserver.EUNAVAILABLE},
		{"500 not retried", "GET /threads/t/runs",
			[]func(http.ResponseWriter, *http.Request){status(500, "", ""), ok},
			func(c *client.Client) error {
				_, err := c.Runs.List(t.Context(), "t", graphserver.RunSearch{})
				return err
			},
			client.Options{}, 1, graphserver.EINTERNAL},
		{"404 not retried", "GET /threads/t/runs",
			[]func(http.ResponseWriter, *http.Request){status(404, "", ""), ok},
			func(c *client.Client) error {
				_, err := c.Runs.List(t.Context(), "t", graphserver.RunSearch{})
				return err
			},
			client.Options{}, 1, graphserver.ENOTFOUND},
		{"read-only POST retried", "POST /threads/search",
			[]func(http.ResponseWriter, *http.Request){status(503, "", ""), hangUp, ok},
			func(c *client.Client) error {
				_, err := c.Threads.Search(t.Context(), graphserver.ThreadSearch{})
				return err
			},
			client.Options{}, 3, ""},
		{"PUT retried", "PUT /store/items",
			[]func(http.ResponseWriter, *http.Request){status(503, "", ""), status(204, "", "")},
			func(c *client.Client) error {
				return c.Store.PutItem(t.Context(), graphserver.ItemPut{Namespace: []string{"a"}, Key: "k", Value: graphserver.Object{}})
			},
			client.Options{}, 2, ""},
		{"run create never retried on 503", "POST /threads/t/runs",
			[]func(http.ResponseWriter, *http.Request){status(503, "", ""), ok},
			func(c *client.Client) error {
				_, err := c.Runs.Create(t.Context(), "t", graphserver.RunCreate{AssistantID: "a"})
				return err
			},
			client.Options{}, 1, graphserver.EUNAVAILABLE},
		{"run create never retried on a network error", "POST /runs",
			[]func(http.ResponseWriter, *http.Request){hangUp, ok},
			func(c *client.Client) error {
				_, err := c.Runs.Create(t.Context(), "", graphserver.RunCreate{AssistantID: "a"})
				return err
			},
			client.Options{}, 1, graphserver.EINTERNAL},
		{"run stream never retried", "POST /threads/t/runs/stream",
			[]func(http.ResponseWriter, *http.Request){status(502, "", ""), ok},
			func(c *client.Client) error {
				for _, err := range c.Runs.Stream(t.Context(), "t", graphserver.RunCreate{AssistantID: "a"}, client.StreamOptions{}) {
					return err
				}
				return nil
			},
			client.Options{}, 1, graphserver.EUNAVAILABLE},
		{"run wait never retried", "POST /runs/wait",
			[]func(http.ResponseWriter, *http.Request){status(429, "", ""), ok},
			func(c *client.Client) error {
				_, err := c.Runs.Wait(t.Context(), "", graphserver.RunCreate{AssistantID: "a"})
				return err
			},
			client.Options{}, 1, graphserver.EUNAVAILABLE},
		{"batch never retried", "POST /runs/batch",
			[]func(http.ResponseWriter, *http.Request){status(503, "", ""), ok},
			func(c *client.Client) error {
				_, err := c.Runs.CreateBatch(t.Context(), []graphserver.RunCreate{{AssistantID: "a"}})
				return err
			},
			client.Options{}, 1, graphserver.EUNAVAILABLE},
		{"other POST not retried", "POST /threads",
			[]func(http.ResponseWriter, *http.Request){status(503, "", ""), ok},
			func(c *client.Client) error {
				_, err := c.Threads.Create(t.Context(), graphserver.ThreadCreate{})
				return err
			},
			client.Options{}, 1, graphserver.EUNAVAILABLE},
		{"PATCH not retried", "PATCH /assistants/a",
			[]func(http.ResponseWriter, *http.Request){status(503, "", ""), ok},
			func(c *client.Client) error {
				_, err := c.Assistants.Update(t.Context(), "a", graphserver.AssistantPatch{})
				return err
			},
			client.Options{}, 1, graphserver.EUNAVAILABLE},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := newRecorder(t)
			rec.on(tc.key, tc.answers...)
			err := tc.call(rec.client(t, tc.opts))
			if tc.wantErr == "" {
				require.NoError(t, err)
			} else {
				requireCode(t, err, tc.wantErr)
			}
			require.Equal(t, tc.sent, rec.count(tc.key))
		})
	}
}

// TestRetryAfter: a Retry-After header sets the delay before the retry.
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	var first time.Time
	rec.on("GET /info", func(w http.ResponseWriter, r *http.Request) {
		first = time.Now()
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(429)
	}, status(200, "application/json", `{}`))
	c := rec.client(t, client.Options{})
	_, err := c.Info(t.Context())
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(first), time.Second)

	// a cancelled ctx ends the wait
	rec.on("GET /info", status(503, "", ""))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = c.Info(ctx)
	require.ErrorIs(t, err, context.Canceled)
}

// TestPathPrefix: a server mounted under a prefix, reconnect locations
// included, is reached through a base URL with that path.
func TestPathPrefix(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{wrap: func(h http.Handler) http.Handler {
		mux := http.NewServeMux()
		mux.Handle("/api/", http.StripPrefix("/api", h))
		return mux
	}})
	c, err := client.New(client.Options{URL: e.url + "/api/", NoEnvAPIKey: true})
	require.NoError(t, err)
	th, err := c.Threads.Create(t.Context(), graphserver.ThreadCreate{})
	require.NoError(t, err)
	out, err := c.Runs.Wait(t.Context(), th.ThreadID, graphserver.RunCreate{AssistantID: "echo", Input: raw(t, map[string]any{"p": 1})})
	require.NoError(t, err)
	require.JSONEq(t, `{"p":1}`, string(out))
	_, err = c.Threads.Get(t.Context(), "00000000-0000-4000-8000-000000000000")
	requireCode(t, err, graphserver.ENOTFOUND)
	require.True(t, strings.HasSuffix(e.url+"/api", "/api"))
}

// TestRunErrorShapes: the failure shapes servers send in error events and
// wait outputs.
func TestRunErrorShapes(t *testing.T) {
	t.Parallel()
	for out, want := range map[string]client.RunError{
		`{"__error__": {"error": "ValueError", "message": "boom"}}`:                                      {Name: "ValueError", Message: "boom"},
		`{"__error__": "{\"error\":\"Error\",\"message\":\"boom\"}"}`:                                    {Name: "Error", Message: "boom"},     // JS dev server
		`{"__error__": {"error": "Error", "message": "{\"error\":\"TypeError\",\"message\":\"boom\"}"}}`: {Name: "TypeError", Message: "boom"}, // JS dev server
		`{"__error__": "Run not found"}`:                                                                 {Name: "Error", Message: "Run not found"},
		`{"__error__": {"message": "no name"}}`:                                                          {Name: "Error", Message: "no name"},
	} {
		var re *client.RunError
		require.ErrorAs(t, client.OutputError(json.RawMessage(out)), &re, out)
		require.Equal(t, want, *re)
	}
	for _, out := range []string{`{"a": 1}`, `{"__error__": null}`, `[1]`, `null`, ``} {
		require.NoError(t, client.OutputError(json.RawMessage(out)), out)
	}
	require.NoError(t, client.RunErrorOf(graphserver.StreamEvent{Event: "values", Data: json.RawMessage(`{}`)}))
	require.EqualError(t, client.RunErrorOf(graphserver.StreamEvent{Event: "error", Data: json.RawMessage(`"Run not found"`)}), "Error: Run not found")
}
