package storagetest

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// exerciseCheckpoints checks driver.Checkpointer.
func exerciseCheckpoints(t *testing.T, open func(t *testing.T) driver.Storage) {
	t.Helper()

	type bundle struct {
		st  driver.Storage
		ctx context.Context
	}
	setup := func(t *testing.T) *bundle {
		t.Helper()
		b := &bundle{st: open(t), ctx: t.Context()}
		createThread(t, b.st, threadOpts{ID: "t1"})
		return b
	}

	t.Run("PutGet", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		in := &driver.CheckpointRecord{
			ThreadID: "t1", CheckpointID: "c1", RunID: "r1", CreatedAt: at(7),
			Metadata:        graphserver.Metadata{"source": "input", "step": -1.0, "parents": map[string]any{}},
			ChannelVersions: map[string]string{"a": "v1", "b": "v1", "__start__": "v1"},
			Body:            json.RawMessage(`{"versions_seen":{"x":{"a":"v1"}}}`),
			NewBlobs: []driver.ChannelBlob{
				blob("a", "v1", "", `{"k":[1,2]}`), blob("b", "v1", "", `"text"`), blob("__start__", "v1", "", `null`),
			},
		}
		require.NoError(t, b.st.PutCheckpoint(b.ctx, in))

		for _, id := range []string{"c1", ""} {
			got, err := b.st.GetCheckpoint(b.ctx, "t1", "", id)
			require.NoError(t, err)
			require.Equal(t, "t1", got.ThreadID)
			require.Equal(t, "", got.NS)
			require.Equal(t, "c1", got.CheckpointID)
			require.Equal(t, "", got.ParentCheckpointID)
			require.Equal(t, "r1", got.RunID)
			require.Equal(t, at(7), got.CreatedAt)
			require.Equal(t, in.Metadata, got.Metadata)
			require.Equal(t, in.ChannelVersions, got.ChannelVersions)
			require.JSONEq(t, string(in.Body), string(got.Body))
			requireValues(t, map[string]string{"a": `{"k":[1,2]}`, "b": `"text"`, "__start__": `null`}, got.Values)
			require.Empty(t, got.PendingWrites)
			require.Empty(t, got.NewBlobs)
		}

		_, err := b.st.GetCheckpoint(b.ctx, "t1", "", "nope")
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.GetCheckpoint(b.ctx, "t1", "sub:1", "")
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.GetCheckpoint(b.ctx, "missing", "", "")
		requireCode(t, err, graphserver.ENOTFOUND)
		err = b.st.PutCheckpoint(b.ctx, &driver.CheckpointRecord{ThreadID: "missing", CheckpointID: "c1", CreatedAt: t0})
		requireCode(t, err, graphserver.ENOTFOUND)
	})

	t.Run("Latest", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// Inserted out of order: the greatest id is the latest.
		for _, id := range []string{"0002", "0003", "0001"} {
			putCheckpoint(t, b.st, "t1", checkpointOpts{ID: id, Versions: map[string]string{"x": id},
				Blobs: []driver.ChannelBlob{blob("x", id, "", fmt.Sprintf("%q", id))}})
		}
		putCheckpoint(t, b.st, "t1", checkpointOpts{NS: "sub:1", ID: "0009"})
		got, err := b.st.GetCheckpoint(b.ctx, "t1", "", "")
		require.NoError(t, err)
		require.Equal(t, "0003", got.CheckpointID)
		requireValues(t, map[string]string{"x": `"0003"`}, got.Values)
		got, err = b.st.GetCheckpoint(b.ctx, "t1", "", "0001")
		require.NoError(t, err)
		requireValues(t, map[string]string{"x": `"0001"`}, got.Values)
		got, err = b.st.GetCheckpoint(b.ctx, "t1", "sub:1", "")
		require.NoError(t, err)
		require.Equal(t, "0009", got.CheckpointID)
		require.Equal(t, "sub:1", got.NS)
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createThread(t, b.st, threadOpts{ID: "t2"})
		for i := 1; i <= 5; i++ {
			src := "loop"
			if i == 1 {
				src = "input"
			}
			putCheckpoint(t, b.st, "t1", checkpointOpts{ID: fmt.Sprintf("c%d", i),
				Metadata: graphserver.Metadata{"source": src, "step": float64(i), "tags": []any{fmt.Sprintf("s%d", i%2)}, "run": map[string]any{"id": "r"}},
				Versions: map[string]string{"n": fmt.Sprint(i)}, Blobs: []driver.ChannelBlob{blob("n", fmt.Sprint(i), "", fmt.Sprint(i))}})
		}
		putCheckpoint(t, b.st, "t1", checkpointOpts{NS: "sub:1", ID: "c9"})
		putCheckpoint(t, b.st, "t2", checkpointOpts{ID: "c8"})

		list := func(o driver.CheckpointListOptions) []string {
			t.Helper()
			got, err := b.st.ListCheckpoints(b.ctx, "t1", o)
			require.NoError(t, err)
			return checkpointIDs(got)
		}
		require.Equal(t, []string{"c5", "c4", "c3", "c2", "c1"}, list(driver.CheckpointListOptions{}))
		require.Equal(t, []string{"c5", "c4"}, list(driver.CheckpointListOptions{Limit: 2}))
		require.Equal(t, []string{"c2", "c1"}, list(driver.CheckpointListOptions{Before: "c3"}))
		require.Equal(t, []string{"c2"}, list(driver.CheckpointListOptions{Before: "c3", Limit: 1}))
		require.Equal(t, []string{"c1"}, list(driver.CheckpointListOptions{Metadata: graphserver.Metadata{"source": "input"}}))
		require.Equal(t, []string{"c4", "c2"}, list(driver.CheckpointListOptions{Metadata: graphserver.Metadata{"tags": []any{"s0"}}}))
		require.Equal(t, []string{"c3"}, list(driver.CheckpointListOptions{Metadata: graphserver.Metadata{"step": 3, "run": map[string]any{"id": "r"}}}))
		require.Equal(t, []string{"c4"}, list(driver.CheckpointListOptions{Metadata: graphserver.Metadata{"source": "loop"}, Before: "c5", Limit: 1}))
		require.Equal(t, []string{}, list(driver.CheckpointListOptions{Metadata: graphserver.Metadata{"source": "update"}}))
		require.Equal(t, []string{"c9"}, list(driver.CheckpointListOptions{NS: "sub:1"}))

		got, err := b.st.ListCheckpoints(b.ctx, "t1", driver.CheckpointListOptions{Limit: 2})
		require.NoError(t, err)
		requireValues(t, map[string]string{"n": `5`}, got[0].Values)
		requireValues(t, map[string]string{"n": `4`}, got[1].Values)
		require.Equal(t, 4.0, got[1].Metadata["step"])

		got, err = b.st.ListCheckpoints(b.ctx, "missing", driver.CheckpointListOptions{})
		require.NoError(t, err)
		require.Empty(t, got)
	})

	t.Run("PendingWrites", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c1"})
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c2", Parent: "c1"})
		w := func(path string, idx int, ch, v string) driver.PendingWrite {
			return driver.PendingWrite{TaskPath: path, Idx: idx, Channel: ch, Value: json.RawMessage(v)}
		}
		require.NoError(t, b.st.PutWrites(b.ctx, "t1", "", "c2", "taskB", []driver.PendingWrite{w("p2", 0, "x", `1`), w("p2", 1, "y", `"two"`)}))
		require.NoError(t, b.st.PutWrites(b.ctx, "t1", "", "c2", "taskA", []driver.PendingWrite{w("p1", 0, "__interrupt__", `[{"value":"q","id":"i"}]`)}))
		require.NoError(t, b.st.PutWrites(b.ctx, "t1", "", "c1", "taskC", []driver.PendingWrite{w("p0", 0, "z", `0`)}))

		got, err := b.st.GetCheckpoint(b.ctx, "t1", "", "c2")
		require.NoError(t, err)
		require.Equal(t, []driver.PendingWrite{
			{TaskID: "taskA", TaskPath: "p1", Idx: 0, Channel: "__interrupt__", Value: json.RawMessage(`[{"value":"q","id":"i"}]`)},
			{TaskID: "taskB", TaskPath: "p2", Idx: 0, Channel: "x", Value: json.RawMessage(`1`)},
			{TaskID: "taskB", TaskPath: "p2", Idx: 1, Channel: "y", Value: json.RawMessage(`"two"`)},
		}, got.PendingWrites)

		// Writing a task again replaces its writes at that checkpoint only.
		require.NoError(t, b.st.PutWrites(b.ctx, "t1", "", "c2", "taskB", []driver.PendingWrite{w("p2", 0, "x", `9`)}))
		got, err = b.st.GetCheckpoint(b.ctx, "t1", "", "")
		require.NoError(t, err)
		require.Equal(t, []driver.PendingWrite{
			{TaskID: "taskA", TaskPath: "p1", Idx: 0, Channel: "__interrupt__", Value: json.RawMessage(`[{"value":"q","id":"i"}]`)},
			{TaskID: "taskB", TaskPath: "p2", Idx: 0, Channel: "x", Value: json.RawMessage(`9`)},
		}, got.PendingWrites)
		list, err := b.st.ListCheckpoints(b.ctx, "t1", driver.CheckpointListOptions{})
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Len(t, list[0].PendingWrites, 2)
		require.Equal(t, []driver.PendingWrite{{TaskID: "taskC", TaskPath: "p0", Idx: 0, Channel: "z", Value: json.RawMessage(`0`)}}, list[1].PendingWrites)

		require.NoError(t, b.st.PutWrites(b.ctx, "t1", "", "c2", "taskA", nil))
		got, err = b.st.GetCheckpoint(b.ctx, "t1", "", "c2")
		require.NoError(t, err)
		require.Len(t, got.PendingWrites, 1, "no writes clears the task's writes")

		requireCode(t, b.st.PutWrites(b.ctx, "missing", "", "c1", "task", []driver.PendingWrite{w("", 0, "x", `1`)}), graphserver.ENOTFOUND)
	})

	t.Run("DeltaChain", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// msgs: v1 full, then v2..v5 each append to the previous version;
		// other changes only at v3. A checkpoint refers to every version.
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c1", Versions: map[string]string{"msgs": "v1", "other": "v1"},
			Blobs: []driver.ChannelBlob{blob("msgs", "v1", "", `[{"id":"m1"}]`), blob("other", "v1", "", `{"o":1}`)}})
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c2", Parent: "c1", Versions: map[string]string{"msgs": "v2", "other": "v1"},
			Blobs: []driver.ChannelBlob{blob("msgs", "v2", "v1", `[{"id":"m2"}]`)}})
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c3", Parent: "c2", Versions: map[string]string{"msgs": "v3", "other": "v3"},
			Blobs: []driver.ChannelBlob{blob("msgs", "v3", "v2", `[{"id":"m3"}, {"id":"m4"}]`), blob("other", "v3", "", `{"o":3}`)}})
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c4", Parent: "c3", Versions: map[string]string{"msgs": "v4", "other": "v3"},
			Blobs: []driver.ChannelBlob{blob("msgs", "v4", "v3", `[]`)}})
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c5", Parent: "c4", Versions: map[string]string{"msgs": "v5", "other": "v3"},
			Blobs: []driver.ChannelBlob{blob("msgs", "v5", "v4", ` [ {"id":"m5"} ] `)}})

		want := map[string][2]string{
			"c1": {`[{"id":"m1"}]`, `{"o":1}`},
			"c2": {`[{"id":"m1"},{"id":"m2"}]`, `{"o":1}`},
			"c3": {`[{"id":"m1"},{"id":"m2"},{"id":"m3"},{"id":"m4"}]`, `{"o":3}`},
			"c4": {`[{"id":"m1"},{"id":"m2"},{"id":"m3"},{"id":"m4"}]`, `{"o":3}`},
			"c5": {`[{"id":"m1"},{"id":"m2"},{"id":"m3"},{"id":"m4"},{"id":"m5"}]`, `{"o":3}`},
		}
		for id, w := range want {
			got, err := b.st.GetCheckpoint(b.ctx, "t1", "", id)
			require.NoError(t, err)
			requireValues(t, map[string]string{"msgs": w[0], "other": w[1]}, got.Values)
		}
		list, err := b.st.ListCheckpoints(b.ctx, "t1", driver.CheckpointListOptions{})
		require.NoError(t, err)
		require.Len(t, list, 5)
		for _, c := range list {
			requireValues(t, map[string]string{"msgs": want[c.CheckpointID][0], "other": want[c.CheckpointID][1]}, c.Values)
		}
	})

	t.Run("DeltaFork", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c1", Versions: map[string]string{"msgs": "1"},
			Blobs: []driver.ChannelBlob{blob("msgs", "1", "", `["a"]`)}})
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c2", Parent: "c1", Versions: map[string]string{"msgs": "2"},
			Blobs: []driver.ChannelBlob{blob("msgs", "2", "1", `["b"]`)}})
		// Two branches from c2, each with its own next version.
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c3a", Parent: "c2", Versions: map[string]string{"msgs": "3.a"},
			Blobs: []driver.ChannelBlob{blob("msgs", "3.a", "2", `["left"]`)}})
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c3b", Parent: "c2", Versions: map[string]string{"msgs": "3.b"},
			Blobs: []driver.ChannelBlob{blob("msgs", "3.b", "2", `["right", "more"]`)}})
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c4b", Parent: "c3b", Versions: map[string]string{"msgs": "4.b"},
			Blobs: []driver.ChannelBlob{blob("msgs", "4.b", "3.b", `["end"]`)}})
		// A branch that replaces the value with a full blob.
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c3c", Parent: "c2", Versions: map[string]string{"msgs": "3.c"},
			Blobs: []driver.ChannelBlob{blob("msgs", "3.c", "", `["reset"]`)}})

		for id, want := range map[string]string{
			"c2":  `["a","b"]`,
			"c3a": `["a","b","left"]`,
			"c3b": `["a","b","right","more"]`,
			"c4b": `["a","b","right","more","end"]`,
			"c3c": `["reset"]`,
		} {
			got, err := b.st.GetCheckpoint(b.ctx, "t1", "", id)
			require.NoError(t, err)
			requireValues(t, map[string]string{"msgs": want}, got.Values)
		}
	})

	t.Run("BlobIdempotent", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c1", Versions: map[string]string{"x": "1"},
			Blobs: []driver.ChannelBlob{blob("x", "1", "", `"first"`)}})
		// The same (channel, version) written again is a no-op.
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c2", Parent: "c1", Versions: map[string]string{"x": "1"},
			Blobs: []driver.ChannelBlob{blob("x", "1", "", `"first"`)}})
		got, err := b.st.GetCheckpoint(b.ctx, "t1", "", "c2")
		require.NoError(t, err)
		requireValues(t, map[string]string{"x": `"first"`}, got.Values)
	})

	t.Run("NamespacesAndThreadsAreSeparate", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createThread(t, b.st, threadOpts{ID: "t2"})
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c1", Versions: map[string]string{"x": "1"}, Blobs: []driver.ChannelBlob{blob("x", "1", "", `"root"`)}})
		putCheckpoint(t, b.st, "t1", checkpointOpts{NS: "sub:1", ID: "c1", Versions: map[string]string{"x": "1"}, Blobs: []driver.ChannelBlob{blob("x", "1", "", `"sub"`)}})
		putCheckpoint(t, b.st, "t2", checkpointOpts{ID: "c1", Versions: map[string]string{"x": "1"}, Blobs: []driver.ChannelBlob{blob("x", "1", "", `"other"`)}})
		for _, c := range []struct{ thread, ns, want string }{{"t1", "", `"root"`}, {"t1", "sub:1", `"sub"`}, {"t2", "", `"other"`}} {
			got, err := b.st.GetCheckpoint(b.ctx, c.thread, c.ns, "c1")
			require.NoError(t, err)
			requireValues(t, map[string]string{"x": c.want}, got.Values)
		}
	})

	t.Run("UUIDIds", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// Engine ids are UUIDv7: a driver may store them compactly and
		// derive created_at from the id, but every field must round-trip
		// exactly, in id order, whatever the creation time.
		v7 := func(ms int64) string {
			u := uuid.Must(uuid.NewV7())
			var ts [8]byte
			binary.BigEndian.PutUint64(ts[:], uint64(ms)<<16)
			copy(u[:6], ts[:6])
			return u.String()
		}
		base := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC).UnixMilli()
		c1, c2, c3, c4 := v7(base), v7(base+1), v7(base+1000), v7(base+1001)
		msTime := func(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
		created := map[string]time.Time{
			c1: msTime(base),                                 // the id's own time
			c2: msTime(base + 1).Add(123 * time.Microsecond), // finer than the id
			c3: at(9),                                        // unrelated to the id
			c4: msTime(base + 1001),
		}
		parent := map[string]string{c1: "", c2: c1, c3: c2, c4: c3}
		for _, id := range []string{c3, c1, c4, c2} { // out of order
			require.NoError(t, b.st.PutCheckpoint(b.ctx, &driver.CheckpointRecord{
				ThreadID: "t1", CheckpointID: id, ParentCheckpointID: parent[id], RunID: "r1", CreatedAt: created[id],
				Metadata: graphserver.Metadata{"id": id}, ChannelVersions: map[string]string{"x": "1"},
				NewBlobs: []driver.ChannelBlob{blob("x", "1", "", `1`)},
			}))
		}
		require.NoError(t, b.st.PutWrites(b.ctx, "t1", "", c2, "task", []driver.PendingWrite{{Channel: "x", Value: json.RawMessage(`2`)}}))

		got, err := b.st.GetCheckpoint(b.ctx, "t1", "", "")
		require.NoError(t, err)
		require.Equal(t, c4, got.CheckpointID)
		for _, id := range []string{c1, c2, c3, c4} {
			got, err := b.st.GetCheckpoint(b.ctx, "t1", "", id)
			require.NoError(t, err)
			require.Equal(t, id, got.CheckpointID)
			require.Equal(t, parent[id], got.ParentCheckpointID)
			require.Equal(t, created[id], got.CreatedAt, id)
			require.Equal(t, id, got.Metadata["id"])
			if id == c2 {
				require.Len(t, got.PendingWrites, 1)
			} else {
				require.Empty(t, got.PendingWrites)
			}
		}
		// Before compares ids as strings, whatever the bound looks like.
		ids := []string{c4, c3, c2, c1}
		for _, before := range []string{c3, c3 + "\x00", c3[:10], c2[:14] + "f", "0", "~", strings.ToUpper(c2), c1 + "-"} {
			want := []string{}
			for _, id := range ids {
				if id < before {
					want = append(want, id)
				}
			}
			list, err := b.st.ListCheckpoints(b.ctx, "t1", driver.CheckpointListOptions{Before: before})
			require.NoError(t, err)
			require.Equal(t, want, checkpointIDs(list), "before %q", before)
		}

		// Ids that are not canonical lower-case UUIDs keep their spelling.
		upper := strings.ToUpper(v7(base))
		for _, id := range []string{upper, uuid.NewString(), "{" + c1 + "}"} {
			putCheckpoint(t, b.st, "t1", checkpointOpts{NS: "other:" + id, ID: id, Parent: upper})
			got, err := b.st.GetCheckpoint(b.ctx, "t1", "other:"+id, "")
			require.NoError(t, err)
			require.Equal(t, id, got.CheckpointID)
			require.Equal(t, upper, got.ParentCheckpointID)
			require.Equal(t, t0, got.CreatedAt)
		}

		// keep_latest keeps exactly the latest root checkpoint.
		n, err := b.st.PruneThreads(b.ctx, []string{"t1"}, graphserver.PruneKeepLatest, nil)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		list, err := b.st.ListCheckpoints(b.ctx, "t1", driver.CheckpointListOptions{})
		require.NoError(t, err)
		require.Equal(t, []string{c4}, checkpointIDs(list))
		require.Equal(t, created[c4], list[0].CreatedAt)
		requireValues(t, map[string]string{"x": `1`}, list[0].Values)
	})

	t.Run("LongChain", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// 300 checkpoints, each appending 0-2 elements to the previous
		// version of msgs (a full value again at 150), with a last-value
		// channel changing every 7th: every version reads back as written.
		want := map[string][2]string{}
		var list []any
		count := "0"
		prev, prevV := "", ""
		for i := range 300 {
			id, v := fmt.Sprintf("c%03d", i), fmt.Sprintf("%d.x", i)
			var add []any
			for j := range i % 3 {
				add = append(add, map[string]any{"id": fmt.Sprintf("m%d.%d", i, j), "n": i})
			}
			var blobs []driver.ChannelBlob
			switch {
			case i == 0 || i == 150:
				list = append([]any{"restart"}, add...)
				data, _ := json.Marshal(list)
				blobs = append(blobs, blob("msgs", v, "", string(data)))
			default:
				list = append(list, add...)
				data, _ := json.Marshal(add)
				if add == nil {
					data = []byte(`[]`)
				}
				blobs = append(blobs, blob("msgs", v, prevV, string(data)))
			}
			versions := map[string]string{"msgs": v, "count": count}
			if i%7 == 0 {
				count = v
				versions["count"] = v
				blobs = append(blobs, blob("count", v, "", fmt.Sprint(i)))
			}
			putCheckpoint(t, b.st, "t1", checkpointOpts{ID: id, Parent: prev, Versions: versions, Blobs: blobs})
			data, _ := json.Marshal(list)
			want[id] = [2]string{string(data), fmt.Sprint(i - i%7)}
			prev, prevV = id, v
		}
		for id, w := range want {
			got, err := b.st.GetCheckpoint(b.ctx, "t1", "", id)
			require.NoError(t, err)
			requireValues(t, map[string]string{"msgs": w[0], "count": w[1]}, got.Values)
		}
		all, err := b.st.ListCheckpoints(b.ctx, "t1", driver.CheckpointListOptions{})
		require.NoError(t, err)
		require.Len(t, all, 300)
		for _, c := range all {
			requireValues(t, map[string]string{"msgs": want[c.CheckpointID][0], "count": want[c.CheckpointID][1]}, c.Values)
			i, err := strconv.Atoi(c.CheckpointID[1:])
			require.NoError(t, err)
			require.Equal(t, fmt.Sprintf("%d.x", i), c.ChannelVersions["msgs"])
		}
	})

	t.Run("ForksOfForks", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// Each step: checkpoint id, parent, version, base, appended data.
		// Bases that are not the tip of their chain fork it; forks fork
		// again; some parents do not hold the base (found elsewhere).
		steps := []struct{ id, parent, v, base, data string }{
			{"a1", "", "1", "", `["a"]`},
			{"a2", "a1", "2", "1", `["b"]`},
			{"a3", "a2", "3", "2", `["c"]`},
			{"f1", "a2", "4", "2", `["x"]`},     // fork of the main chain at 2
			{"f2", "f1", "5", "4", `["y"]`},     // extends the fork
			{"g1", "f1", "6", "4", `["z"]`},     // fork of the fork
			{"g2", "g1", "7", "6", `["z2"]`},    // extends it
			{"h1", "g1", "8", "6", `["w"]`},     // fork of the fork of the fork
			{"e1", "a1", "9", "1", `[]`},        // another branch from the first version
			{"e2", "e1", "10", "9", `["e"]`},    // extends it
			{"a4", "a3", "11", "3", `["d"]`},    // the main chain goes on
			{"k1", "", "12", "5", `["k"]`},      // no parent: the base is found anyway
			{"k2", "a4", "13", "8", `["k2"]`},   // the parent holds another version
			{"r1", "k2", "14", "", `["reset"]`}, // a full value
			{"r2", "r1", "15", "14", `["r"]`},
		}
		want := map[string]string{
			"a1": `["a"]`, "a2": `["a","b"]`, "a3": `["a","b","c"]`, "a4": `["a","b","c","d"]`,
			"f1": `["a","b","x"]`, "f2": `["a","b","x","y"]`,
			"g1": `["a","b","x","z"]`, "g2": `["a","b","x","z","z2"]`, "h1": `["a","b","x","z","w"]`,
			"e1": `["a"]`, "e2": `["a","e"]`,
			"k1": `["a","b","x","y","k"]`, "k2": `["a","b","x","z","w","k2"]`,
			"r1": `["reset"]`, "r2": `["reset","r"]`,
		}
		// ids sort in step order
		full := map[string]string{"": ""}
		for i, s := range steps {
			full[s.id] = fmt.Sprintf("%02d%s", i, s.id)
			putCheckpoint(t, b.st, "t1", checkpointOpts{ID: full[s.id], Parent: full[s.parent],
				Versions: map[string]string{"msgs": s.v}, Blobs: []driver.ChannelBlob{blob("msgs", s.v, s.base, s.data)}})
		}
		for i, s := range steps {
			got, err := b.st.GetCheckpoint(b.ctx, "t1", "", fmt.Sprintf("%02d%s", i, s.id))
			require.NoError(t, err)
			requireValues(t, map[string]string{"msgs": want[s.id]}, got.Values)
			require.Equal(t, map[string]string{"msgs": s.v}, got.ChannelVersions)
		}
		// A delta on a version nobody stored is refused.
		err := b.st.PutCheckpoint(b.ctx, &driver.CheckpointRecord{ThreadID: "t1", CheckpointID: "zz", ParentCheckpointID: "00a1",
			ChannelVersions: map[string]string{"msgs": "99"}, NewBlobs: []driver.ChannelBlob{blob("msgs", "99", "98", `["?"]`)}})
		requireCode(t, err, graphserver.EINVALID)
	})

	t.Run("SharedMetadata", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// What a Server merges into every checkpoint (run_id, thread_id,
		// graph_id, ...) round-trips exactly and is searchable like the
		// keys that vary per checkpoint.
		run := func(r string) graphserver.Metadata {
			return graphserver.Metadata{"run_id": r, "thread_id": "t1", "graph_id": "g", "assistant_id": "a1",
				"user": map[string]any{"name": "ann", "tags": []any{"x", "y"}}}
		}
		md := map[string]graphserver.Metadata{}
		add := func(id, runID string, m graphserver.Metadata, extra graphserver.Metadata) {
			t.Helper()
			all := graphserver.Metadata{}
			for k, v := range m {
				all[k] = v
			}
			for k, v := range extra {
				all[k] = v
			}
			md[id] = all
			putCheckpoint(t, b.st, "t1", checkpointOpts{ID: id, RunID: runID, Metadata: all})
		}
		add("c1", "r1", run("r1"), graphserver.Metadata{"source": "input", "step": -1.0, "parents": map[string]any{}})
		add("c2", "r1", run("r1"), graphserver.Metadata{"source": "loop", "step": 0.0, "parents": map[string]any{}})
		add("c3", "r2", run("r2"), graphserver.Metadata{"source": "loop", "step": 1.0, "parents": map[string]any{"": "c2"}, "writes": map[string]any{"bot": nil}})
		add("c4", "r3", run("other"), graphserver.Metadata{"source": "update", "step": 2.0, "note": nil}) // run_id is not the run's
		add("c5", "", graphserver.Metadata{"graph_id": "g2", "run_id": 7.0}, graphserver.Metadata{"source": "fork"})
		add("c6", "r4", nil, nil)
		add("c7", "r5", graphserver.Metadata{"run_id": "r5"}, nil)

		for id, m := range md {
			got, err := b.st.GetCheckpoint(b.ctx, "t1", "", id)
			require.NoError(t, err)
			if len(m) == 0 {
				require.Empty(t, got.Metadata, id)
			} else {
				require.Equal(t, m, got.Metadata, id)
			}
		}
		list := func(o driver.CheckpointListOptions) []string {
			t.Helper()
			got, err := b.st.ListCheckpoints(b.ctx, "t1", o)
			require.NoError(t, err)
			return checkpointIDs(got)
		}
		f := func(m graphserver.Metadata) driver.CheckpointListOptions {
			return driver.CheckpointListOptions{Metadata: m}
		}
		require.Equal(t, []string{"c4", "c3", "c2", "c1"}, list(f(graphserver.Metadata{"graph_id": "g"})))
		require.Equal(t, []string{"c2", "c1"}, list(f(graphserver.Metadata{"run_id": "r1"})))
		require.Equal(t, []string{"c7"}, list(f(graphserver.Metadata{"run_id": "r5"})))
		require.Equal(t, []string{"c4"}, list(f(graphserver.Metadata{"run_id": "other"})))
		require.Equal(t, []string{}, list(f(graphserver.Metadata{"run_id": "r3"})))
		require.Equal(t, []string{"c5"}, list(f(graphserver.Metadata{"run_id": 7})))
		require.Equal(t, []string{"c3", "c2"}, list(f(graphserver.Metadata{"source": "loop", "assistant_id": "a1"})))
		require.Equal(t, []string{"c3"}, list(f(graphserver.Metadata{"run_id": "r2", "step": 1, "parents": map[string]any{"": "c2"}})))
		require.Equal(t, []string{"c4", "c3", "c2", "c1"}, list(f(graphserver.Metadata{"user": map[string]any{"tags": []any{"y"}}})))
		require.Equal(t, []string{"c4"}, list(f(graphserver.Metadata{"note": nil})))
		require.Equal(t, []string{"c3"}, list(f(graphserver.Metadata{"writes": map[string]any{"bot": nil}})))
		require.Equal(t, []string{"c1"}, list(driver.CheckpointListOptions{Metadata: graphserver.Metadata{"thread_id": "t1"}, Before: "c2"}))
		require.Equal(t, []string{"c4"}, list(driver.CheckpointListOptions{Metadata: graphserver.Metadata{"thread_id": "t1"}, Limit: 1}))
		require.Equal(t, []string{}, list(f(graphserver.Metadata{"graph_id": "g", "source": "fork"})))
	})

	t.Run("CopyPruneDeleteWithChains", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// A chain with a fork and shared metadata, on the root and a
		// subgraph namespace.
		meta := func(step int) graphserver.Metadata {
			return graphserver.Metadata{"graph_id": "g", "run_id": "r1", "step": float64(step)}
		}
		for _, ns := range []string{"", "sub:1"} {
			putCheckpoint(t, b.st, "t1", checkpointOpts{NS: ns, ID: "c1", RunID: "r1", Metadata: meta(1),
				Versions: map[string]string{"m": "1"}, Blobs: []driver.ChannelBlob{blob("m", "1", "", `[1]`)}})
			putCheckpoint(t, b.st, "t1", checkpointOpts{NS: ns, ID: "c2", Parent: "c1", RunID: "r1", Metadata: meta(2),
				Versions: map[string]string{"m": "2"}, Blobs: []driver.ChannelBlob{blob("m", "2", "1", `[2]`)}})
			putCheckpoint(t, b.st, "t1", checkpointOpts{NS: ns, ID: "c3", Parent: "c2", RunID: "r1", Metadata: meta(3),
				Versions: map[string]string{"m": "3"}, Blobs: []driver.ChannelBlob{blob("m", "3", "2", `[3]`)}})
			putCheckpoint(t, b.st, "t1", checkpointOpts{NS: ns, ID: "c4", Parent: "c2", RunID: "r1", Metadata: meta(4),
				Versions: map[string]string{"m": "4"}, Blobs: []driver.ChannelBlob{blob("m", "4", "2", `[4]`)}})
		}
		want := map[string]string{"c1": `[1]`, "c2": `[1,2]`, "c3": `[1,2,3]`, "c4": `[1,2,4]`}
		check := func(thread string, ids ...string) {
			t.Helper()
			for _, ns := range []string{"", "sub:1"} {
				all, err := b.st.ListCheckpoints(b.ctx, thread, driver.CheckpointListOptions{NS: ns})
				require.NoError(t, err)
				require.Len(t, all, len(ids))
				for _, c := range all {
					requireValues(t, map[string]string{"m": want[c.CheckpointID]}, c.Values)
					step, _ := strconv.Atoi(c.CheckpointID[1:])
					require.Equal(t, meta(step), c.Metadata)
				}
			}
		}
		createThread(t, b.st, threadOpts{ID: "t0"})
		_, err := b.st.CopyThread(b.ctx, "t1", "t2", at(5), nil)
		require.NoError(t, err)
		_, err = b.st.CopyThread(b.ctx, "t0", "t3", at(5), nil) // no checkpoints
		require.NoError(t, err)
		check("t2", "c4", "c3", "c2", "c1")

		// The copy's chains grow on their own.
		putCheckpoint(t, b.st, "t2", checkpointOpts{ID: "c5", Parent: "c3", RunID: "r1", Metadata: meta(5),
			Versions: map[string]string{"m": "5"}, Blobs: []driver.ChannelBlob{blob("m", "5", "3", `[5]`)}})
		got, err := b.st.GetCheckpoint(b.ctx, "t2", "", "")
		require.NoError(t, err)
		requireValues(t, map[string]string{"m": `[1,2,3,5]`}, got.Values)
		_, err = b.st.GetCheckpoint(b.ctx, "t1", "", "c5")
		requireCode(t, err, graphserver.ENOTFOUND)
		check("t1", "c4", "c3", "c2", "c1")

		// keep_latest keeps c4 with its value and metadata, and new
		// deltas build on it.
		n, err := b.st.PruneThreads(b.ctx, []string{"t1"}, graphserver.PruneKeepLatest, nil)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		all, err := b.st.ListCheckpoints(b.ctx, "t1", driver.CheckpointListOptions{})
		require.NoError(t, err)
		require.Equal(t, []string{"c4"}, checkpointIDs(all))
		require.Equal(t, "", all[0].ParentCheckpointID)
		require.Equal(t, meta(4), all[0].Metadata)
		requireValues(t, map[string]string{"m": `[1,2,4]`}, all[0].Values)
		_, err = b.st.GetCheckpoint(b.ctx, "t1", "sub:1", "")
		requireCode(t, err, graphserver.ENOTFOUND)
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c6", Parent: "c4", RunID: "r2", Metadata: graphserver.Metadata{"graph_id": "g", "run_id": "r2"},
			Versions: map[string]string{"m": "6"}, Blobs: []driver.ChannelBlob{blob("m", "6", "4", `[6]`)}})
		got, err = b.st.GetCheckpoint(b.ctx, "t1", "", "")
		require.NoError(t, err)
		requireValues(t, map[string]string{"m": `[1,2,4,6]`}, got.Values)
		list, err := b.st.ListCheckpoints(b.ctx, "t1", driver.CheckpointListOptions{Metadata: graphserver.Metadata{"graph_id": "g"}})
		require.NoError(t, err)
		require.Equal(t, []string{"c6", "c4"}, checkpointIDs(list))

		// Deleting a thread deletes its checkpoints; a new thread with
		// the same id starts empty.
		require.NoError(t, b.st.DeleteThread(b.ctx, "t2", nil))
		createThread(t, b.st, threadOpts{ID: "t2"})
		_, err = b.st.GetCheckpoint(b.ctx, "t2", "", "")
		requireCode(t, err, graphserver.ENOTFOUND)
		list, err = b.st.ListCheckpoints(b.ctx, "t2", driver.CheckpointListOptions{NS: "sub:1"})
		require.NoError(t, err)
		require.Empty(t, list)
		putCheckpoint(t, b.st, "t2", checkpointOpts{ID: "c1", Versions: map[string]string{"m": "1"}, Blobs: []driver.ChannelBlob{blob("m", "1", "", `["new"]`)}})
		got, err = b.st.GetCheckpoint(b.ctx, "t2", "", "")
		require.NoError(t, err)
		requireValues(t, map[string]string{"m": `["new"]`}, got.Values)
		require.Empty(t, got.Metadata)
	})

	t.Run("Batch", func(t *testing.T) {
		// driver.CheckpointBatcher, where the driver has it: each
		// checkpoint as PutCheckpoint saves it, in order, all or none.
		t.Parallel()
		b := setup(t)
		cb, ok := rulesOf(b.st).Storage.(driver.CheckpointBatcher)
		if !ok {
			t.Skip("the driver does not implement driver.CheckpointBatcher")
		}
		rec := func(thread, id, parent string, versions map[string]string, blobs ...driver.ChannelBlob) *driver.CheckpointRecord {
			return &driver.CheckpointRecord{ThreadID: thread, CheckpointID: id, ParentCheckpointID: parent, CreatedAt: t0,
				ChannelVersions: versions, NewBlobs: blobs, Body: json.RawMessage(`{"v": 1}`)}
		}
		putCheckpoint(t, b.st, "t1", checkpointOpts{ID: "c0", Versions: map[string]string{"msgs": "1"},
			Blobs: []driver.ChannelBlob{blob("msgs", "1", "", `["a"]`)}})
		// c2's delta is based on a version only c1, earlier in the same
		// batch, stores; x at c2 is c1's blob.
		require.NoError(t, cb.PutCheckpoints(b.ctx, []*driver.CheckpointRecord{
			rec("t1", "c1", "c0", map[string]string{"msgs": "2", "x": "1"}, blob("msgs", "2", "1", `["b"]`), blob("x", "1", "", `1`)),
			rec("t1", "c2", "c1", map[string]string{"msgs": "3", "x": "1"}, blob("msgs", "3", "2", `["c"]`), blob("x", "1", "", `1`)),
		}))
		for id, want := range map[string]map[string]string{
			"c1": {"msgs": `["a","b"]`, "x": `1`},
			"c2": {"msgs": `["a","b","c"]`, "x": `1`},
		} {
			got, err := b.st.GetCheckpoint(b.ctx, "t1", "", id)
			require.NoError(t, err)
			requireValues(t, want, got.Values)
		}
		latest, err := b.st.GetCheckpoint(b.ctx, "t1", "", "")
		require.NoError(t, err)
		require.Equal(t, "c2", latest.CheckpointID)
		require.Equal(t, "c1", latest.ParentCheckpointID)
		require.NoError(t, cb.PutCheckpoints(b.ctx, nil))

		c3 := rec("t1", "c3", "c2", map[string]string{"msgs": "4", "x": "1"}, blob("msgs", "4", "3", `["d"]`))
		badMeta := rec("t1", "c4", "c3", map[string]string{"msgs": "4", "x": "1"})
		badMeta.Metadata = graphserver.Object{"step": 1, "score": math.NaN()} // not JSON
		for _, c := range []struct {
			name string
			next *driver.CheckpointRecord
			code string
		}{
			{"invalid, checked before writing", rec("t1", "", "c3", nil), graphserver.EINVALID},
			{"metadata not JSON", badMeta, graphserver.EINVALID},
			{"base not stored", rec("t1", "c4", "c3", map[string]string{"msgs": "5"}, blob("msgs", "5", "nope", `["e"]`)), graphserver.EINVALID},
			{"thread missing", rec("missing", "c4", "", map[string]string{"msgs": "1"}, blob("msgs", "1", "", `["e"]`)), graphserver.ENOTFOUND},
		} {
			requireCode(t, cb.PutCheckpoints(b.ctx, []*driver.CheckpointRecord{c3, c.next}), c.code)
			_, err := b.st.GetCheckpoint(b.ctx, "t1", "", "c3")
			requireCode(t, err, graphserver.ENOTFOUND)
		}

		// A long batch, each delta based on the checkpoint before.
		var long []*driver.CheckpointRecord
		parent, base, want := "c2", "3", []string{`"a"`, `"b"`, `"c"`}
		for i := range 40 {
			id, v := fmt.Sprintf("l%02d", i), strconv.Itoa(10+i)
			long = append(long, rec("t1", id, parent, map[string]string{"msgs": v, "x": "1"}, blob("msgs", v, base, `["`+id+`"]`)))
			parent, base, want = id, v, append(want, `"`+id+`"`)
		}
		require.NoError(t, cb.PutCheckpoints(b.ctx, long))
		latest, err = b.st.GetCheckpoint(b.ctx, "t1", "", "")
		require.NoError(t, err)
		require.Equal(t, "l39", latest.CheckpointID)
		requireValues(t, map[string]string{"msgs": "[" + strings.Join(want, ",") + "]", "x": `1`}, latest.Values)
	})

	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		requireCode(t, b.st.PutCheckpoint(b.ctx, &driver.CheckpointRecord{ThreadID: "t1"}), graphserver.EINVALID)
		requireCode(t, b.st.PutCheckpoint(b.ctx, &driver.CheckpointRecord{ThreadID: "t1", CheckpointID: "c1",
			NewBlobs: []driver.ChannelBlob{blob("x", "1", "", `{bad`)}}), graphserver.EINVALID)
		_, err := b.st.GetCheckpoint(b.ctx, "t1", "", "c1")
		requireCode(t, err, graphserver.ENOTFOUND)
	})
}
