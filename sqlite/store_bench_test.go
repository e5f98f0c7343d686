package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/internal/embedtest"
	"github.com/graphserver/graphserver/internal/vecrank"
)

// benchItems is the number of items in the store benchmarks' database.
const benchItems = 100_000

// benchDims is the embedding size of the benchmark items.
const benchDims = 64

var benchWords = strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu")

// benchText returns a deterministic sentence of eight words for item i.
func benchText(i int) string {
	var sb strings.Builder
	for j := range 8 {
		if j > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(benchWords[(i*7+j*j*13+j)%len(benchWords)])
	}
	return sb.String()
}

// openBenchDB opens a fresh database holding benchItems items in 1,000
// namespaces (users.<n>.memories), each with a full-text entry and a
// benchDims-sized vector, inserted in one transaction.
func openBenchDB(b *testing.B) *DB {
	b.Helper()
	db, err := Open(filepath.Join(b.TempDir(), "gs.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	ctx := context.Background()
	emb := embedtest.HashEmbedder{Dims: benchDims}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	err = db.write(ctx, func(tx *connTx) error {
		items, err := tx.PrepareContext(ctx, `INSERT INTO store_items (id, namespace, key, value, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer items.Close()
		fts, err := tx.PrepareContext(ctx, `INSERT INTO store_fts (rowid, text) VALUES (?, ?)`)
		if err != nil {
			return err
		}
		defer fts.Close()
		vecs, err := tx.PrepareContext(ctx, `INSERT INTO store_vectors (item_id, seq, path, dims, vector) VALUES (?, 0, '$', ?, ?)`)
		if err != nil {
			return err
		}
		defer vecs.Close()
		for i := range benchItems {
			text := benchText(i)
			ts := formatTime(now.Add(time.Duration(i) * time.Millisecond))
			value := fmt.Sprintf(`{"i":%d,"group":%d,"text":%q}`, i, i%10, text)
			if _, err := items.ExecContext(ctx, i+1, fmt.Sprintf("users.%d.memories", i%1000), fmt.Sprintf("k%d", i), value, ts, ts); err != nil {
				return err
			}
			if _, err := fts.ExecContext(ctx, i+1, text); err != nil {
				return err
			}
			v, _ := emb.Embed(ctx, []string{text})
			if _, err := vecs.ExecContext(ctx, i+1, benchDims, vecrank.Encode(v[0])); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// reportRate reports the loop's operations per second under unit.
func reportRate(b *testing.B, n int, unit string) {
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), unit)
}

// BenchmarkStore measures item puts, gets and searches against a database of
// 100,000 items. Run it with:
//
//	go test ./sqlite/ -run '^$' -bench Store -benchtime 2s
func BenchmarkStore(b *testing.B) {
	db := openBenchDB(b)
	ctx := context.Background()
	now := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)

	b.Run("Put", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			text := benchText(n)
			err := db.PutItem(ctx, &driver.ItemWrite{
				Namespace: []string{"bench", "put", fmt.Sprint(n % 100)},
				Key:       fmt.Sprint(n),
				Value:     graphserver.Object{"i": n, "text": text},
				Now:       now,
				Index:     []driver.ItemIndexEntry{{Path: "$", Text: text}},
			})
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		reportRate(b, n, "puts/s")
	})

	b.Run("Get", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			i := (n * 7919) % benchItems
			it, err := db.GetItem(ctx, []string{"users", fmt.Sprint(i % 1000), "memories"}, fmt.Sprintf("k%d", i), now, true)
			if err != nil || it == nil {
				b.Fatal(err)
			}
			n++
		}
		reportRate(b, n, "gets/s")
	})

	searches := []struct {
		name string
		q    driver.ItemQuery
	}{
		// 100 items under the prefix, newest 10.
		{"Prefix", driver.ItemQuery{NamespacePrefix: []string{"users", "42"}}},
		// Every item matches the prefix; the filter keeps a tenth.
		{"PrefixFilter", driver.ItemQuery{NamespacePrefix: []string{"users"},
			Conditions: []driver.ItemCondition{{Field: "group", Op: "$eq", Value: 3.0}, {Field: "i", Op: "$gte", Value: 50000.0}}}},
		{"FullText", driver.ItemQuery{Query: "alpha zulu"}},
		{"FullTextPrefix", driver.ItemQuery{NamespacePrefix: []string{"users", "42"}, Query: "alpha zulu"}},
	}
	vec, _ := embedtest.HashEmbedder{Dims: benchDims}.Embed(ctx, []string{"alpha zulu"})
	searches = append(searches,
		struct {
			name string
			q    driver.ItemQuery
		}{"VectorPrefix", driver.ItemQuery{NamespacePrefix: []string{"users", "42"}, Query: "alpha zulu", Vector: vec[0]}},
		struct {
			name string
			q    driver.ItemQuery
		}{"VectorAll", driver.ItemQuery{Query: "alpha zulu", Vector: vec[0]}},
	)
	// The searches run twice: on a fresh database (no planner statistics),
	// then after ANALYZE, as on a database that ran PRAGMA optimize.
	for _, stats := range []string{"", "Analyzed"} {
		if stats != "" {
			if _, err := db.writer.ExecContext(ctx, `ANALYZE`); err != nil {
				b.Fatal(err)
			}
		}
		for _, s := range searches {
			b.Run(stats+"Search"+s.name, func(b *testing.B) {
				b.ReportAllocs()
				q := s.q
				q.Limit, q.Now = 10, now
				n := 0
				for b.Loop() {
					items, err := db.SearchItems(ctx, &q)
					if err != nil {
						b.Fatal(err)
					}
					if len(items) == 0 {
						b.Fatal("no items found")
					}
					n++
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(n), "µs/search")
			})
		}
	}
}
