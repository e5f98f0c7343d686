// Package storagetest is the behaviour every driver.Storage driver must
// show. A driver's test calls Run with a factory that opens a fresh, empty
// storage per call; every subtest opens its own and runs in parallel. A
// behaviour the Server relies on is asserted here or is not guaranteed.
package storagetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// Run exercises every Storage area against storages made by open. open must
// return an isolated, empty, migrated storage and register its cleanup with
// t.Cleanup.
//
// The subtests of the Server's multi-row run rules (creating, cancelling,
// finishing and sweeping runs, writing thread summaries) skip: they run
// from graphserver's own tests, which have the rules (RunWithRules).
func Run(t *testing.T, open func(t *testing.T) driver.Storage) {
	t.Helper()
	run(t, open, nil)
}

// RunWithRules is Run with the Server's run rules, so that no subtest
// skips. graphserver's tests call it (storage_test.go) with rules from its
// export_test.go.
func RunWithRules(t *testing.T, open func(t *testing.T) driver.Storage, rules Rules) {
	t.Helper()
	run(t, open, &rules)
}

func run(t *testing.T, openDriver func(t *testing.T) driver.Storage, rules *Rules) {
	t.Helper()
	open := func(t *testing.T) driver.Storage {
		return &ruleStorage{Storage: openDriver(t), rules: rules, t: t}
	}
	areas := []struct {
		name string
		fn   func(t *testing.T, open func(t *testing.T) driver.Storage)
	}{
		{"Assistants", exerciseAssistants},
		{"Threads", exerciseThreads},
		{"Filters", exerciseFilters},
		{"Checkpoints", exerciseCheckpoints},
		{"ThreadTTL", exerciseThreadTTL},
		{"Concurrency", exerciseConcurrency},
		{"Store", exerciseStore},
		{"Runs", exerciseRuns},
		{"Crons", exerciseCrons},
		{"Observe", exerciseObserve},
		{"Truncate", exerciseTruncate},
		{"Tx", exerciseTx},
		{"Webhooks", exerciseWebhooks},
		{"Ping", exercisePing},
	}
	for _, a := range areas {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			a.fn(t, open)
		})
	}
}

// requireCode asserts that err carries the graphserver error code.
func requireCode(t testing.TB, err error, code string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, graphserver.ErrorCode(err), "error: %v", err)
}

// t0 is the base time of fixtures; it has microsecond precision, which every
// driver must keep.
var t0 = time.Date(2025, 1, 2, 3, 4, 5, 123456000, time.UTC)

// at returns t0 plus n seconds.
func at(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }

func ptr[T any](v T) *T { return &v }

// assistantOpts overrides fixture fields; zero fields keep the defaults.
type assistantOpts struct {
	ID          string
	GraphID     string // default "g"
	Name        string // default "Untitled"
	Description *string
	Config      graphserver.Object
	Context     graphserver.Object
	Metadata    graphserver.Metadata
	CreatedAt   time.Time // default t0; UpdatedAt is the same
}

// createAssistant inserts an assistant and returns what the storage returned.
func createAssistant(t *testing.T, st driver.Storage, o assistantOpts) *graphserver.Assistant {
	t.Helper()
	a := &graphserver.Assistant{
		AssistantID: o.ID, GraphID: o.GraphID, Name: o.Name, Description: o.Description,
		Config: o.Config, Context: o.Context, Metadata: o.Metadata, CreatedAt: o.CreatedAt, UpdatedAt: o.CreatedAt,
	}
	if a.GraphID == "" {
		a.GraphID = "g"
	}
	if a.Name == "" {
		a.Name = "Untitled"
	}
	if a.CreatedAt.IsZero() {
		a.CreatedAt, a.UpdatedAt = t0, t0
	}
	out, err := st.CreateAssistant(t.Context(), a, graphserver.IfExistsRaise, nil)
	require.NoError(t, err)
	return out
}

// threadOpts overrides fixture fields; zero fields keep the defaults.
type threadOpts struct {
	ID             string
	Metadata       graphserver.Metadata
	Status         string // default idle
	Values         string // JSON; default none (null)
	CreatedAt      time.Time
	UpdatedAt      time.Time // default CreatedAt
	StateUpdatedAt time.Time // default CreatedAt
}

// withTx is st.WithTx(ctx, fn) for a test whose fn asserts with require.
// A driver may run fn on a goroutine of its own (SQLite's group writer),
// where a failed assertion ends that goroutine rather than the test, and
// WithTx would then never return: the test would hang until go test's
// timeout. withTx returns WithTx's error, or ends the test as soon as it
// has failed.
func withTx(t *testing.T, ctx context.Context, st driver.Storage, fn func(ctx context.Context, tx driver.Tx) error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- st.WithTx(ctx, fn) }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if t.Failed() {
				t.FailNow()
			}
		}
	}
}

// createThread inserts a thread and returns what the storage returned.
func createThread(t *testing.T, st driver.Storage, o threadOpts) *graphserver.Thread {
	t.Helper()
	th := &graphserver.Thread{
		ThreadID: o.ID, Metadata: o.Metadata, Status: o.Status, CreatedAt: o.CreatedAt,
		UpdatedAt: o.UpdatedAt, StateUpdatedAt: o.StateUpdatedAt,
	}
	if th.Status == "" {
		th.Status = graphserver.ThreadIdle
	}
	if o.Values != "" {
		th.Values = json.RawMessage(o.Values)
	}
	if th.CreatedAt.IsZero() {
		th.CreatedAt = t0
	}
	if th.UpdatedAt.IsZero() {
		th.UpdatedAt = th.CreatedAt
	}
	if th.StateUpdatedAt.IsZero() {
		th.StateUpdatedAt = th.CreatedAt
	}
	out, err := st.CreateThread(t.Context(), th, graphserver.IfExistsRaise, nil)
	require.NoError(t, err)
	return out
}

// blob is a ChannelBlob shorthand: base "" for a full value.
func blob(channel, version, base, data string) driver.ChannelBlob {
	return driver.ChannelBlob{Channel: channel, Version: version, Base: base, Data: json.RawMessage(data)}
}

// checkpointOpts describes a checkpoint to put.
type checkpointOpts struct {
	NS       string
	ID       string
	Parent   string
	RunID    string
	Metadata graphserver.Metadata
	Versions map[string]string
	Blobs    []driver.ChannelBlob
	Body     string // JSON; default {"v": 1}
}

// putCheckpoint stores a checkpoint on thread threadID.
func putCheckpoint(t *testing.T, st driver.Checkpointer, threadID string, o checkpointOpts) {
	t.Helper()
	body := o.Body
	if body == "" {
		body = `{"v": 1}`
	}
	require.NoError(t, st.PutCheckpoint(t.Context(), &driver.CheckpointRecord{
		ThreadID: threadID, NS: o.NS, CheckpointID: o.ID, ParentCheckpointID: o.Parent, RunID: o.RunID,
		CreatedAt: t0, Metadata: o.Metadata, ChannelVersions: o.Versions, Body: json.RawMessage(body), NewBlobs: o.Blobs,
	}))
}

// requireValues asserts a checkpoint's reconstructed values, as JSON.
func requireValues(t *testing.T, want map[string]string, got map[string]json.RawMessage) {
	t.Helper()
	require.Len(t, got, len(want), "channels: %v", keys(got))
	for ch, v := range want {
		require.Contains(t, got, ch)
		require.JSONEq(t, v, string(got[ch]), "channel %s", ch)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// ids returns the assistant ids in order.
func assistantIDs(as []*graphserver.Assistant) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.AssistantID)
	}
	return out
}

// threadIDs returns the thread ids in order.
func threadIDs(ts []*graphserver.Thread) []string {
	out := []string{}
	for _, th := range ts {
		out = append(out, th.ThreadID)
	}
	return out
}

// checkpointIDs returns the checkpoint ids in order.
func checkpointIDs(cs []*driver.CheckpointRecord) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.CheckpointID)
	}
	return out
}
