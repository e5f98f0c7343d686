package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// MemoryCheckpointer is an in-memory driver.Checkpointer. It stores
// blobs as given (delta blobs included) and rebuilds full values on read,
// as storage drivers do. It is safe for concurrent use; the zero value is
// not usable, call NewMemoryCheckpointer.
type MemoryCheckpointer struct {
	mu     sync.Mutex
	cps    map[string]*driver.CheckpointRecord // thread|ns|id
	order  map[string][]string                 // thread|ns -> ids, ascending
	blobs  map[string]driver.ChannelBlob       // thread|ns|channel|version
	writes map[string][]driver.PendingWrite    // thread|ns|id -> writes
}

var _ driver.Checkpointer = (*MemoryCheckpointer)(nil)

// NewMemoryCheckpointer returns an empty MemoryCheckpointer.
func NewMemoryCheckpointer() *MemoryCheckpointer {
	return &MemoryCheckpointer{cps: map[string]*driver.CheckpointRecord{}, order: map[string][]string{}, blobs: map[string]driver.ChannelBlob{}, writes: map[string][]driver.PendingWrite{}}
}

// key joins parts into a map key, each part prefixed with its length so
// that distinct lists give distinct keys whatever the parts hold (a JSON
// array would too, at the cost of an encoding per lookup).
func key(parts ...string) string {
	n := 0
	for _, p := range parts {
		n += len(p) + 4
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = strconv.AppendInt(b, int64(len(p)), 10)
		b = append(b, ':')
		b = append(b, p...)
	}
	return string(b)
}

// PutCheckpoint saves cp and its blobs.
func (m *MemoryCheckpointer) PutCheckpoint(ctx context.Context, cp *driver.CheckpointRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, b := range cp.NewBlobs {
		if b.Base != "" {
			if _, ok := m.blobs[key(cp.ThreadID, cp.NS, b.Channel, b.Base)]; !ok {
				return fmt.Errorf("put checkpoint %s: delta blob of %s based on unknown version %s", cp.CheckpointID, b.Channel, b.Base)
			}
		}
		m.blobs[key(cp.ThreadID, cp.NS, b.Channel, b.Version)] = driver.ChannelBlob{Channel: b.Channel, Version: b.Version, Base: b.Base, Data: slices.Clone(b.Data)}
	}
	for ch, v := range cp.ChannelVersions {
		if _, ok := m.blobs[key(cp.ThreadID, cp.NS, ch, v)]; !ok {
			return fmt.Errorf("put checkpoint %s: no blob for channel %s version %s", cp.CheckpointID, ch, v)
		}
	}
	rec := *cp
	rec.NewBlobs, rec.Values, rec.PendingWrites = nil, nil, nil
	rec.ChannelVersions = maps.Clone(cp.ChannelVersions)
	rec.Metadata = cloneJSON(cp.Metadata)
	rec.Body = slices.Clone(cp.Body)
	k := key(cp.ThreadID, cp.NS, cp.CheckpointID)
	if _, ok := m.cps[k]; !ok {
		ok := key(cp.ThreadID, cp.NS)
		ids := m.order[ok]
		i, _ := slices.BinarySearch(ids, cp.CheckpointID)
		m.order[ok] = slices.Insert(ids, i, cp.CheckpointID)
	}
	m.cps[k] = &rec
	return nil
}

// PutWrites replaces the pending writes of taskID at a checkpoint.
func (m *MemoryCheckpointer) PutWrites(ctx context.Context, threadID, ns, checkpointID, taskID string, writes []driver.PendingWrite) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := key(threadID, ns, checkpointID)
	kept := slices.DeleteFunc(slices.Clone(m.writes[k]), func(w driver.PendingWrite) bool { return w.TaskID == taskID })
	for _, w := range writes {
		w.TaskID = taskID
		w.Value = slices.Clone(w.Value)
		kept = append(kept, w)
	}
	m.writes[k] = kept
	return nil
}

// GetCheckpoint returns one checkpoint (the latest when checkpointID is "").
func (m *MemoryCheckpointer) GetCheckpoint(ctx context.Context, threadID, ns, checkpointID string) (*driver.CheckpointRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if checkpointID == "" {
		ids := m.order[key(threadID, ns)]
		if len(ids) == 0 {
			return nil, graphserver.Errorf(graphserver.ENOTFOUND, "thread %s has no checkpoint", threadID)
		}
		checkpointID = ids[len(ids)-1]
	}
	rec, ok := m.cps[key(threadID, ns, checkpointID)]
	if !ok {
		return nil, graphserver.Errorf(graphserver.ENOTFOUND, "checkpoint %s not found", checkpointID)
	}
	return m.fill(rec)
}

// ListCheckpoints lists checkpoints of one namespace, newest first.
func (m *MemoryCheckpointer) ListCheckpoints(ctx context.Context, threadID string, opts driver.CheckpointListOptions) ([]*driver.CheckpointRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := m.order[key(threadID, opts.NS)]
	var out []*driver.CheckpointRecord
	for i := len(ids) - 1; i >= 0; i-- {
		if opts.Before != "" && ids[i] >= opts.Before {
			continue
		}
		rec := m.cps[key(threadID, opts.NS, ids[i])]
		if !contains(map[string]any(rec.Metadata), map[string]any(opts.Metadata)) {
			continue
		}
		r, err := m.fill(rec)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
		if opts.Limit > 0 && len(out) >= opts.Limit {
			break
		}
	}
	return out, nil
}

// Size returns the bytes held in blobs, bodies, metadata and writes: a rough
// measure of what a storage driver would store.
func (m *MemoryCheckpointer) Size() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, b := range m.blobs {
		n += len(b.Data) + len(b.Channel) + len(b.Version) + len(b.Base)
	}
	for _, c := range m.cps {
		md, _ := json.Marshal(c.Metadata)
		cv, _ := json.Marshal(c.ChannelVersions)
		n += len(c.Body) + len(md) + len(cv) + len(c.CheckpointID) + len(c.ParentCheckpointID)
	}
	for _, ws := range m.writes {
		for _, w := range ws {
			n += len(w.Value) + len(w.Channel) + len(w.TaskID)
		}
	}
	return n
}

func (m *MemoryCheckpointer) fill(rec *driver.CheckpointRecord) (*driver.CheckpointRecord, error) {
	out := *rec
	out.Metadata = cloneJSON(rec.Metadata)
	out.ChannelVersions = maps.Clone(rec.ChannelVersions)
	out.Values = make(map[string]json.RawMessage, len(rec.ChannelVersions))
	for ch, v := range rec.ChannelVersions {
		val, err := m.value(rec.ThreadID, rec.NS, ch, v)
		if err != nil {
			return nil, err
		}
		out.Values[ch] = val
	}
	out.PendingWrites = slices.Clone(m.writes[key(rec.ThreadID, rec.NS, rec.CheckpointID)])
	return &out, nil
}

// value rebuilds one channel value: it walks the delta blobs back to the
// full one, then splices their arrays once, so a read costs the length of
// the chain and the size of the value (no per-element decoding).
func (m *MemoryCheckpointer) value(thread, ns, ch, version string) (json.RawMessage, error) {
	var chain []json.RawMessage // newest first
	for v := version; ; {
		b, ok := m.blobs[key(thread, ns, ch, v)]
		if !ok {
			return nil, fmt.Errorf("channel %s: missing blob version %s", ch, v)
		}
		chain = append(chain, b.Data)
		if b.Base == "" {
			break
		}
		v = b.Base
	}
	if len(chain) == 1 {
		return slices.Clone(chain[0]), nil
	}
	slices.Reverse(chain)
	var buf bytes.Buffer
	buf.WriteByte('[')
	n := 0
	for i, p := range chain {
		p = bytes.TrimSpace(p)
		if i == 0 && string(p) == "null" {
			continue
		}
		if len(p) < 2 || p[0] != '[' || p[len(p)-1] != ']' {
			if i == 0 {
				return nil, fmt.Errorf("channel %s: base of delta is not a list", ch)
			}
			return nil, fmt.Errorf("channel %s: delta is not a list", ch)
		}
		inner := bytes.TrimSpace(p[1 : len(p)-1])
		if len(inner) == 0 {
			continue
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		buf.Write(inner)
		n++
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}

func cloneJSON(o graphserver.Object) graphserver.Object {
	if o == nil {
		return nil
	}
	// The usual values (decoded JSON, Go strings, numbers and bools) are
	// copied directly, as a JSON round trip would give them back; anything
	// else takes the round trip.
	if out, ok := copyJSONMap(o); ok {
		return out
	}
	b, _ := json.Marshal(o)
	var out graphserver.Object
	_ = json.Unmarshal(b, &out)
	return out
}

// copyJSONMap deep-copies m into what decoding its JSON would give:
// nested objects as map[string]any, arrays as []any, numbers as float64.
// It reports false, having copied nothing useful, when m holds a value it
// does not know (a struct, a NaN, a float32, ...).
func copyJSONMap(m map[string]any) (map[string]any, bool) {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if !utf8.ValidString(k) {
			return nil, false
		}
		c, ok := copyJSONValue(v)
		if !ok {
			return nil, false
		}
		out[k] = c
	}
	return out, true
}

func copyJSONValue(v any) (any, bool) {
	switch v := v.(type) {
	case nil, bool:
		return v, true
	case string:
		return v, utf8.ValidString(v) // JSON would replace invalid bytes
	case float64:
		return v, !math.IsNaN(v) && !math.IsInf(v, 0)
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case int32:
		return float64(v), true
	case map[string]any:
		return copyJSONMap(v)
	case graphserver.Object:
		return copyJSONMap(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			c, ok := copyJSONValue(e)
			if !ok {
				return nil, false
			}
			out[i] = c
		}
		return out, true
	case []string:
		out := make([]any, len(v))
		for i, e := range v {
			if !utf8.ValidString(e) {
				return nil, false
			}
			out[i] = e
		}
		return out, true
	case map[string]string:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if !utf8.ValidString(k) || !utf8.ValidString(e) {
				return nil, false
			}
			out[k] = e
		}
		return out, true
	}
	return nil, false
}

// contains reports whether doc contains sub (JSON containment).
func contains(doc, sub any) bool {
	switch s := sub.(type) {
	case map[string]any:
		d, ok := doc.(map[string]any)
		if !ok {
			if do, ok2 := doc.(graphserver.Object); ok2 {
				d, ok = map[string]any(do), true
			}
		}
		if !ok {
			return len(s) == 0 && doc == nil
		}
		for k, v := range s {
			dv, ok := d[k]
			if !ok || !contains(dv, v) {
				return false
			}
		}
		return true
	case graphserver.Object:
		return contains(doc, map[string]any(s))
	case []any:
		d, ok := doc.([]any)
		if !ok {
			return false
		}
		for _, e := range s {
			if !slices.ContainsFunc(d, func(x any) bool { return contains(x, e) }) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(normalizeOrSelf(doc), normalizeOrSelf(sub))
}
