package main

import (
	"context"
	"sync"
	"time"

	"github.com/graphserver/graphserver/graph"
)

// fakeModels hands out one fake chat model per thread, kept in process memory
// across runs (as the reference graphs' FakeListChatModel cache does).
type fakeModels struct {
	replies []string

	mu     sync.Mutex
	models map[string]*fakeModel
}

func newFakeModels(replies ...string) *fakeModels {
	return &fakeModels{replies: replies, models: map[string]*fakeModel{}}
}

// forThread returns the model of the run's thread ("$" when it has none).
func (f *fakeModels) forThread(ctx context.Context) *fakeModel {
	id, _ := graph.Configurable(ctx)["thread_id"].(string)
	if id == "" {
		id = "$"
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.models[id]
	if m == nil {
		m = &fakeModel{replies: f.replies}
		f.models[id] = m
	}
	return m
}

// fakeModel cycles through its replies, wrapping around.
type fakeModel struct {
	replies []string

	mu sync.Mutex
	n  int
}

// invoke streams the next reply one character per chunk, all chunks sharing
// one fresh message id, and returns the assembled AI message.
func (m *fakeModel) invoke(ctx context.Context) graph.Message {
	m.mu.Lock()
	text := m.replies[m.n%len(m.replies)]
	m.n++
	m.mu.Unlock()
	s := graph.StreamMessage(ctx, "")
	for _, r := range text {
		s.Chunk(string(r))
	}
	return s.End()
}

// sleep waits d or until ctx ends, returning context.Cause(ctx) then.
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

// lastMessage returns the last message held in key, and whether there is one.
func lastMessage(s graph.State, key string) (graph.Message, bool) {
	msgs := s.Messages(key)
	if len(msgs) == 0 {
		return graph.Message{}, false
	}
	return msgs[len(msgs)-1], true
}
