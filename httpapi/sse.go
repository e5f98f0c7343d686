package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/graphserver/graphserver"
)

// HeartbeatIntervalDefault is how often SSE streams send ": heartbeat" and
// /wait and /join responses send a keep-alive newline.
const HeartbeatIntervalDefault = 5 * time.Second

// heartbeat returns the keep-alive interval.
func (h *handler) heartbeat() time.Duration {
	if h.opts.HeartbeatInterval > 0 {
		return h.opts.HeartbeatInterval
	}
	return HeartbeatIntervalDefault
}

// sseBatch is the most events an SSE stream writes between two flushes.
const sseBatch = 32

// sseFrame renders one event: event, data and id lines. Data is one line
// of JSON (JSON spread over lines is compacted); data that is not JSON and
// spans lines goes out as one data line per line, which SSE readers join
// back with "\n". Line breaks in the event name and id (a node or namespace
// named so) become spaces, and NULs in the id are dropped, so that no value
// can end the frame early or forge a field. Events synthesized from
// storage have no id.
func sseFrame(buf *bytes.Buffer, ev graphserver.StreamEvent) {
	buf.WriteString("event: ")
	buf.WriteString(sseField(ev.Event))
	data := ev.Data
	if len(data) == 0 {
		data = json.RawMessage("null")
	} else if bytes.ContainsAny(data, "\r\n") {
		var c bytes.Buffer
		if json.Compact(&c, data) == nil {
			data = c.Bytes()
		}
	}
	for {
		line, rest, more := cutLine(data)
		buf.WriteString("\ndata: ")
		buf.Write(line)
		if !more {
			break
		}
		data = rest
	}
	if id := strings.ReplaceAll(sseField(ev.ID), "\x00", ""); id != "" {
		buf.WriteString("\nid: ")
		buf.WriteString(id)
	}
	buf.WriteString("\n\n")
}

// sseField returns s with CR and LF replaced by spaces.
func sseField(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ").Replace(s)
}

// cutLine cuts b at its first line break (CRLF, CR or LF).
func cutLine(b []byte) (line, rest []byte, found bool) {
	i := bytes.IndexAny(b, "\r\n")
	if i < 0 {
		return b, nil, false
	}
	if b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
		return b[:i], b[i+2:], true
	}
	return b[:i], b[i+1:], true
}

// writeSSE streams events as Server-Sent Events: headers first
// (with Content-Location, when not empty, and Location), then one
// frame per event with its id, a ": heartbeat" comment every heartbeat
// interval, and an error frame if following the stream fails. It returns
// when the events end, the client goes away or the server closes.
// firstReady says the first event is there already (a new run's metadata
// event): the headers then go out with it, in one write, rather than
// alone before it.
func (h *handler) writeSSE(w http.ResponseWriter, r *http.Request, events func(context.Context) iter.Seq2[graphserver.StreamEvent, error], contentLocation, location string, firstReady bool) {
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream; charset=utf-8")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Accel-Buffering", "no")
	if contentLocation != "" {
		hdr.Set("Content-Location", contentLocation)
	}
	hdr.Set("Location", location)
	defer h.metrics.streamOpened()()
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if !firstReady {
		_ = rc.Flush()
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	type item struct {
		ev  graphserver.StreamEvent
		err error
	}
	// Buffered, so that a burst of events (a chat reply streamed token by
	// token) is written with one flush per sseBatch events rather than one
	// per event. Small: an idle stream holds it (72 bytes an item).
	items := make(chan item, sseBatch)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		defer close(items)
		// The recover middleware does not reach this goroutine: a panic
		// following the run ends the stream with an error event instead
		// of taking the process down.
		defer func() {
			if v := recover(); v != nil {
				h.logPanic(w, r, v)
				select {
				case items <- item{err: graphserver.Errorf(graphserver.EINTERNAL, "Internal error.")}:
				case <-ctx.Done():
				}
			}
		}()
		for ev, err := range events(ctx) {
			select {
			case items <- item{ev, err}:
			case <-ctx.Done():
				return
			}
		}
	})

	tick := time.NewTicker(h.heartbeat())
	defer tick.Stop()
	var buf bytes.Buffer
	for {
		select {
		case it, ok := <-items:
			if !ok {
				return
			}
			buf.Reset()
			if it.err != nil {
				if r.Context().Err() != nil {
					return // the client went away
				}
				if errors.Is(it.err, graphserver.ErrRunReleased) || errors.Is(it.err, graphserver.ErrServerClosed) {
					// The run goes on elsewhere or later: break the connection
					// rather than end it, so that SDKs reconnect (Location,
					// Last-Event-ID) instead of taking the stream as complete.
					panic(http.ErrAbortHandler)
				}
				sseFrame(&buf, graphserver.StreamEvent{Event: "error", Data: errorJSON(it.err)})
			} else {
				sseFrame(&buf, it.ev)
			}
			if _, err := w.Write(buf.Bytes()); err != nil {
				return
			}
			if len(items) > 0 && it.err == nil {
				continue // more to write: flush once after them
			}
			if err := rc.Flush(); err != nil {
				return
			}
			if it.err != nil {
				return
			}
		case <-tick.C:
			if _, err := w.Write([]byte(": heartbeat\n\n")); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
	}
}

// errorJSON is the data of an error event.
func errorJSON(err error) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"error": graphserver.ErrorName(err), "message": graphserver.ErrorMessage(err)})
	return b
}

// writeWait answers a /wait, /join or cancel?wait=1 request: 200 JSON
// headers at once, a "\n" keep-alive every heartbeat interval while wait
// blocks, then the final output.
func (h *handler) writeWait(w http.ResponseWriter, r *http.Request, wait func(context.Context) (json.RawMessage, error), contentLocation, location string) {
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Location", contentLocation)
	hdr.Set("Location", location)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)

	type result struct {
		out json.RawMessage
		err error
	}
	done := make(chan result, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		defer func() {
			if v := recover(); v != nil {
				h.logPanic(w, r, v)
				done <- result{err: graphserver.Errorf(graphserver.EINTERNAL, "Internal error.")}
			}
		}()
		out, err := wait(r.Context())
		done <- result{out, err}
	})
	tick := time.NewTicker(h.heartbeat())
	defer tick.Stop()
	for {
		select {
		case res := <-done:
			out := res.out
			if res.err != nil {
				if r.Context().Err() != nil {
					return
				}
				h.logger.WarnContext(r.Context(), "wait for run", slog.String("request_id", requestID(w)), slog.Any("err", res.err))
				out = errorOutput(res.err)
			}
			if len(out) == 0 {
				out = json.RawMessage("{}")
			}
			if _, err := w.Write(out); err == nil {
				_, _ = w.Write([]byte("\n"))
			}
			return
		case <-tick.C:
			if _, err := w.Write([]byte("\n")); err == nil {
				_ = rc.Flush()
			}
		}
	}
}
