package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/graphserver/graphserver"
)

// CachePolicy caches a node's writes by its input (LangGraph's
// CachePolicy): a task whose key was seen is not run, the writes saved for
// the key are applied in its place, in this run or a later one, until the
// TTL expires. The cache lives in the run's store (graphserver.GraphRun
// Store, which the server sets to its own store), so it is shared by the
// threads and processes that share the store; a run without a store runs
// every node (as LangGraph without a cache).
type CachePolicy struct {
	// Key computes the cache key from the node's input: the State it reads,
	// or the argument of the Send that started it. nil uses the input's
	// JSON encoding (LangGraph hashes the pickled input).
	Key func(input any) string
	// TTL is how long cached writes are reused; 0 keeps them forever.
	TTL time.Duration
}

// WithCache caches the node's writes under policy (LangGraph's
// add_node(cache_policy=...)). A cache hit streams the node's update with
// "__metadata__": {"cached": true}, as LangGraph's updates stream does,
// and no tasks events.
func WithCache(policy CachePolicy) NodeOption {
	return func(n *node) { n.cache = &policy }
}

// cacheNS is the store namespace of cached writes (LangGraph's
// CACHE_NS_WRITES), under which each node has its own.
const cacheNS = "__pregel_ns_writes"

// cacheKey returns the namespace and key of a task's cached writes; ok is
// false when the task's node has no cache policy or the run no store.
func (r *runner) cacheKey(t *task, state State) (ns []string, key string, ok bool) {
	policy := r.cachePolicy(t)
	if policy == nil || r.rc.req.Store == nil {
		return nil, "", false
	}
	var in any
	switch {
	case t.call != nil:
		in = t.call.arg // a task call's argument (LangGraph keys a call by its args)
	case t.push:
		in = t.arg
	default:
		in = r.g.nodeInput(t.name, state)
	}
	var k string
	if policy.Key != nil {
		k = policy.Key(in)
	} else {
		k = string(mustJSON(in))
	}
	sum := sha256.Sum256([]byte(r.g.name + "\x00" + t.name + "\x00" + k))
	// store namespace labels may not hold '.'
	return []string{cacheNS, strings.ReplaceAll(r.g.name, ".", "_"), strings.ReplaceAll(t.name, ".", "_")}, hex.EncodeToString(sum[:]), true
}

// cachePolicy returns the cache policy of a task's node or task function,
// nil if none.
func (r *runner) cachePolicy(t *task) *CachePolicy {
	if t.call != nil {
		return t.call.opts.cache
	}
	if n := r.g.nodes[t.name]; n != nil {
		return n.cache
	}
	return nil
}

// cachedEntry is the store item of a task's cached writes.
type cachedEntry struct {
	Writes    [][2]any `json:"writes"`
	ExpiresAt int64    `json:"expires_at,omitempty"` // unix ms; 0: never
}

// fromCache fills t with the writes cached for its input, if any (LangGraph's
// match_cached_writes), and reports whether it did. A failing store lookup
// is a miss: the node runs.
func (r *runner) fromCache(ctx context.Context, t *task, state State) bool {
	ns, key, ok := r.cacheKey(t, state)
	if !ok {
		return false
	}
	it, err := r.rc.req.Store.GetItem(ctx, ns, key)
	if err != nil || it == nil {
		return false
	}
	var e cachedEntry
	b, err := json.Marshal(it.Value)
	if err != nil || json.Unmarshal(b, &e) != nil || e.Writes == nil {
		return false
	}
	if e.ExpiresAt != 0 && time.Now().UnixMilli() >= e.ExpiresAt {
		_ = r.rc.req.Store.DeleteItem(ctx, ns, key)
		return false
	}
	t.writes = t.writes[:0]
	for _, w := range e.Writes {
		ch, _ := w[0].(string)
		t.writes = append(t.writes, write{ch, w[1]})
	}
	t.cached, t.ran = true, true
	if r.rc.modes["updates"] && !t.hidden() {
		r.emit("updates", map[string]any{t.name: r.g.outputUpdates(t.writes), "__metadata__": map[string]any{"cached": true}})
	}
	return true
}

// toCache saves the writes of a task that finished (LangGraph's put_writes
// caching a task's writes under its cache key). A failing store write only
// costs a later run the node's work again.
func (r *runner) toCache(ctx context.Context, t *task, state State) {
	if t.cached || t.errRec != nil || t.interrupts != nil || t.runErr != nil || t.bubble {
		return
	}
	ns, key, ok := r.cacheKey(t, state)
	if !ok {
		return
	}
	e := cachedEntry{Writes: make([][2]any, len(t.writes))}
	for i, w := range t.writes {
		e.Writes[i] = [2]any{w.ch, w.v}
	}
	if ttl := r.cachePolicy(t).TTL; ttl > 0 {
		e.ExpiresAt = time.Now().Add(ttl).UnixMilli()
	}
	var v graphserver.Object
	if b, err := json.Marshal(e); err != nil || json.Unmarshal(b, &v) != nil {
		return
	}
	_ = r.rc.req.Store.PutItem(context.WithoutCancel(ctx), ns, key, v)
}
