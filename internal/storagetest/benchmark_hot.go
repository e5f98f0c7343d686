package storagetest

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// benchmarkHotPaths measures the storage calls behind each row of
// examples/loadtest, serially and from 8 goroutines (/parallel).
func benchmarkHotPaths(b *testing.B, openDriver func(b *testing.B) driver.Storage, rules *Rules) {
	open := func(b *testing.B) driver.Storage {
		return &ruleStorage{Storage: openDriver(b), rules: rules, t: b}
	}
	// POST /threads
	benchBoth(b, "Hot/CreateThread", open, nil, func(b *testing.B, st driver.Storage, _, _ int64) {
		now := time.Now().UTC().Truncate(time.Microsecond)
		th := &graphserver.Thread{ThreadID: uuid.NewString(), Status: graphserver.ThreadIdle, Metadata: graphserver.Metadata{},
			Config: graphserver.Object{}, Context: graphserver.Object{}, CreatedAt: now, UpdatedAt: now, StateUpdatedAt: now}
		if _, err := st.CreateThread(b.Context(), th, graphserver.IfExistsRaise, nil); err != nil {
			b.Fatal(err)
		}
	})

	// PUT /store/items: a new item without indexed fields, and a
	// replacement of an item.
	benchBoth(b, "Hot/PutItem", open, nil, func(b *testing.B, st driver.Storage, i, _ int64) {
		if err := st.PutItem(b.Context(), benchItem(fmt.Sprintf("k%d", i))); err != nil {
			b.Fatal(err)
		}
	})
	benchBoth(b, "Hot/PutItem/replace", open, seedItems, func(b *testing.B, st driver.Storage, i, _ int64) {
		if err := st.PutItem(b.Context(), benchItem(fmt.Sprintf("k%d", i%benchItemCount))); err != nil {
			b.Fatal(err)
		}
	})

	// GET /store/items
	benchBoth(b, "Hot/GetItem", open, seedItems, func(b *testing.B, st driver.Storage, i, _ int64) {
		it, err := st.GetItem(b.Context(), []string{"bench"}, fmt.Sprintf("k%d", i%benchItemCount), time.Now(), true)
		if err != nil || it.Value["n"] == nil {
			b.Fatal(it, err)
		}
	})

	// POST /runs/wait and /threads/{id}/runs/wait: the assistant and
	// thread reads of a run's creation.
	benchBoth(b, "Hot/GetAssistant", open, seedAssistant, func(b *testing.B, st driver.Storage, _, _ int64) {
		if _, err := st.GetAssistant(b.Context(), benchAssistantID, nil); err != nil {
			b.Fatal(err)
		}
	})
	benchBoth(b, "Hot/GetThread", open, seedThreads, func(b *testing.B, st driver.Storage, i, _ int64) {
		if _, err := st.GetThread(b.Context(), benchThreadID(i%benchThreadCount), nil); err != nil {
			b.Fatal(err)
		}
	})

	// The storage side of POST /runs/wait: a run on a new temporary thread,
	// created already claimed, then finished with its thread deleted.
	benchBoth(b, "Hot/StatelessRun", open, func(b *testing.B, st driver.Storage) { needRules(b, st) }, func(b *testing.B, st driver.Storage, _, _ int64) {
		run, ins := benchRun(uuid.NewString())
		ins.CreateThread = &graphserver.Thread{ThreadID: run.ThreadID, CreatedAt: run.CreatedAt, UpdatedAt: run.CreatedAt,
			StateUpdatedAt: run.CreatedAt, Metadata: graphserver.Metadata{"graph_id": "echo"}, Config: graphserver.Object{},
			Context: graphserver.Object{}, Status: graphserver.ThreadBusy, Values: json.RawMessage("null")}
		run.Kwargs.Temporary = true
		created, err := rulesOf(st).CreateRun(b.Context(), run, ins)
		if err != nil || !created.Claimed {
			b.Fatal(created, err)
		}
		if err := rulesOf(st).FinishRun(b.Context(), &driver.RunFinish{RunID: run.RunID, ThreadID: run.ThreadID, Owner: ins.Owner,
			Status: graphserver.RunSuccess, DeleteThread: true, Now: time.Now()}); err != nil {
			b.Fatal(err)
		}
	})

	// The storage side of POST /threads/{id}/runs/wait, one client per
	// thread: create the run claimed, write the engine's three checkpoints,
	// finish with the thread's summary.
	benchBoth(b, "Hot/ThreadRun", open, func(b *testing.B, st driver.Storage) {
		needRules(b, st)
		seedThreads(b, st)
	}, func(b *testing.B, st driver.Storage, _, worker int64) {
		tid := benchThreadID(worker)
		run, ins := benchRun(tid)
		created, err := rulesOf(st).CreateRun(b.Context(), run, ins)
		if err != nil || !created.Claimed {
			b.Fatal(created, err)
		}
		parent := ""
		for step := range 3 {
			cp := benchCheckpoint(tid, parent, step)
			if err := st.PutRunCheckpoint(b.Context(), run.RunID, ins.Owner, cp); err != nil {
				b.Fatal(err)
			}
			parent = cp.CheckpointID
		}
		sum := &driver.ThreadSummary{Status: graphserver.ThreadIdle, Values: json.RawMessage(`{"messages":[{"role":"user","content":"hi"}]}`),
			Interrupts: map[string][]graphserver.Interrupt{}}
		if err := rulesOf(st).FinishRun(b.Context(), &driver.RunFinish{RunID: run.RunID, ThreadID: tid, Owner: ins.Owner,
			Status: graphserver.RunSuccess, Summary: sum, Now: time.Now()}); err != nil {
			b.Fatal(err)
		}
	})
}

// benchParallelism is how many goroutines the /parallel variants use: the
// loadtest's clients.
const benchParallelism = 8

// benchBoth runs op serially and from benchParallelism goroutines, each on
// a fresh storage prepared by setup. op gets a number unique within the
// benchmark.
func benchBoth(b *testing.B, name string, open func(b *testing.B) driver.Storage,
	setup func(b *testing.B, st driver.Storage), op func(b *testing.B, st driver.Storage, i, _ int64)) {
	b.Run(name, func(b *testing.B) {
		st := open(b)
		if setup != nil {
			setup(b, st)
		}
		b.ReportAllocs()
		cpu := CPUMeter(b)
		var i int64
		for b.Loop() {
			i++
			op(b, st, i, 0)
		}
		cpu()
	})
	b.Run(name+"/parallel", func(b *testing.B) {
		st := open(b)
		if setup != nil {
			setup(b, st)
		}
		b.ReportAllocs()
		b.ResetTimer()
		cpu := CPUMeter(b)
		defer cpu()
		var n, workers atomic.Int64
		b.SetParallelism(max(1, benchParallelism/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			worker := workers.Add(1) - 1
			for pb.Next() {
				op(b, st, n.Add(1), worker%benchThreadCount)
			}
		})
	})
}

// CPUMeter starts counting the process's CPU time; the function it returns
// reports it per operation as cpu-ns/op. Unlike ns/op, CPU time depends
// little on what else the machine runs, so it compares runs made under
// different loads (the storage's background goroutines count too). On
// systems where it cannot be read, nothing is reported.
func CPUMeter(b *testing.B) func() {
	start := processCPU()
	return func() {
		if used := processCPU() - start; start > 0 && b.N > 0 {
			b.ReportMetric(float64(used)/float64(b.N), "cpu-ns/op")
		}
	}
}

const (
	benchItemCount   = 1000
	benchThreadCount = 64
	benchAssistantID = "5a1f6bb2-8c0e-4c7a-9a8e-0d4b8c7f1e22"
)

func benchItem(key string) *driver.ItemWrite {
	return &driver.ItemWrite{Namespace: []string{"bench"}, Key: key,
		Value: graphserver.Object{"text": "the quick brown fox", "n": 1}, Now: time.Now().UTC().Truncate(time.Millisecond)}
}

func seedItems(b *testing.B, st driver.Storage) {
	for i := range benchItemCount {
		if err := st.PutItem(b.Context(), benchItem(fmt.Sprintf("k%d", i))); err != nil {
			b.Fatal(err)
		}
	}
}

func seedAssistant(b *testing.B, st driver.Storage) {
	a := &graphserver.Assistant{AssistantID: benchAssistantID, GraphID: "echo", Name: "echo",
		Config: graphserver.Object{"configurable": map[string]any{}}, Context: graphserver.Object{},
		Metadata: graphserver.Metadata{"created_by": "system"}, CreatedAt: t0, UpdatedAt: t0}
	if _, err := st.CreateAssistant(b.Context(), a, graphserver.IfExistsRaise, nil); err != nil {
		b.Fatal(err)
	}
}

func benchThreadID(i int64) string {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte(fmt.Sprint(i))).String()
}

func seedThreads(b *testing.B, st driver.Storage) {
	for i := range int64(benchThreadCount) {
		th := &graphserver.Thread{ThreadID: benchThreadID(i), Status: graphserver.ThreadIdle,
			Metadata: graphserver.Metadata{"graph_id": "echo"}, CreatedAt: t0, UpdatedAt: t0, StateUpdatedAt: t0}
		if _, err := st.CreateThread(b.Context(), th, graphserver.IfExistsRaise, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// benchRun is a run of the one-node echo graph on thread tid, to be
// inserted claimed.
func benchRun(tid string) (*graphserver.Run, *driver.RunInsert) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	runID := uuid.Must(uuid.NewV7()).String()
	run := &graphserver.Run{RunID: runID, ThreadID: tid, AssistantID: benchAssistantID, CreatedAt: now, UpdatedAt: now,
		Status: graphserver.RunPending, MultitaskStrategy: graphserver.MultitaskReject,
		Metadata: graphserver.Metadata{"graph_id": "echo", "assistant_id": benchAssistantID},
		Kwargs: graphserver.RunKwargs{Input: json.RawMessage(`{"messages":[{"role":"user","content":"hi"}]}`),
			Config:     graphserver.Object{"configurable": map[string]any{"run_id": runID, "thread_id": tid, "graph_id": "echo"}},
			Context:    graphserver.Object{},
			StreamMode: []string{"values"}, Durability: graphserver.DurabilityAsync}}
	ins := &driver.RunInsert{ThreadMetadata: graphserver.Metadata{"graph_id": "echo", "assistant_id": benchAssistantID},
		ThreadConfig: graphserver.Object{"configurable": map[string]any{}}, Owner: "bench-" + runID, LeaseUntil: now.Add(time.Minute)}
	return run, ins
}

// benchCheckpoint is step step of a one-node run: the input, __start__ and
// the node's checkpoints, each replacing the one channel.
func benchCheckpoint(tid, parent string, step int) *driver.CheckpointRecord {
	id := uuid.Must(uuid.NewV7()).String()
	v := fmt.Sprintf("%08d", step+1)
	return &driver.CheckpointRecord{
		ThreadID: tid, CheckpointID: id, ParentCheckpointID: parent, CreatedAt: time.Now().UTC(),
		Metadata:        graphserver.Metadata{"source": "loop", "step": step - 1},
		ChannelVersions: map[string]string{"__root__": v},
		Body:            json.RawMessage(`{"versions_seen":{}}`),
		NewBlobs: []driver.ChannelBlob{{Channel: "__root__", Version: v,
			Data: json.RawMessage(`{"messages":[{"role":"user","content":"hi"}]}`)}},
	}
}
