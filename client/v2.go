package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"strings"

	"github.com/coder/websocket"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/errmap"
	"github.com/graphserver/graphserver/internal/sse"
)

// Protocol v2 (thread-centric streaming, the SDKs' client.threads.stream):
// commands on POST /threads/{id}/commands, a thread's events on
// POST /threads/{id}/stream/events (SSE) or the WebSocket at
// GET /threads/{id}/stream/events.

// RunStart is the params of run.start: a run of AssistantID on the thread,
// which the server creates when it is missing. When the thread waits at
// an interrupt, Input is the resume value.
type RunStart struct {
	AssistantID string               `json:"assistant_id"`
	Input       any                  `json:"input,omitempty"`
	Config      graphserver.Object   `json:"config,omitempty"`
	Metadata    graphserver.Metadata `json:"metadata,omitempty"`
	// MultitaskStrategy applies when the thread is busy: reject, interrupt,
	// rollback or enqueue; "" leaves it to the server (LangGraph's:
	// enqueue). Sent as multitaskStrategy, as the JS SDK does.
	MultitaskStrategy string `json:"multitaskStrategy,omitempty"`
}

// InterruptResponse answers one interrupt (input.respond).
type InterruptResponse struct {
	// InterruptID is the id of an input.requested event's interrupt.
	InterruptID string `json:"interrupt_id"`
	// Namespace is the interrupt's namespace; nil is the root, [].
	Namespace []string `json:"namespace"`
	// Response is the value the interrupt returns in the graph.
	Response any `json:"response"`
}

// StartedRun is what run.start and input.respond answer.
type StartedRun struct {
	// RunID is the run started; it is an ordinary run (join, cancel or
	// list it with Runs).
	RunID string
	// AppliedThroughSeq is the seq the command is applied after: Events
	// with Since set to it miss none of the run's events.
	AppliedThroughSeq int64
}

// CommandError is a command's error reply ({"type": "error", "id",
// "error", "message"}). It unwraps to the *Error of the HTTP status the
// reply came with, or, for a reply without one (over a WebSocket, or a
// server answering errors with 200), to a *graphserver.Error of the code's
// meaning, so graphserver.ErrorCode works on it.
type CommandError struct {
	// Method is the command's method.
	Method string
	// Code is the protocol's error code: invalid_argument,
	// unknown_command, no_such_run, no_such_interrupt, not_supported, ...
	Code string
	// Message is the server's message.
	Message string

	err error
}

// Error returns "<method>: <code>: <message>".
func (e *CommandError) Error() string {
	return fmt.Sprintf("client: %s: %s: %s", e.Method, e.Code, e.Message)
}

// Unwrap returns the *Error of the reply's status, or the
// *graphserver.Error the code maps to.
func (e *CommandError) Unwrap() error { return e.err }

// codeOf maps a protocol error code to the domain's.
func codeOf(code string) string {
	switch {
	case code == graphserver.CodeInvalidArgument:
		return graphserver.EINVALID
	case strings.HasPrefix(code, "no_such_"):
		return graphserver.ENOTFOUND
	case code == graphserver.CodePermissionDenied:
		return graphserver.EFORBIDDEN
	case code == graphserver.CodeUnknownCommand || code == graphserver.CodeNotSupported:
		return graphserver.EBADREQUEST
	}
	return graphserver.EINTERNAL
}

// commandReply is a command's reply as the server writes it.
type commandReply struct {
	Type    string          `json:"type"`
	ID      *int64          `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   string          `json:"error"`
	Message string          `json:"message"`
	Meta    struct {
		AppliedThroughSeq int64 `json:"applied_through_seq"`
	} `json:"meta"`
}

// Command sends one protocol-v2 command to a thread (POST
// /threads/{id}/commands) and returns its result, Result being the raw
// JSON of the reply's result. The client numbers the command. An error
// reply is a *CommandError; commands are never retried (run.start creates
// a run). See graphserver.Server.ThreadCommand for the methods.
func (t *Threads) Command(ctx context.Context, threadID, method string, params any) (*graphserver.ThreadCommandResult, error) {
	body := map[string]any{"id": t.c.commandID.Add(1), "method": method}
	if params != nil {
		body["params"] = params
	}
	var rep commandReply
	err := t.c.json(ctx, call{method: http.MethodPost, path: "/threads/" + esc(threadID) + "/commands", body: body}, &rep)
	if err != nil {
		var he *Error
		if errors.As(err, &he) && json.Unmarshal(he.Body, &rep) == nil && rep.Type == "error" {
			return nil, &CommandError{Method: method, Code: rep.Error, Message: rep.Message, err: he}
		}
		return nil, err
	}
	if rep.Type == "error" {
		return nil, &CommandError{Method: method, Code: rep.Error, Message: rep.Message,
			err: &graphserver.Error{Code: codeOf(rep.Error), Message: rep.Message}}
	}
	res := &graphserver.ThreadCommandResult{AppliedThroughSeq: rep.Meta.AppliedThroughSeq}
	if len(rep.Result) > 0 {
		res.Result = rep.Result
	}
	return res, nil
}

// StartRun sends run.start: a run on the thread, created when missing.
func (t *Threads) StartRun(ctx context.Context, threadID string, p RunStart) (*StartedRun, error) {
	return t.started(t.Command(ctx, threadID, graphserver.CommandRunStart, p))
}

// Respond sends input.respond: the thread's interrupted run resumes with
// the responses, in one run.
func (t *Threads) Respond(ctx context.Context, threadID string, responses ...InterruptResponse) (*StartedRun, error) {
	if len(responses) == 0 {
		return nil, errors.New("client: Respond needs at least one response")
	}
	for i := range responses {
		if responses[i].Namespace == nil {
			responses[i].Namespace = []string{}
		}
	}
	var params any = responses[0]
	if len(responses) > 1 {
		params = map[string]any{"responses": responses}
	}
	return t.started(t.Command(ctx, threadID, graphserver.CommandInputRespond, params))
}

// started reads the {run_id} of a command's result.
func (t *Threads) started(res *graphserver.ThreadCommandResult, err error) (*StartedRun, error) {
	if err != nil {
		return nil, err
	}
	var r struct {
		RunID string `json:"run_id"`
	}
	if raw, ok := res.Result.(json.RawMessage); ok {
		_ = json.Unmarshal(raw, &r)
	}
	return &StartedRun{RunID: r.RunID, AppliedThroughSeq: res.AppliedThroughSeq}, nil
}

// wireEvent is a protocol-v2 event as the wire carries it.
type wireEvent struct {
	Type    string `json:"type"`
	EventID string `json:"event_id"`
	Seq     int64  `json:"seq"`
	Method  string `json:"method"`
	Params  struct {
		Namespace []string        `json:"namespace"`
		Data      json.RawMessage `json:"data"`
	} `json:"params"`
}

func (w *wireEvent) event() graphserver.ThreadEvent {
	ns := w.Params.Namespace
	if ns == nil {
		ns = []string{}
	}
	return graphserver.ThreadEvent{Seq: w.Seq, EventID: w.EventID, Method: w.Method, Namespace: ns, Data: w.Params.Data}
}

// Events follows a thread's protocol-v2 events over SSE (POST
// /threads/{id}/stream/events) matching req, until ctx ends (it yields
// ctx's cause) or an error the client cannot get past. The thread need
// not exist yet. The stream does not end with a run: the thread's next
// run comes on it too. When the connection breaks, the client opens the
// stream again with since = the seq of the last event it yielded (up to
// Options.MaxReconnects times in a row) and drops events it already
// yielded, so none is lost or repeated while the server retains them.
// Each range over the iterator opens a new stream.
func (t *Threads) Events(ctx context.Context, threadID string, req graphserver.ThreadEventsRequest) iter.Seq2[graphserver.ThreadEvent, error] {
	return func(yield func(graphserver.ThreadEvent, error) bool) {
		f := follower{c: t.c, req: req}
		for {
			resp, err := t.c.open(ctx, call{method: http.MethodPost, path: "/threads/" + esc(threadID) + "/stream/events", body: f.request(), long: true, stream: true})
			if err == nil {
				if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
					resp.Body.Close()
					yield(graphserver.ThreadEvent{}, fmt.Errorf("client: thread events: expected a text/event-stream answer, got %q", resp.Header.Get("Content-Type")))
					return
				}
				err = f.readSSE(resp.Body, yield)
				resp.Body.Close()
				if errors.Is(err, errStop) {
					return
				}
			}
			if !f.retry(ctx, err, yield) {
				return
			}
		}
	}
}

// EventsWebSocket is Events over the protocol-v2 WebSocket (the JS SDK's
// streamProtocol "v2-websocket"): it dials GET /threads/{id}/stream/events
// and sends subscription.subscribe with req. A broken socket is dialled
// again and subscribed with since = the last seq yielded (graphserver
// replays from there; other servers replay the latest run, and the events
// already yielded are dropped).
func (t *Threads) EventsWebSocket(ctx context.Context, threadID string, req graphserver.ThreadEventsRequest) iter.Seq2[graphserver.ThreadEvent, error] {
	return func(yield func(graphserver.ThreadEvent, error) bool) {
		f := follower{c: t.c, req: req}
		for {
			err := f.socket(ctx, threadID, yield)
			if errors.Is(err, errStop) {
				return
			}
			if !f.retry(ctx, err, yield) {
				return
			}
		}
	}
}

// errStop is returned when the consumer stopped the iteration.
var errStop = errors.New("stop")

// follower is the state of one Events or EventsWebSocket iteration.
type follower struct {
	c        *Client
	req      graphserver.ThreadEventsRequest
	last     int64 // seq of the last event yielded
	yielded  bool
	failures int // reconnections since the last event
}

// request is the subscription to send: from the last event yielded on.
func (f *follower) request() graphserver.ThreadEventsRequest {
	req := f.req
	if f.yielded {
		since := f.last
		req.Since = &since
	}
	return req
}

// deliver yields ev unless it was yielded already.
func (f *follower) deliver(w *wireEvent, yield func(graphserver.ThreadEvent, error) bool) error {
	if f.yielded && w.Seq <= f.last {
		return nil
	}
	f.last, f.yielded, f.failures = w.Seq, true, 0
	if !yield(w.event(), nil) {
		return errStop
	}
	return nil
}

// retry decides, after a stream ended with err, whether to reconnect
// (after a delay); otherwise it yields the error.
func (f *follower) retry(ctx context.Context, err error, yield func(graphserver.ThreadEvent, error) bool) bool {
	if ctx.Err() != nil {
		yield(graphserver.ThreadEvent{}, context.Cause(ctx))
		return false
	}
	var he *Error
	if err != nil && (errors.As(err, &he) || errors.Is(err, sse.ErrFrameTooLarge)) || f.failures >= f.c.reconnects {
		if err == nil {
			err = errors.New("client: thread events: the server ended the stream")
		}
		yield(graphserver.ThreadEvent{}, err)
		return false
	}
	if err := sleep(ctx, f.c.delay(f.failures, 0)); err != nil {
		yield(graphserver.ThreadEvent{}, err)
		return false
	}
	f.failures++
	return true
}

// readSSE yields the events of one SSE answer; it returns nil at the end
// of the answer, errStop when the consumer stopped, or the read error.
func (f *follower) readSSE(body io.Reader, yield func(graphserver.ThreadEvent, error) bool) error {
	dec := sse.NewDecoder(body, 0)
	for {
		fr, err := dec.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var w wireEvent
		if json.Unmarshal(fr.Data, &w) != nil || w.Type != "event" {
			continue
		}
		if err := f.deliver(&w, yield); err != nil {
			return err
		}
	}
}

// socket dials the thread's WebSocket, subscribes and yields its events
// until it breaks (the error) or the consumer stops (errStop).
func (f *follower) socket(ctx context.Context, threadID string, yield func(graphserver.ThreadEvent, error) bool) error {
	u := *f.c.base
	u.Path = f.c.base.Path + "/threads/" + esc(threadID) + "/stream/events"
	u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	h := http.Header{}
	h.Set("User-Agent", "graphserver-go-client/"+graphserver.Version)
	for k, v := range f.c.headers {
		h.Set(k, v)
	}
	if f.c.apiKey != "" {
		h.Set("x-api-key", f.c.apiKey)
	}
	hc := f.c.hc
	if f.c.onRequest != nil {
		cp := *hc
		cp.Transport = hookTransport{base: cmpTransport(hc.Transport), hook: f.c.onRequest}
		hc = &cp
	}
	conn, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPClient: hc, HTTPHeader: h})
	if err != nil {
		if resp != nil && resp.StatusCode >= 300 {
			return &Error{Status: resp.StatusCode, Detail: http.StatusText(resp.StatusCode),
				domain: &graphserver.Error{Code: errmap.Code(resp.StatusCode), Message: http.StatusText(resp.StatusCode), Status: resp.StatusCode}}
		}
		return &netError{op: "GET " + u.Path, err: err}
	}
	defer conn.CloseNow()
	conn.SetReadLimit(sse.MaxFrameDefault)
	id := f.c.commandID.Add(1)
	sub, err := json.Marshal(map[string]any{"id": id, "method": graphserver.CommandSubscriptionSubscribe, "params": f.request()})
	if err != nil {
		return err
	}
	if err := conn.Write(ctx, websocket.MessageText, sub); err != nil {
		return &netError{op: "websocket subscribe", err: err}
	}
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			return &netError{op: "websocket read", err: err}
		}
		var w wireEvent
		if json.Unmarshal(b, &w) != nil {
			continue
		}
		if w.Type == "event" {
			if err := f.deliver(&w, yield); err != nil {
				conn.Close(websocket.StatusNormalClosure, "")
				return err
			}
			continue
		}
		var rep commandReply
		if json.Unmarshal(b, &rep) == nil && rep.Type == "error" && rep.ID != nil && *rep.ID == id {
			ce := &CommandError{Method: graphserver.CommandSubscriptionSubscribe, Code: rep.Error, Message: rep.Message,
				err: &graphserver.Error{Code: codeOf(rep.Error), Message: rep.Message}}
			yield(graphserver.ThreadEvent{}, ce)
			return errStop
		}
	}
}

// hookTransport calls Options.OnRequest on the WebSocket handshake.
type hookTransport struct {
	base http.RoundTripper
	hook func(*http.Request) error
}

func (t hookTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if err := t.hook(r); err != nil {
		return nil, err
	}
	return t.base.RoundTrip(r)
}

func cmpTransport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		return http.DefaultTransport
	}
	return rt
}
