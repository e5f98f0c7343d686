package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/graphserver/graphserver"
)

// Bounds of a protocol-v2 WebSocket.
const (
	maxWSSubscriptions = 64               // subscriptions open on one socket
	wsWriteTimeout     = 30 * time.Second // a frame the client does not take in this time ends the socket
	wsSentMemory       = 4096             // event ids remembered per socket to send each event once
	wsSubsMemory       = 16 << 20         // bytes of subscription filters remembered for subscription.reconnect
	maxRunIDBytes      = 512              // run_id and last_event_id of subscription.reconnect
)

// threadEventsSocket handles GET /threads/{thread_id}/stream/events
// upgraded to a WebSocket: the protocol-v2 transport of
// streamProtocol "v2-websocket". The client sends commands as text frames
// ({id, method, params}); subscription.subscribe {channels, namespaces?,
// depth?} answers {subscription_id} and sends the matching events (those
// of the latest run from its start, then live) as text frames,
// subscription.unsubscribe {subscription_id} stops them,
// subscription.reconnect {run_id, last_event_id?, subscriptions?} restores
// subscriptions a previous socket made (see reconnect), and every other
// command is executed as POST /threads/{id}/commands would. An event
// matching several subscriptions of the socket goes out once. A request
// that is no WebSocket upgrade is answered 426.
func (h *handler) threadEventsSocket(w http.ResponseWriter, r *http.Request) error {
	threadID := r.PathValue("thread_id")
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		w.Header().Set("Upgrade", "websocket")
		writeDetail(w, http.StatusUpgradeRequired, "GET /threads/{thread_id}/stream/events is a WebSocket (protocol v2): upgrade the connection, or POST a subscription for Server-Sent Events.")
		return nil
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: h.opts.CORSOrigins})
	if err != nil {
		return nil // Accept answered the client
	}
	limit := h.opts.MaxBodyBytes
	if limit <= 0 {
		limit = 1 << 20
	}
	conn.SetReadLimit(limit)
	ws := &wsSession{h: h, conn: conn, requestID: requestID(w), threadID: threadID, subs: map[string]context.CancelFunc{}, sent: newSentSet(wsSentMemory)}
	ctx, cancel := context.WithCancel(r.Context())
	defer func() {
		cancel()
		ws.wg.Wait()
		conn.CloseNow()
	}()
	for {
		typ, b, err := conn.Read(ctx)
		if err != nil {
			return nil
		}
		if typ != websocket.MessageText {
			ws.write(ctx, commandReply{Type: "error", Error: graphserver.CodeInvalidArgument, Message: "Commands are JSON text frames."})
			continue
		}
		var cmd graphserver.ThreadCommand
		if err := json.Unmarshal(b, &cmd); err != nil || cmd.ID == nil || cmd.Method == "" {
			ws.write(ctx, commandReply{Type: "error", ID: cmd.ID, Error: graphserver.CodeInvalidArgument, Message: "A command is a JSON object {id, method, params}."})
			continue
		}
		ws.write(ctx, ws.command(ctx, cmd))
	}
}

// wsSession is one protocol-v2 WebSocket.
type wsSession struct {
	h         *handler
	conn      *websocket.Conn
	requestID string // of the upgraded request, for the log
	threadID  string
	wg        sync.WaitGroup

	mu   sync.Mutex
	subs map[string]context.CancelFunc // subscription id -> stop
	sent *sentSet
	wmu  sync.Mutex // one frame at a time, so an event and its check-and-send are atomic
}

// command executes one command frame.
func (ws *wsSession) command(ctx context.Context, cmd graphserver.ThreadCommand) commandReply {
	switch cmd.Method {
	case graphserver.CommandSubscriptionSubscribe:
		var req graphserver.ThreadEventsRequest
		if err := json.Unmarshal(orEmptyObject(cmd.Params), &req); err != nil {
			return commandReply{Type: "error", ID: cmd.ID, Error: graphserver.CodeInvalidArgument, Message: "Invalid subscription: params must be {channels, namespaces?, depth?}."}
		}
		ws.mu.Lock()
		full := len(ws.subs) >= maxWSSubscriptions
		ws.mu.Unlock()
		if full {
			return commandReply{Type: "error", ID: cmd.ID, Error: graphserver.CodeInvalidArgument, Message: "At most " + strconv.Itoa(maxWSSubscriptions) + " subscriptions per socket."}
		}
		id := subscriptionID(req)
		if err := ws.start(ctx, id, req); err != nil {
			return commandReply{Type: "error", ID: cmd.ID, Error: graphserver.CommandErrorCode(err), Message: graphserver.ErrorMessage(err)}
		}
		if !strings.Contains(id, ".") {
			ws.h.wsSubs.remember(id, ws.threadID, req)
		}
		return commandReply{Type: "success", ID: cmd.ID, Result: map[string]any{"subscription_id": id}, Meta: ws.meta(ctx)}
	case graphserver.CommandSubscriptionUnsub:
		var p struct {
			SubscriptionID string `json:"subscription_id"`
		}
		_ = json.Unmarshal(orEmptyObject(cmd.Params), &p)
		ws.mu.Lock()
		stop, ok := ws.subs[p.SubscriptionID]
		delete(ws.subs, p.SubscriptionID)
		ws.mu.Unlock()
		if !ok {
			return commandReply{Type: "error", ID: cmd.ID, Error: graphserver.CodeNoSuchSubscription, Message: "No subscription " + strconv.Quote(p.SubscriptionID) + " on this socket."}
		}
		stop()
		return commandReply{Type: "success", ID: cmd.ID, Result: map[string]any{}}
	case graphserver.CommandSubscriptionReconnect:
		return ws.reconnect(ctx, cmd)
	}
	return ws.h.runCommand(ctx, ws.requestID, ws.threadID, cmd)
}

// start subscribes the socket to the thread's events matching req under
// the subscription id id.
func (ws *wsSession) start(ctx context.Context, id string, req graphserver.ThreadEventsRequest) error {
	st, err := ws.h.srv.SubscribeThreadEvents(ctx, ws.threadID, req)
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	ws.mu.Lock()
	ws.subs[id] = stop
	ws.mu.Unlock()
	ws.wg.Go(func() { ws.pump(sctx, ctx, st) })
	return nil
}

// reconnect serves subscription.reconnect {run_id, last_event_id?,
// subscriptions?}: a client whose socket broke opens a new one and asks
// for the subscriptions it had (by id) with the events it missed. Each
// subscription whose filter its id carries (subscriptionID), or that this
// process remembers for the thread, is restored under its id, replaying
// the events after last_event_id (without it, the latest run's from its
// start), then live: on any process when the storage keeps the thread
// logs (the postgres driver), whose seqs are the same on every process.
// The result says whether every subscription asked for was restored;
// those that were not (unknown, or with a filter too large for its id
// made on another process or forgotten) the client subscribes again.
// run_id must name a run of the thread.
func (ws *wsSession) reconnect(ctx context.Context, cmd graphserver.ThreadCommand) commandReply {
	fail := func(code, msg string) commandReply {
		return commandReply{Type: "error", ID: cmd.ID, Error: code, Message: msg}
	}
	var p struct {
		RunID         string   `json:"run_id"`
		LastEventID   string   `json:"last_event_id"`
		Subscriptions []string `json:"subscriptions"`
	}
	if err := json.Unmarshal(orEmptyObject(cmd.Params), &p); err != nil {
		return fail(graphserver.CodeInvalidArgument, "Invalid params: subscription.reconnect takes {run_id, last_event_id?, subscriptions?}.")
	}
	if p.RunID == "" || len(p.RunID) > maxRunIDBytes || len(p.LastEventID) > maxRunIDBytes {
		return fail(graphserver.CodeInvalidArgument, "subscription.reconnect needs params.run_id.")
	}
	if len(p.Subscriptions) > maxWSSubscriptions {
		return fail(graphserver.CodeInvalidArgument, "subscriptions lists at most "+strconv.Itoa(maxWSSubscriptions)+" subscription ids.")
	}
	var since *int64
	if p.LastEventID != "" {
		// Event ids are their seq (see graphserver.ThreadEvent).
		n, err := strconv.ParseInt(p.LastEventID, 10, 64)
		if err != nil || n < 0 {
			return fail(graphserver.CodeInvalidArgument, "last_event_id must be the event_id of an event of this thread.")
		}
		since = &n
	}
	if _, err := ws.h.srv.GetRun(ctx, ws.threadID, p.RunID); err != nil {
		return fail(graphserver.CommandErrorCode(err), graphserver.ErrorMessage(err))
	}
	restored := []string{}
	for _, id := range p.Subscriptions {
		ws.mu.Lock()
		_, open := ws.subs[id]
		full := len(ws.subs) >= maxWSSubscriptions
		ws.mu.Unlock()
		if open {
			restored = append(restored, id)
			continue
		}
		req, ok := subscriptionFilter(id)
		if !ok {
			req, ok = ws.h.wsSubs.lookup(id, ws.threadID)
		}
		if !ok || full {
			continue
		}
		req.Since = since
		if err := ws.start(ctx, id, req); err != nil {
			return fail(graphserver.CommandErrorCode(err), graphserver.ErrorMessage(err))
		}
		restored = append(restored, id)
	}
	return commandReply{Type: "success", ID: cmd.ID, Result: map[string]any{
		"restored":      len(p.Subscriptions) > 0 && len(restored) == len(p.Subscriptions),
		"subscriptions": restored,
	}, Meta: ws.meta(ctx)}
}

// maxFilterInID bounds the encoded filter a subscription id carries.
const maxFilterInID = 2048

// subscriptionID makes the id of a new subscription with filter req:
// "sub-<random>.<filter>", the filter (without since) as base64url JSON,
// so that subscription.reconnect restores it on any process, from the id
// alone, with no state kept (a client that makes one up gets what it
// could subscribe to). A filter over maxFilterInID bytes encoded makes
// "sub-<random>", which only this process's wsSubRegistry knows.
func subscriptionID(req graphserver.ThreadEventsRequest) string {
	id := "sub-" + rand.Text()
	req.Since = nil
	b, err := json.Marshal(req)
	if err != nil || base64.RawURLEncoding.EncodedLen(len(b)) > maxFilterInID {
		return id
	}
	return id + "." + base64.RawURLEncoding.EncodeToString(b)
}

// subscriptionFilter returns the filter a subscription id carries
// (subscriptionID), if it carries a valid one.
func subscriptionFilter(id string) (graphserver.ThreadEventsRequest, bool) {
	var req graphserver.ThreadEventsRequest
	_, enc, ok := strings.Cut(id, ".")
	if !ok || !strings.HasPrefix(id, "sub-") || len(enc) > maxFilterInID {
		return req, false
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || json.Unmarshal(b, &req) != nil {
		return req, false
	}
	req.Since = nil
	return req, true
}

// wsSubRegistry remembers the filters of this process's recent WebSocket
// subscriptions whose ids do not carry them (subscriptionID), by
// subscription id, so that subscription.reconnect on a new socket can
// restore them. The oldest are forgotten once the filters take more than
// wsSubsMemory bytes. The zero value is ready to use.
type wsSubRegistry struct {
	mu    sync.Mutex
	m     map[string]wsSubRecord
	order []string // ids, oldest first
	bytes int
}

type wsSubRecord struct {
	threadID string
	req      graphserver.ThreadEventsRequest
	size     int
}

// remember records subscription id's filter.
func (r *wsSubRegistry) remember(id, threadID string, req graphserver.ThreadEventsRequest) {
	req.Since = nil
	b, _ := json.Marshal(req)
	size := len(b) + len(id) + len(threadID)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]wsSubRecord{}
	}
	r.m[id] = wsSubRecord{threadID: threadID, req: req, size: size}
	r.order = append(r.order, id)
	r.bytes += size
	for r.bytes > wsSubsMemory && len(r.order) > 0 {
		old := r.order[0]
		r.order = r.order[1:]
		r.bytes -= r.m[old].size
		delete(r.m, old)
	}
}

// lookup returns the filter of subscription id, if it was made on
// threadID and is remembered.
func (r *wsSubRegistry) lookup(id, threadID string) (graphserver.ThreadEventsRequest, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.m[id]
	if !ok || rec.threadID != threadID {
		return graphserver.ThreadEventsRequest{}, false
	}
	return rec.req, true
}

// pump sends a subscription's events until it is stopped (ctx) or the
// socket ends; an event already sent on the socket (for another
// subscription) is not sent again. Writes are bound by the socket's
// context (wctxBase), not the subscription's: unsubscribing while a frame
// is being written must not cut the frame, which would end the socket.
func (ws *wsSession) pump(ctx, wctxBase context.Context, st *graphserver.ThreadEventStream) {
	defer func() {
		if v := recover(); v != nil {
			ws.h.logger.Error("websocket subscription panicked", slog.Any("panic", v))
			ws.conn.CloseNow()
		}
	}()
	for ev, err := range st.Events(ctx) {
		if err != nil {
			if errors.Is(err, graphserver.ErrServerClosed) {
				ws.conn.Close(websocket.StatusGoingAway, "server closing")
			}
			return
		}
		b, err := json.Marshal(ev)
		if err != nil {
			continue
		}
		ws.wmu.Lock()
		fresh := ws.sent.add(ev.Seq)
		var werr error
		if fresh {
			wctx, cancel := context.WithTimeout(wctxBase, wsWriteTimeout)
			werr = ws.conn.Write(wctx, websocket.MessageText, b)
			cancel()
		}
		ws.wmu.Unlock()
		if werr != nil {
			ws.conn.CloseNow()
			return
		}
	}
}

// meta is the meta of a subscription command's reply: the thread's seq as
// of now (0 when it cannot be read: subscriptions cause no events).
func (ws *wsSession) meta(ctx context.Context) *commandMeta {
	seq, _ := ws.h.srv.ThreadEventsSeq(ctx, ws.threadID)
	return &commandMeta{AppliedThroughSeq: seq}
}

// write sends a command reply.
func (ws *wsSession) write(ctx context.Context, rep commandReply) {
	b, err := json.Marshal(rep)
	if err != nil {
		return
	}
	ws.wmu.Lock()
	defer ws.wmu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, wsWriteTimeout)
	defer cancel()
	if ws.conn.Write(wctx, websocket.MessageText, b) != nil {
		ws.conn.CloseNow()
	}
}

func orEmptyObject(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || string(b) == "null" {
		return json.RawMessage("{}")
	}
	return b
}

// sentSet remembers the last n event seqs sent on a socket.
type sentSet struct {
	m    map[int64]struct{}
	ring []int64
	next int
}

func newSentSet(n int) *sentSet {
	return &sentSet{m: make(map[int64]struct{}, n), ring: make([]int64, 0, n)}
}

// add records seq and reports whether it was new.
func (s *sentSet) add(seq int64) bool {
	if _, ok := s.m[seq]; ok {
		return false
	}
	if len(s.ring) < cap(s.ring) {
		s.ring = append(s.ring, seq)
	} else {
		delete(s.m, s.ring[s.next])
		s.ring[s.next] = seq
		s.next = (s.next + 1) % len(s.ring)
	}
	s.m[seq] = struct{}{}
	return true
}
