package sqlite_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/sqlite"
)

// FuzzFilter compiles arbitrary JSON objects as containment filters and
// access-control filters on thread metadata and runs them against a
// database holding threads with assorted metadata: a filter is either run
// or refused with EINVALID, never an internal error (a 500 over HTTP), and
// SQLite never sees a query it cannot parse.
func FuzzFilter(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"a":1}`, `{"a":{"b":[1,"x",null,true]}}`, `{"tags":{"$contains":["a","b"]}}`,
		`{"owner":{"$eq":{"k":"v"}}}`, `{"a\\b":1}`, `{"a\"b":1}`, `{"\u0000":1}`, `{"":{"":[]}}`,
		`{"a":[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]}`, `{"$contains":1}`, `{"a":{"$ne":1}}`,
		`{"n":1e308,"m":-0.0,"s":"\ud800"}`,
	} {
		f.Add([]byte(seed))
	}
	db, err := sqlite.Open(filepath.Join(f.TempDir(), "gs.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	now := time.Now().UTC()
	for i, md := range []graphserver.Metadata{
		{"a": 1.0, "tags": []any{"a", "b"}}, {"owner": map[string]any{"k": "v"}}, {"a": map[string]any{"b": []any{1.0, "x", nil, true}}}, {},
	} {
		_, err := db.CreateThread(f.Context(), &graphserver.Thread{ThreadID: string(rune('a' + i)), CreatedAt: now, UpdatedAt: now,
			StateUpdatedAt: now, Metadata: md, Status: graphserver.ThreadIdle, Values: json.RawMessage("null")}, graphserver.IfExistsRaise, nil)
		if err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil {
			return
		}
		for _, s := range []*graphserver.ThreadSearch{
			{Metadata: graphserver.Metadata(m), Limit: 10},
			{Filter: graphserver.Filter(m), Limit: 10},
		} {
			_, err := db.SearchThreads(t.Context(), s)
			if code := graphserver.ErrorCode(err); code != "" && code != graphserver.EINVALID {
				t.Fatalf("filter %s: %v", raw, err)
			}
			_, err = db.CountThreads(t.Context(), s)
			if code := graphserver.ErrorCode(err); code != "" && code != graphserver.EINVALID {
				t.Fatalf("count with filter %s: %v", raw, err)
			}
		}
	})
}
