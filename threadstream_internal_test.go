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
