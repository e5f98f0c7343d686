package sqlite

import (
	"sync"
	"sync/atomic"

	"github.com/graphserver/graphserver"
)

// assistantCacheSize bounds the assistants GetAssistant keeps decoded.
const assistantCacheSize = 256

// assistantCache keeps decoded assistants for GetAssistant while the
// assistants table is unchanged: entries are valid for one value of the
// change counter assistant_changes.n (migration 0008), which triggers move
// at every insert, update and delete of an assistant, in any process. A
// lookup is then one read of that counter instead of the assistant's row
// (and three JSON objects to decode). On a file this process has to itself
// (OpenOptions.Exclusive), entries are valid for one value of the file's
// assistantGen instead, and a lookup reads nothing. Callers get copies.
type assistantCache struct {
	mu sync.Mutex
	n  int64 // the counter the entries were read at
	m  map[string]*graphserver.Assistant
}

// get returns a copy of the assistant cached at counter n, or nil.
func (c *assistantCache) get(id string, n int64) *graphserver.Assistant {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n != n {
		return nil
	}
	if a := c.m[id]; a != nil {
		return cloneAssistant(a)
	}
	return nil
}

// put caches a (a copy of it), read at counter n. Entries of another
// counter are dropped first when n is newer; a is not kept when n is older.
func (c *assistantCache) put(a *graphserver.Assistant, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case n < c.n:
		return
	case n > c.n || c.m == nil || len(c.m) >= assistantCacheSize:
		c.n, c.m = n, map[string]*graphserver.Assistant{}
	}
	c.m[a.AssistantID] = cloneAssistant(a)
}

// cloneAssistant copies a deeply enough that the copy shares no map,
// slice or pointer with it.
func cloneAssistant(a *graphserver.Assistant) *graphserver.Assistant {
	c := *a
	c.Config = graphserver.Object(cloneJSONMap(a.Config))
	c.Context = graphserver.Object(cloneJSONMap(a.Context))
	c.Metadata = graphserver.Metadata(cloneJSONMap(a.Metadata))
	if a.Description != nil {
		d := *a.Description
		c.Description = &d
	}
	return &c
}

// cloneJSONMap deep-copies a decoded JSON object (nil stays nil).
func cloneJSONMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneJSONValue(v)
	}
	return out
}

func cloneJSONValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return cloneJSONMap(v)
	case graphserver.Object:
		return graphserver.Object(cloneJSONMap(v))
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = cloneJSONValue(e)
		}
		return out
	}
	return v // string, float64, bool, nil: immutable
}

// assistantGens maps a database file (fileID) to its assistantGen: a
// generation of the assistants table that moves after every write of it
// made in this process, through any DB open on the file, before the write
// returns. When the file is open Exclusive, no other process writes it, so
// an assistant read at a generation is current while the generation stays.
var assistantGens sync.Map // fileID -> *atomic.Int64

// fileGen returns the generation gens (assistantGens) keeps for
// the file at path, made at 0 on the first call.
func fileGen(gens *sync.Map, path string) (*atomic.Int64, error) {
	id, err := fileID(path)
	if err != nil {
		return nil, err
	}
	g, _ := gens.LoadOrStore(id, new(atomic.Int64))
	return g.(*atomic.Int64), nil
}

// assistantsChanged moves the file's assistantGen: called (deferred) by
// every method that may write the assistants table, once its write is
// over, whatever its outcome.
func (db *DB) assistantsChanged() {
	db.assistantGen.Add(1)
}
