package httpapi

import (
	"context"
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
)

// threadEventsSocket handles GET /threads/{thread_id}/stream/events
// upgraded to a WebSocket: the protocol-v2 transport of
// streamProtocol "v2-websocket". The client sends commands as text frames
// ({id, method, params}); subscription.subscribe {channels, namespaces?,
// depth?} answers {subscription_id} and sends the matching events (those
// of the latest run from its start, then live) as text frames,
// subscription.unsubscribe {subscription_id} stops them, and every other
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
	ws := &wsSession{h: h, conn: conn, threadID: threadID, subs: map[string]context.CancelFunc{}, sent: newSentSet(wsSentMemory)}
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
	h        *handler
	conn     *websocket.Conn
	threadID string
	wg       sync.WaitGroup

	mu     sync.Mutex
	subs   map[string]context.CancelFunc // subscription id -> stop
	nextID int
	sent   *sentSet
	wmu    sync.Mutex // one frame at a time, so an event and its check-and-send are atomic
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
		st, err := ws.h.srv.SubscribeThreadEvents(ctx, ws.threadID, req)
		if err != nil {
			return commandReply{Type: "error", ID: cmd.ID, Error: graphserver.CommandErrorCode(err), Message: graphserver.ErrorMessage(err)}
		}
		sctx, stop := context.WithCancel(ctx)
		ws.mu.Lock()
		ws.nextID++
		id := "sub-" + strconv.Itoa(ws.nextID)
		ws.subs[id] = stop
		ws.mu.Unlock()
		ws.wg.Go(func() { ws.pump(sctx, st) })
		return commandReply{Type: "success", ID: cmd.ID, Result: map[string]any{"subscription_id": id}, Meta: &commandMeta{AppliedThroughSeq: ws.h.srv.ThreadEventSeq()}}
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
		// Subscriptions live as long as the socket: a new socket
		// subscribes again and is replayed the latest run.
		return commandReply{Type: "success", ID: cmd.ID, Result: map[string]any{"restored": false}}
	}
	return ws.h.runCommand(ctx, ws.threadID, cmd)
}

// pump sends a subscription's events until it is stopped or the socket
// ends; an event already sent on the socket (for another subscription) is
// not sent again.
func (ws *wsSession) pump(ctx context.Context, st *graphserver.ThreadEventStream) {
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
			wctx, cancel := context.WithTimeout(ctx, wsWriteTimeout)
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
