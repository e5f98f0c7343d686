package sse_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver/internal/sse"
)

// decodeAll returns every frame of s, and the error that ended the stream.
func decodeAll(t testing.TB, r io.Reader, max int) ([]sse.Event, error) {
	t.Helper()
	d := sse.NewDecoder(r, max)
	var out []sse.Event
	for {
		ev, err := d.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func ev(id, event, data string) sse.Event {
	return sse.Event{ID: id, Event: event, Data: []byte(data)}
}

func TestDecoder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		want []sse.Event
	}{
		{"LF", "event: metadata\ndata: {\"run_id\":\"r\"}\nid: 0\n\n", []sse.Event{ev("0", "metadata", `{"run_id":"r"}`)}},
		// the Python Platform writes CRLF
		{"CRLF", "event: values\r\ndata: {}\r\nid: 1-0\r\n\r\n", []sse.Event{ev("1-0", "values", `{}`)}},
		{"CR", "event: values\rdata: 1\r\r", []sse.Event{ev("", "values", `1`)}},
		{"heartbeat comments skipped", ": heartbeat\n\nevent: a\ndata: 1\n\n: heartbeat\n\n", []sse.Event{ev("", "a", `1`)}},
		{"id persists to the next frame", "event: a\ndata: 1\nid: 7\n\nevent: b\ndata: 2\n\n", []sse.Event{ev("7", "a", "1"), ev("7", "b", "2")}},
		{"frame without data is null", "event: end\n\n", []sse.Event{ev("", "end", "null")}},
		{"data lines joined", "data: [1,\ndata: 2]\n\n", []sse.Event{ev("", "", "[1,\n2]")}},
		{"one space stripped", "event:a\ndata:  x\n\n", []sse.Event{ev("", "a", " x")}},
		{"no colon is an empty field", "event\ndata\n\n", []sse.Event{ev("", "", "")}},
		{"NUL id ignored", "id: a\x00b\ndata: 1\n\n", []sse.Event{ev("", "", "1")}},
		{"unknown fields and retry ignored", "retry: 10\nfoo: bar\n\nevent: a\ndata: 1\n\n", []sse.Event{ev("", "a", "1")}},
		{"blank lines alone dispatch nothing", "\n\n\r\n\n", nil},
		{"unterminated frame dropped", "event: a\ndata: 1\n\nevent: b\ndata: 2\n", []sse.Event{ev("", "a", "1")}},
		{"unterminated line dropped", "event: a\ndata: 1\n\nevent: b", []sse.Event{ev("", "a", "1")}},
		{"pipe in event name kept", "event: updates|child:1\ndata: {}\n\n", []sse.Event{ev("", "updates|child:1", "{}")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := decodeAll(t, strings.NewReader(tc.in), 0)
			require.ErrorIs(t, err, io.EOF)
			require.Equal(t, tc.want, got)
			// the same through a reader returning one byte at a time, so
			// CRLF split across reads is exercised
			got, err = decodeAll(t, iotest.OneByteReader(strings.NewReader(tc.in)), 0)
			require.ErrorIs(t, err, io.EOF)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestDecoderFrameLimit(t *testing.T) {
	t.Parallel()
	in := "event: a\ndata: " + strings.Repeat("x", 100) + "\n\n"
	_, err := decodeAll(t, strings.NewReader(in), 64)
	require.ErrorIs(t, err, sse.ErrFrameTooLarge)
	got, err := decodeAll(t, strings.NewReader(in+in), 200)
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, got, 2, "the limit is per frame, not per stream")
}

func TestDecoderReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("event: a\ndata: 1\nid: 3\n\nevent: b\nid: 4\n"), iotest.ErrReader(boom))
	d := sse.NewDecoder(r, 0)
	e, err := d.Next()
	require.NoError(t, err)
	require.Equal(t, ev("3", "a", "1"), e)
	_, err = d.Next()
	require.ErrorIs(t, err, boom)
	require.Equal(t, "4", d.LastEventID(), "an id read before the failure is known")
}

// FuzzDecoder checks the decoder against a line-based reference on any input:
// it never panics, splitting the input into reads changes nothing, and a
// stream re-encoded from the decoded frames decodes to the same frames.
func FuzzDecoder(f *testing.F) {
	for _, s := range []string{
		"event: metadata\ndata: {\"run_id\":\"r\"}\nid: 0\n\n",
		"event: values\r\ndata: {}\r\nid: 1-0\r\n\r\n: heartbeat\r\n\r\n",
		"data: a\rdata: b\r\r",
		"id: 1\n\nid\n\nevent\n\n:\n\n",
		"event: x\ndata: 1\n",
	} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		want, werr := decodeAll(t, bytes.NewReader(in), 1<<16)
		got, gerr := decodeAll(t, &chunkReader{b: in, n: int(chunk%7) + 1}, 1<<16)
		require.Equal(t, werr, gerr)
		require.Equal(t, want, got)
		if werr != io.EOF {
			return
		}
		// re-encode: every frame with its id line (ids persist, so repeating
		// one is harmless, and an empty one resets it), event and data lines
		var buf bytes.Buffer
		for _, e := range want {
			if strings.ContainsAny(e.ID, "\r\n") || strings.ContainsAny(e.Event, "\r\n") || bytes.ContainsAny(e.Data, "\r") {
				return // not representable on one line
			}
			buf.WriteString("id: " + e.ID + "\n")
			buf.WriteString("event: " + e.Event + "\n")
			for l := range bytes.SplitSeq(e.Data, []byte("\n")) {
				buf.WriteString("data: ")
				buf.Write(l)
				buf.WriteString("\n")
			}
			buf.WriteString("\n")
		}
		again, err := decodeAll(t, &buf, 1<<16)
		require.ErrorIs(t, err, io.EOF)
		require.Len(t, again, len(want))
		for i := range want {
			require.Equal(t, want[i].Event, again[i].Event)
			require.Equal(t, want[i].ID, again[i].ID)
			if string(want[i].Data) != "null" {
				require.Equal(t, want[i].Data, again[i].Data)
			}
		}
	})
}

// chunkReader returns at most n bytes per Read.
type chunkReader struct {
	b []byte
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), c.n, len(c.b))
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}
