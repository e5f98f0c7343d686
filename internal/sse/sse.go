// Package sse decodes Server-Sent Events the way the LangGraph SDKs do, for
// the client package.
//
// It follows the WHATWG event-stream interpretation with the SDKs'
// deviations: lines end in CR, LF or CRLF; a line starting with ":" is a
// comment (the server's ": heartbeat") and is skipped; "field: value" loses
// one space after the colon; a line without a colon is a field with an empty
// value; several data lines are joined with "\n"; an id containing NUL is
// ignored; unknown fields (retry included) are ignored. A blank line
// dispatches the frame if it carried an event, data or id field — unlike a
// browser, a frame without data is dispatched, with data null, as both SDKs
// do. The last event id persists across frames, as in the spec, so an event
// without an id line reports the id of the one before it.
//
// A final frame not closed by a blank line when the stream ends is not
// dispatched: it may be cut short, and a reconnecting client asks for it
// again with Last-Event-ID.
//
// No maintained Go SSE parser fits: the spec-compliant ones drop frames
// without data and keep no per-frame id state the client can resume from,
// so this decoder is small and fuzzed (FuzzDecoder).
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// MaxFrameDefault bounds a frame (its lines together) when NewDecoder is
// given no limit: 64 MiB.
const MaxFrameDefault = 64 << 20

// ErrFrameTooLarge is returned when a frame exceeds the decoder's limit.
var ErrFrameTooLarge = errors.New("sse: event frame exceeds the size limit")

// Event is one dispatched frame.
type Event struct {
	// ID is the last event id seen on the stream when the frame was
	// dispatched ("" if none yet).
	ID string
	// Event is the event name ("" when the frame had no event line).
	Event string
	// Data is the frame's data lines joined with "\n", or "null" when the
	// frame had none.
	Data []byte
}

// Decoder reads Events from a stream. It is not safe for concurrent use.
type Decoder struct {
	r      *bufio.Reader
	max    int
	skipLF bool // the previous line ended in CR: a following LF belongs to it
	line   []byte
	size   int // bytes of the frame being read

	lastID  string
	event   string
	data    []byte
	hasData bool
	hasAny  bool
}

// NewDecoder returns a Decoder reading r; maxFrame bounds one frame in bytes
// (0 means MaxFrameDefault).
func NewDecoder(r io.Reader, maxFrame int) *Decoder {
	if maxFrame <= 0 {
		maxFrame = MaxFrameDefault
	}
	return &Decoder{r: bufio.NewReaderSize(r, 32<<10), max: maxFrame}
}

// LastEventID returns the last event id seen, including one read with a
// frame not yet dispatched.
func (d *Decoder) LastEventID() string { return d.lastID }

// Next returns the next frame. At the end of the stream it returns io.EOF
// (a frame left open is dropped); a read error is returned as is, and
// ErrFrameTooLarge when a frame exceeds the limit.
func (d *Decoder) Next() (Event, error) {
	for {
		line, err := d.readLine()
		if err != nil {
			return Event{}, err
		}
		if len(line) == 0 {
			d.size = 0
			if !d.hasAny {
				continue
			}
			ev := Event{ID: d.lastID, Event: d.event, Data: d.data}
			if !d.hasData {
				ev.Data = []byte("null")
			} else if ev.Data == nil {
				ev.Data = []byte{}
			}
			d.event, d.data, d.hasData, d.hasAny = "", nil, false, false
			return ev, nil
		}
		if line[0] == ':' {
			d.size -= len(line) // a comment is no part of the frame
			continue
		}
		field, value, found := bytes.Cut(line, []byte{':'})
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "event":
			d.event = string(value)
			d.hasAny = true
		case "data":
			if d.hasData {
				d.data = append(d.data, '\n')
			}
			d.data = append(d.data, value...)
			d.hasData, d.hasAny = true, true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				d.lastID = string(value)
				d.hasAny = true
			}
		}
	}
}

// readLine returns the next line without its terminator. The returned slice
// is valid until the next call.
func (d *Decoder) readLine() ([]byte, error) {
	d.line = d.line[:0]
	for {
		if d.r.Buffered() == 0 {
			if _, err := d.r.Peek(1); err != nil {
				if err == io.EOF && len(d.line) > 0 {
					// an unterminated last line: the frame it belongs to can
					// never be dispatched
					return nil, io.EOF
				}
				return nil, err
			}
		}
		buf, _ := d.r.Peek(d.r.Buffered())
		if d.skipLF {
			d.skipLF = false
			if buf[0] == '\n' {
				_, _ = d.r.Discard(1)
				continue
			}
		}
		i := bytes.IndexAny(buf, "\r\n")
		n := i
		if i < 0 {
			n = len(buf)
		}
		d.size += n
		if d.size > d.max {
			return nil, ErrFrameTooLarge
		}
		d.line = append(d.line, buf[:n]...)
		if i < 0 {
			_, _ = d.r.Discard(n)
			continue
		}
		d.skipLF = buf[i] == '\r'
		_, _ = d.r.Discard(i + 1)
		return d.line, nil
	}
}
