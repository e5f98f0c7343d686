package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/graphtest"
	"github.com/graphserver/graphserver/internal/sse"
	"github.com/graphserver/graphserver/sqlite"
)

// FuzzSSEFrame: whatever a graph names its events and puts in their data,
// a frame decodes (with the SDK-faithful decoder of internal/sse) as
// exactly one event with the same name (line breaks made spaces), the same
// id, and the same data: compacted when it is JSON, its lines joined with
// "\n" when it is not. No value can end a frame early or forge a field.
func FuzzSSEFrame(f *testing.F) {
	f.Add("values", []byte(`{"a":1}`), "0")
	f.Add("messages|agent:1", []byte("{\n  \"a\": [1,\n 2]\n}"), "12")
	f.Add("evil\nid: 99\n\nevent: forged", []byte("not json\r\ndata: x\rz"), "1\n2")
	f.Add("", []byte{}, "")
	f.Add("e", []byte("\x00\n\n"), "\x00")
	f.Fuzz(func(t *testing.T, event string, data []byte, id string) {
		var buf bytes.Buffer
		sseFrame(&buf, graphserver.StreamEvent{ID: id, Event: event, Data: data})
		d := sse.NewDecoder(&buf, 0)
		ev, err := d.Next()
		if err != nil {
			t.Fatalf("frame %q does not decode: %v", buf.String(), err)
		}
		if _, err := d.Next(); !errors.Is(err, io.EOF) {
			t.Fatalf("frame %q decodes as more than one event (%v)", buf.String(), err)
		}
		if want := sseField(event); ev.Event != want {
			t.Fatalf("event %q decoded as %q", want, ev.Event)
		}
		if want := strings.ReplaceAll(sseField(id), "\x00", ""); ev.ID != want {
			t.Fatalf("id %q decoded as %q", want, ev.ID)
		}
		want := data
		switch {
		case len(data) == 0:
			want = []byte("null")
		case json.Valid(data):
			var c bytes.Buffer
			if bytes.ContainsAny(data, "\r\n") && json.Compact(&c, data) == nil {
				want = c.Bytes()
			}
		default:
			want = bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
		}
		if !bytes.Equal(ev.Data, want) {
			t.Fatalf("data %q decoded as %q", want, ev.Data)
		}
	})
}

// fuzzRoutes are the routes FuzzRequestBody sends bodies to: the request
// decoders of every kind of body, and the searches that compile filters.
var fuzzRoutes = []string{
	"POST /threads", "POST /threads/search", "POST /threads/count", "POST /assistants", "POST /assistants/search",
	"PUT /store/items", "POST /store/items/search", "POST /store/namespaces", "POST /runs", "POST /runs/batch",
	"POST /runs/cancel",
}

// FuzzRequestBody sends arbitrary bodies to the routes of fuzzRoutes: the
// answer is never a 5xx, and an error always has a {"detail"} body.
func FuzzRequestBody(f *testing.F) {
	for i := range fuzzRoutes {
		f.Add(uint8(i), []byte(`{}`))
		f.Add(uint8(i), []byte(`{"metadata":{"a\\b":1},"filter":{"x":[[[[[[[[[[1]]]]]]]]]]},"values":{"a":{"$contains":1}}}`))
	}
	f.Add(uint8(0), []byte(`{"ttl":1e300,"metadata":{"k":[1,{"a":null}]}}`))
	f.Add(uint8(1), []byte(`{"metadata":{"\u0000":1},"limit":1000,"sort_by":"thread_id"}`))
	f.Add(uint8(5), []byte(`{"namespace":["a"],"key":"k","value":{"v":1},"ttl":5,"index":["$.v"]}`))
	f.Add(uint8(6), []byte(`{"filter":{"v":{"$gt":1,"$lt":"x"}},"query":"hello","limit":5}`))
	f.Add(uint8(8), []byte(`{"assistant_id":"echo","input":{"a":1},"stream_mode":["values","updates"]}`))
	f.Add(uint8(9), []byte(`[{"assistant_id":"echo","after_seconds":1}]`))
	// One server for all the inputs of this fuzz process.
	db, err := sqlite.Open(filepath.Join(f.TempDir(), "gs.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	srv, err := graphserver.New(graphserver.Options{Storage: db, Graphs: map[string]graphserver.Graph{"echo": graphtest.Echo{}}})
	if err != nil {
		f.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { srv.Close(context.Background()) })
	h := New(srv, Options{MaxBodyBytes: 1 << 20})
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		method, path, _ := strings.Cut(fuzzRoutes[int(route)%len(fuzzRoutes)], " ")
		req := httptest.NewRequest(method, path, bytes.NewReader(body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", method, path, body, w.Code, w.Body)
		}
		if w.Code >= 400 {
			var e struct {
				Detail string `json:"detail"`
			}
			if json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Detail == "" {
				t.Fatalf("%s %s %q: %d without detail: %s", method, path, body, w.Code, w.Body)
			}
		}
	})
}
