package storagetest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// Benchmark measures the storage operations behind the API's hot paths
// (the rows of examples/loadtest): creating threads, putting and getting
// store items, the storage side of a stateless run and of a run on a
// thread (create, claim, checkpoints, finish), reading assistants and
// threads; and what long threads do: writing checkpoints with delta
// blobs, reading the latest checkpoint at the end of a long delta chain,
// listing history, and searching threads. The /parallel variants call
// from several goroutines, as concurrent requests do, so that a driver's
// group commit shows. open must return a fresh, empty storage.
//
// The run benchmarks (Hot/StatelessRun, Hot/ThreadRun) need the Server's
// run rules and skip here: graphserver's tests run them
// (BenchmarkWithRules).
func Benchmark(b *testing.B, open func(b *testing.B) driver.Storage) {
	benchmark(b, open, nil)
}

// BenchmarkWithRules is Benchmark with the Server's run rules.
func BenchmarkWithRules(b *testing.B, open func(b *testing.B) driver.Storage, rules Rules) {
	benchmark(b, open, &rules)
}

func benchmark(b *testing.B, open func(b *testing.B) driver.Storage, rules *Rules) {
	benchmarkHotPaths(b, open, rules)

	b.Run("CreateThread", func(b *testing.B) {
		st := open(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			th := &graphserver.Thread{ThreadID: fmt.Sprintf("t%d", i), Status: graphserver.ThreadIdle,
				Metadata: graphserver.Metadata{"owner": "ann"}, CreatedAt: t0, UpdatedAt: t0, StateUpdatedAt: t0}
			if _, err := st.CreateThread(b.Context(), th, graphserver.IfExistsRaise, nil); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("PutCheckpointDelta", func(b *testing.B) {
		st := open(b)
		benchThread(b, st, "t1", 0)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if err := st.PutCheckpoint(b.Context(), deltaCheckpoint("t1", i)); err != nil {
				b.Fatal(err)
			}
		}
	})

	for _, chain := range []int{10, 100} {
		b.Run(fmt.Sprintf("GetLatest/chain=%d", chain), func(b *testing.B) {
			st := open(b)
			benchThread(b, st, "t1", chain)
			b.ReportAllocs()
			for b.Loop() {
				cp, err := st.GetCheckpoint(b.Context(), "t1", "", "")
				if err != nil {
					b.Fatal(err)
				}
				if len(cp.Values) != 2 {
					b.Fatalf("values: %v", cp.Values)
				}
			}
		})
	}

	b.Run("ListHistory/limit=10", func(b *testing.B) {
		st := open(b)
		benchThread(b, st, "t1", 50)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := st.ListCheckpoints(b.Context(), "t1", driver.CheckpointListOptions{Limit: 10}); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("SearchThreads/n=1000", func(b *testing.B) {
		st := open(b)
		for i := range 1000 {
			owner := "ann"
			if i%2 == 1 {
				owner = "bob"
			}
			th := &graphserver.Thread{ThreadID: fmt.Sprintf("t%04d", i), Status: graphserver.ThreadIdle,
				Metadata:  graphserver.Metadata{"owner": owner, "tags": []any{"x", fmt.Sprint(i % 10)}},
				CreatedAt: at(i), UpdatedAt: at(i), StateUpdatedAt: at(i)}
			if _, err := st.CreateThread(b.Context(), th, graphserver.IfExistsRaise, nil); err != nil {
				b.Fatal(err)
			}
		}
		s := &graphserver.ThreadSearch{Metadata: graphserver.Metadata{"tags": []any{"3"}}, Limit: 10,
			Filter: graphserver.Filter{"owner": "bob"}}
		b.ReportAllocs()
		for b.Loop() {
			got, err := st.SearchThreads(b.Context(), s)
			if err != nil {
				b.Fatal(err)
			}
			if len(got) != 11 {
				b.Fatalf("got %d threads", len(got))
			}
		}
	})
}

// benchThread creates a thread with n checkpoints: a messages channel
// growing by delta blobs and a counter replaced each step.
func benchThread(b *testing.B, st driver.Storage, id string, n int) {
	b.Helper()
	th := &graphserver.Thread{ThreadID: id, Status: graphserver.ThreadIdle, CreatedAt: t0, UpdatedAt: t0, StateUpdatedAt: t0}
	if _, err := st.CreateThread(b.Context(), th, graphserver.IfExistsRaise, nil); err != nil {
		b.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if err := st.PutCheckpoint(b.Context(), deltaCheckpoint(id, i)); err != nil {
			b.Fatal(err)
		}
	}
}

// deltaCheckpoint is step i of a chat thread: message i appended to the
// messages channel (a full blob at step 1), the step counter replaced.
func deltaCheckpoint(threadID string, i int) *driver.CheckpointRecord {
	v := fmt.Sprintf("%08d", i)
	msg := fmt.Sprintf(`[{"id":"m%d","type":"ai","content":"message number %d with some text in it"}]`, i, i)
	base := ""
	if i > 1 {
		base = fmt.Sprintf("%08d", i-1)
	}
	cp := &driver.CheckpointRecord{
		ThreadID: threadID, CheckpointID: "c" + v, CreatedAt: at(i),
		Metadata:        graphserver.Metadata{"source": "loop", "step": i},
		ChannelVersions: map[string]string{"messages": v, "step": v},
		Body:            json.RawMessage(`{"versions_seen":{}}`),
		NewBlobs: []driver.ChannelBlob{
			{Channel: "messages", Version: v, Base: base, Data: json.RawMessage(msg)},
			{Channel: "step", Version: v, Data: json.RawMessage(fmt.Sprint(i))},
		},
	}
	if i > 1 {
		cp.ParentCheckpointID = "c" + base
	}
	return cp
}
