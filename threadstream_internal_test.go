package graphserver

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestThreadHub(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_700_000_000_000)
	h := &threadHub{resumableTTL: time.Minute, now: func() time.Time { return now }}
	data := json.RawMessage(`{}`)

	// Ids within one millisecond grow by sequence, then follow the clock;
	// a clock going back does not make them go back.
	h.publish("t", "a", data, false)
	h.publish("t", "b", data, true)
	now = now.Add(time.Millisecond)
	h.publish("t", "c", data, false)
	now = now.Add(-time.Second)
	h.publish("t", "d", data, false)
	f := h.feeds["t"]
	evs, next, _ := f.read(0, feedID{ms: -1, seq: -1})
	require.Equal(t, 4, next)
	var ids []string
	for _, ev := range evs {
		ids = append(ids, ev.ID)
	}
	require.Equal(t, []string{"1700000000000-0", "1700000000000-1", "1700000000001-0", "1700000000001-1"}, ids)

	// start finds the first event strictly after an id, whether retained or not.
	require.Equal(t, 0, f.start(feedID{ms: -1, seq: -1}))
	require.Equal(t, 2, f.start(feedID{ms: 1_700_000_000_000, seq: 1}))
	require.Equal(t, 2, f.start(feedID{ms: 1_700_000_000_000, seq: 7}))
	require.Equal(t, 4, f.start(h.lastID("t")))
	require.Equal(t, feedID{ms: now.UnixMilli(), seq: -1}, h.lastID("other"))

	// Non-resumable events go after the grace; the resumable one stays
	// (and with it, the prefix after it) until its TTL.
	now = now.Add(time.Second + endedLogGrace)
	h.prune(now)
	evs, next, _ = f.read(0, feedID{ms: -1, seq: -1})
	require.Equal(t, 4, next)
	require.Len(t, evs, 3)
	require.Equal(t, "b", evs[0].Event)
	now = now.Add(time.Minute)
	h.prune(now)
	require.Nil(t, h.feeds["t"], "an empty feed without streams is dropped")

	// A followed feed stays while empty; a stream behind the dropped events
	// reads from the oldest retained one.
	sub := h.subscribe("u")
	for range threadFeedMax + 5 {
		h.publish("u", "e", data, true)
	}
	evs, next, _ = sub.read(0, feedID{ms: -1, seq: -1})
	require.Len(t, evs, threadFeedMax)
	require.Equal(t, threadFeedMax+5, next)
	now = now.Add(time.Hour)
	h.prune(now)
	require.Same(t, sub, h.feeds["u"])
	h.unsubscribe("u", sub)
	require.Nil(t, h.feeds["u"])
}

// TestThreadHubHeldExecutions: an execution that starts while another's
// end is not in yet has its events held until that end, then goes in
// whole, in order; held events that reach threadFeedMax stop the wait (an
// end that never comes holds nothing without bound).
func TestThreadHubHeldExecutions(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_700_000_000_000)
	h := &threadHub{resumableTTL: time.Minute, now: func() time.Time { return now }}
	data := json.RawMessage(`{}`)
	events := func(thread string) []string {
		f := h.lockedFeed(thread)
		f.mu.Unlock()
		evs, _, _ := f.read(0, feedID{ms: -1, seq: -1})
		var out []string
		for _, ev := range evs {
			out = append(out, ev.Event)
		}
		return out
	}

	h.startRun("t", "r1")
	h.publishRun("t", "r1", true, "a1", data, true)
	h.startRun("t", "r2")
	h.publishRun("t", "r2", true, "b1", data, true)
	h.publishDone("t", "r2", true, RunSuccess)
	h.publishRun("t", "r1", true, "a2", data, true)
	require.Equal(t, []string{"a1", "a2"}, events("t"), "r2 waits for r1's end")
	h.publishDone("t", "r1", true, RunSuccess)
	require.Equal(t, []string{"a1", "a2", "metadata", "b1", "metadata"}, events("t"))
	f := h.lockedFeed("t")
	require.Empty(t, f.live)
	require.Empty(t, f.held)
	require.Zero(t, f.heldN)
	f.mu.Unlock()

	// r3's end never comes: r4's events go in once they reach the bound.
	h.startRun("u", "r3")
	h.startRun("u", "r4")
	for range threadFeedMax - 1 {
		h.publishRun("u", "r4", true, "e", data, true)
	}
	require.Empty(t, events("u"))
	h.publishRun("u", "r4", true, "e", data, true)
	require.Len(t, events("u"), threadFeedMax)
	f = h.lockedFeed("u")
	require.Equal(t, "r4", f.live, "r4 goes on live")
	require.Zero(t, f.heldN)
	f.mu.Unlock()
}
