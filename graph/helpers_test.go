package graph_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/graph"
	"github.com/stretchr/testify/require"
)

type recorder struct {
	mu    sync.Mutex
	parts []graphserver.StreamPart
}

func (r *recorder) emit(p graphserver.StreamPart) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.parts = append(r.parts, p)
}

// events returns "event" or "event|ns" names with their decoded data.
func (r *recorder) of(event string) []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []any
	for _, p := range r.parts {
		name := p.Event
		for _, n := range p.Namespace {
			name += "|" + n
		}
		if name == event {
			var v any
			_ = json.Unmarshal(p.Data, &v)
			out = append(out, v)
		}
	}
	return out
}

type harness struct {
	t      *testing.T
	g      *graph.Compiled
	cp     driver.Checkpointer
	thread string
}

func newHarness(t *testing.T, g *graph.Compiled) *harness {
	t.Helper()
	return &harness{t: t, g: g, cp: graph.NewMemoryCheckpointer(), thread: "t1"}
}

func (h *harness) run(req graphserver.GraphRun) (*recorder, error) {
	h.t.Helper()
	rec := &recorder{}
	req.ThreadID = h.thread
	req.Checkpointer = h.cp
	if req.RunID == "" {
		req.RunID = uuid.NewString()
	}
	err := h.g.Run(context.Background(), &req, rec.emit)
	return rec, err
}

func (h *harness) input(v string, modes ...string) *recorder {
	h.t.Helper()
	rec, err := h.run(graphserver.GraphRun{Input: json.RawMessage(v), StreamModes: modes})
	require.NoError(h.t, err)
	return rec
}

func (h *harness) state() *graphserver.ThreadState {
	h.t.Helper()
	st, err := h.g.State(context.Background(), &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: h.thread}, Checkpointer: h.cp})
	require.NoError(h.t, err)
	return st
}

func (h *harness) history() []*graphserver.ThreadState {
	h.t.Helper()
	hs, err := h.g.History(context.Background(), &graphserver.HistoryRequest{Checkpoint: graphserver.Checkpoint{ThreadID: h.thread}, Checkpointer: h.cp})
	require.NoError(h.t, err)
	return hs
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func contents(st *graphserver.ThreadState, key string) []string {
	var out []string
	for _, m := range graph.Messages(st.Values.(map[string]any)[key]) {
		out = append(out, m.Text())
	}
	return out
}
