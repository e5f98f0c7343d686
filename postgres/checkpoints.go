package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/internal/jsoncol"
)

// chanLoc is one entry of the channels column: a channel's version and the
// checkpoint_blobs row holding its value, if stored. It is encoded as
// [version, blob_id], or [version] when not stored.
type chanLoc struct {
	version string
	blob    int64
	stored  bool
}

// MarshalJSON implements json.Marshaler.
func (l chanLoc) MarshalJSON() ([]byte, error) {
	if !l.stored {
		return json.Marshal([]any{l.version})
	}
	return json.Marshal([]any{l.version, l.blob})
}

// UnmarshalJSON implements json.Unmarshaler.
func (l *chanLoc) UnmarshalJSON(b []byte) error {
	var a []json.RawMessage
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	*l = chanLoc{}
	if len(a) > 0 {
		if err := json.Unmarshal(a[0], &l.version); err != nil {
			return fmt.Errorf("stored channel location %s is invalid: %w", b, err)
		}
	}
	if len(a) == 2 {
		if err := json.Unmarshal(a[1], &l.blob); err != nil {
			return fmt.Errorf("stored channel location %s is invalid: %w", b, err)
		}
		l.stored = true
	}
	return nil
}

// decodeChannels reads a channels column.
func decodeChannels(s string) (map[string]chanLoc, error) {
	locs := map[string]chanLoc{}
	if s == "" || s == "{}" {
		return locs, nil
	}
	if err := json.Unmarshal([]byte(s), &locs); err != nil {
		return nil, fmt.Errorf("decode checkpoint channels: %w", err)
	}
	return locs, nil
}

// checkpointRow is a checkpoints row.
type checkpointRow struct {
	NS                 string    `db:"checkpoint_ns"`
	CheckpointID       string    `db:"checkpoint_id"`
	ParentCheckpointID string    `db:"parent_checkpoint_id"`
	RunID              string    `db:"run_id"`
	CreatedAt          time.Time `db:"created_at"`
	Metadata           string    `db:"metadata"`
	Channels           string    `db:"channels"`
	Body               string    `db:"body"`
	HasWrites          bool      `db:"has_writes"`
}

const checkpointColumns = `checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, created_at, metadata, channels, body`

// checkpointSelect selects the checkpoint rows of checkpointRow, with
// whether each has pending writes: most have none, and their read is then
// spared a round trip (loadCheckpoint).
const checkpointSelect = `SELECT ` + checkpointColumns + `, EXISTS (SELECT 1 FROM checkpoint_writes AS w
		WHERE w.thread_id = checkpoints.thread_id AND w.checkpoint_ns = checkpoints.checkpoint_ns
			AND w.checkpoint_id = checkpoints.checkpoint_id) AS has_writes FROM checkpoints`

// PutCheckpoint implements driver.Checkpointer. The checkpoint row is
// inserted, or replaced when one with the same thread, namespace and id
// exists; each of cp.NewBlobs is stored unless the parent checkpoint (or
// the one replaced) has the same channel and version already. A delta blob
// is stored as the elements it appends to its base's blob. ENOTFOUND when
// the thread does not exist; EINVALID for missing ids, invalid JSON, a delta
// blob that is not an array or whose base version is not stored.
func (db *DB) PutCheckpoint(ctx context.Context, cp *driver.CheckpointRecord) error {
	return db.putCheckpoints(ctx, []*driver.CheckpointRecord{cp}, "", "")
}

// PutCheckpoints implements driver.CheckpointBatcher: each of cps as
// PutCheckpoint saves it, in one transaction of two round trips.
func (db *DB) PutCheckpoints(ctx context.Context, cps []*driver.CheckpointRecord) error {
	return db.putCheckpoints(ctx, cps, "", "")
}

// putCheckpoints validates cps, then saves them in order in one
// transaction; with a runID, only while owner holds that run.
func (db *DB) putCheckpoints(ctx context.Context, cps []*driver.CheckpointRecord, runID, owner string) error {
	created, err := driver.CheckpointTimes(cps, db.now)
	if err != nil || len(cps) == 0 {
		return err
	}
	return db.writeTx(ctx, func(tx pgx.Tx) error {
		return putCheckpointsTx(ctx, tx, cps, created, runID, owner)
	})
}

// putCheckpoint writes cp (validated) in tx, as putCheckpointsTx.
func putCheckpoint(ctx context.Context, tx pgx.Tx, cp *driver.CheckpointRecord, created time.Time, runID, owner string) error {
	return putCheckpointsTx(ctx, tx, []*driver.CheckpointRecord{cp}, []time.Time{created}, runID, owner)
}

// cpKey names a checkpoint: thread, namespace, id.
type cpKey [3]string

// knownQueries caches knownQuery by number of checkpoints (at most
// knownChunk).
var knownQueries sync.Map

// knownQuery is what putCheckpointsTx reads before writing n checkpoints,
// in one statement: whether the run is held (its row share-locked for the
// rest of the transaction, holdsRun), ids for the new blobs, then for each
// checkpoint whether its thread exists and the channels of its parent and
// of the checkpoint it replaces.
func knownQuery(n int) string {
	if q, ok := knownQueries.Load(n); ok {
		return q.(string)
	}
	var b strings.Builder
	b.WriteString(`SELECT
		(? = '' OR EXISTS (SELECT 1 FROM runs WHERE run_id = ? AND lease_owner = ? AND status = 'running' FOR SHARE)),
		(SELECT array_agg(nextval('checkpoint_blob_ids')) FROM generate_series(1, ?::int))`)
	for range n {
		b.WriteString(`,
		EXISTS (SELECT 1 FROM threads WHERE thread_id = ?),
		(SELECT channels::text FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?),
		(SELECT channels::text FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?)`)
	}
	q := rebind(b.String())
	knownQueries.Store(n, q)
	return q
}

// putCheckpointsTx writes cps (validated) in order in tx; with a runID,
// only while owner holds that run (holdsRun). What it reads (the lease,
// the threads, the channels of the parent and replaced checkpoints, ids
// for the new blobs) is one statement for up to knownChunk checkpoints (a
// parent or replaced checkpoint earlier in cps is known without reading),
// and its inserts go with the commit (pipeTx): two round trips in all.
func putCheckpointsTx(ctx context.Context, tx pgx.Tx, cps []*driver.CheckpointRecord, created []time.Time, runID, owner string) error {
	written := map[cpKey]map[string]chanLoc{} // the channels of cps written so far
	for len(cps) > 0 {
		n := min(len(cps), knownChunk)
		if err := putChunk(ctx, tx, cps[:n], created[:n], runID, owner, written); err != nil {
			return err
		}
		cps, created = cps[n:], created[n:]
	}
	return nil
}

// knownChunk bounds the checkpoints one knownQuery reads for (and so its
// size and the number of statements cached).
const knownChunk = 16

// putChunk is putCheckpointsTx for at most knownChunk checkpoints, adding
// the channels of those it writes to written.
func putChunk(ctx context.Context, tx pgx.Tx, cps []*driver.CheckpointRecord, created []time.Time, runID, owner string,
	written map[cpKey]map[string]chanLoc) error {
	blobs := 0
	args := []any{runID, runID, owner, 0}
	for _, cp := range cps {
		blobs += len(cp.NewBlobs)
		args = append(args, cp.ThreadID, cp.ThreadID, cp.NS, cp.ParentCheckpointID, cp.ThreadID, cp.NS, cp.CheckpointID)
	}
	args[3] = blobs
	var held bool
	var ids []int64
	exists := make([]bool, len(cps))
	chans := make([][2]*string, len(cps)) // parent, self
	dest := []any{&held, &ids}
	for i := range cps {
		dest = append(dest, &exists[i], &chans[i][0], &chans[i][1])
	}
	if err := tx.QueryRow(ctx, knownQuery(len(cps)), args...).Scan(dest...); err != nil {
		return fmt.Errorf("put checkpoint: %w", err)
	}
	if len(ids) != blobs {
		return fmt.Errorf("put checkpoint: %d blob ids taken for %d blobs", len(ids), blobs)
	}
	if !held {
		return graphserver.Errorf(graphserver.ENOTFOUND, "Run %s is not held by this worker (its lease was lost).", runID)
	}
	for i, cp := range cps {
		if !exists[i] {
			return threadNotFound(cp.ThreadID)
		}
		p := placer{ctx: ctx, tx: tx, threadID: cp.ThreadID, ns: cp.NS, placed: map[[2]string]chanLoc{}, ids: ids[:len(cp.NewBlobs)]}
		ids = ids[len(cp.NewBlobs):]
		for j, id := range []string{cp.ParentCheckpointID, cp.CheckpointID} {
			if locs, ok := written[cpKey{cp.ThreadID, cp.NS, id}]; ok {
				p.known = append(p.known, locs)
				continue
			}
			if chans[i][j] == nil {
				continue
			}
			locs, err := decodeChannels(*chans[i][j])
			if err != nil {
				return err
			}
			p.known = append(p.known, locs)
		}
		locs, err := putCheckpointRow(&p, cp, created[i])
		if err != nil {
			return err
		}
		written[cpKey{cp.ThreadID, cp.NS, cp.CheckpointID}] = locs
	}
	return nil
}

// putCheckpointRow stores cp's new blobs with p and queues its row's
// insert; it returns the row's channels.
func putCheckpointRow(p *placer, cp *driver.CheckpointRecord, created time.Time) (map[string]chanLoc, error) {
	metadata, err := jsoncol.Object(cp.Metadata)
	if err != nil {
		return nil, err
	}
	body := "null"
	if len(cp.Body) > 0 {
		body = string(cp.Body)
	}
	for _, b := range cp.NewBlobs {
		if err := p.put(b); err != nil {
			return nil, err
		}
	}
	locs := make(map[string]chanLoc, len(cp.ChannelVersions))
	for ch, v := range cp.ChannelVersions {
		l, ok := p.find(ch, v)
		if !ok {
			if l, ok, err = p.scan(ch, v); err != nil {
				return nil, err
			}
		}
		if !ok {
			l = chanLoc{version: v}
		}
		locs[ch] = l
	}
	channels, err := jsoncol.Value(locs)
	if err != nil {
		return nil, err
	}
	if err := execLater(p.ctx, p.tx, `INSERT INTO checkpoints (thread_id, `+checkpointColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
			parent_checkpoint_id = excluded.parent_checkpoint_id, run_id = excluded.run_id,
			created_at = excluded.created_at, metadata = excluded.metadata,
			channels = excluded.channels, body = excluded.body`,
		cp.ThreadID, cp.NS, cp.CheckpointID, cp.ParentCheckpointID, cp.RunID, created, metadata, channels, body); err != nil {
		return nil, fmt.Errorf("put checkpoint: %w", err)
	}
	return locs, nil
}

// execLater runs a statement whose result matters only at commit: with a
// pipeTx, it goes with the next statement or the commit (its error is
// then the commit's).
func execLater(ctx context.Context, tx pgx.Tx, query string, args ...any) error {
	if t, ok := tx.(*pipeTx); ok {
		t.deferExec(rebind(query), args...)
		return nil
	}
	_, err := exec(ctx, tx, query, args...)
	return err
}

// placer stores the blobs of one checkpoint.
type placer struct {
	ctx      context.Context
	tx       pgx.Tx
	threadID string
	ns       string
	known    []map[string]chanLoc  // channels of the parent and of the checkpoint replaced
	placed   map[[2]string]chanLoc // channel, version -> stored by this put
	ids      []int64               // blob ids taken for this put, one per new blob
}

// find returns where version v of channel ch is stored, looking only at
// this put and the checkpoints in p.known.
func (p *placer) find(ch, v string) (chanLoc, bool) {
	if l, ok := p.placed[[2]string{ch, v}]; ok {
		return l, true
	}
	for _, m := range p.known {
		if l, ok := m[ch]; ok && l.version == v && l.stored {
			return l, true
		}
	}
	return chanLoc{}, false
}

// scan looks for version v of channel ch in every checkpoint of the
// namespace (slow path: bases are normally in the parent checkpoint).
func (p *placer) scan(ch, v string) (chanLoc, bool, error) {
	raw, err := scalar[string](p.ctx, p.tx, `SELECT (channels -> ?::text)::text FROM checkpoints
		WHERE thread_id = ? AND checkpoint_ns = ? AND channels -> ?::text ->> 0 = ? AND jsonb_array_length(channels -> ?::text) = 2
		LIMIT 1`, ch, p.threadID, p.ns, ch, v, ch)
	if errors.Is(err, pgx.ErrNoRows) {
		return chanLoc{}, false, nil
	} else if err != nil {
		return chanLoc{}, false, fmt.Errorf("find channel %s version %s: %w", ch, v, err)
	}
	var l chanLoc
	if err := json.Unmarshal([]byte(raw), &l); err != nil {
		return chanLoc{}, false, fmt.Errorf("decode checkpoint channels: %w", err)
	}
	return l, l.stored, nil
}

// put stores one blob: a whole value, or a delta as the elements it appends
// to its base's blob.
func (p *placer) put(b driver.ChannelBlob) error {
	if _, ok := p.find(b.Channel, b.Version); ok {
		return nil
	}
	data := b.Data
	var base *int64
	if b.Base != "" {
		l, ok := p.find(b.Channel, b.Base)
		if !ok {
			var err error
			if l, ok, err = p.scan(b.Channel, b.Base); err != nil {
				return err
			}
		}
		if !ok {
			return graphserver.Errorf(graphserver.EINVALID, "The blob of channel %q version %q is based on version %q, which is not stored.", b.Channel, b.Version, b.Base)
		}
		data, _ = jsoncol.ArrayInner(b.Data)
		base = &l.blob
	}
	if len(p.ids) == 0 {
		return fmt.Errorf("put checkpoint blob: no blob id left") // one per new blob was taken
	}
	id := p.ids[0]
	p.ids = p.ids[1:]
	if err := execLater(p.ctx, p.tx, `INSERT INTO checkpoint_blobs (thread_id, blob_id, base_id, data)
		VALUES (?, ?, ?, ?)`, p.threadID, id, base, string(data)); err != nil {
		return fmt.Errorf("put checkpoint blob: %w", err)
	}
	p.placed[[2]string{b.Channel, b.Version}] = chanLoc{version: b.Version, blob: id, stored: true}
	return nil
}

// PutWrites implements driver.Checkpointer: the task's earlier writes
// at that checkpoint are replaced by writes (TaskID set to taskID).
// ENOTFOUND when the thread does not exist.
func (db *DB) PutWrites(ctx context.Context, threadID, ns, cpID, taskID string, writes []driver.PendingWrite) error {
	if err := validWrites(writes); err != nil {
		return err
	}
	return db.writeTx(ctx, func(tx pgx.Tx) error {
		return putWrites(ctx, tx, "", threadID, ns, cpID, taskID, writes)
	})
}

// PutRunCheckpoint implements driver.RunCheckpointer: PutCheckpoint,
// in a transaction that first checks that owner holds run runID (ENOTFOUND
// when not). The run's row stays locked until the checkpoint is committed,
// so a sweep cannot give the run to another worker meanwhile.
func (db *DB) PutRunCheckpoint(ctx context.Context, runID, owner string, cp *driver.CheckpointRecord) error {
	return db.PutRunCheckpoints(ctx, runID, owner, []*driver.CheckpointRecord{cp})
}

// PutRunCheckpoints implements driver.RunCheckpointer: each of cps as
// PutRunCheckpoint saves it, in one transaction of two round trips (the
// lease is checked once, with the first read).
//
// ctx's end stops it only before it starts (driver.RunCheckpointer): once
// the transaction begins, it runs on without ctx's cancellation.
func (db *DB) PutRunCheckpoints(ctx context.Context, runID, owner string, cps []*driver.CheckpointRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return db.putCheckpoints(context.WithoutCancel(ctx), cps, runID, owner)
}

// PutRunWrites implements driver.RunCheckpointer: PutWrites for run
// runID held by owner (ENOTFOUND when not), recording the writes as the
// run's; the writes of the task made by another run (or none) move to
// checkpoint_writes_replaced, from where deleting the run restores them.
func (db *DB) PutRunWrites(ctx context.Context, runID, owner, threadID, ns, cpID, taskID string, writes []driver.PendingWrite) error {
	if runID == "" {
		return graphserver.Errorf(graphserver.EINVALID, "A run id is required.")
	}
	if err := validWrites(writes); err != nil {
		return err
	}
	return db.writeTx(ctx, func(tx pgx.Tx) error {
		if err := holdsRun(ctx, tx, runID, owner); err != nil {
			return err
		}
		return putWrites(ctx, tx, runID, threadID, ns, cpID, taskID, writes)
	})
}

// holdsRun returns ENOTFOUND unless owner holds run runID's lease; it
// share-locks the run's row for the rest of tx.
func holdsRun(ctx context.Context, tx pgx.Tx, runID, owner string) error {
	_, err := scalar[int](ctx, tx, `SELECT 1 FROM runs WHERE run_id = ? AND lease_owner = ? AND status = 'running' FOR SHARE`, runID, owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return graphserver.Errorf(graphserver.ENOTFOUND, "Run %s is not held by this worker (its lease was lost).", runID)
	} else if err != nil {
		return fmt.Errorf("check lease of run %s: %w", runID, err)
	}
	return nil
}

func validWrites(writes []driver.PendingWrite) error {
	for _, w := range writes {
		if !json.Valid(w.Value) {
			return graphserver.Errorf(graphserver.EINVALID, "The pending write to channel %q is not valid JSON.", w.Channel)
		}
	}
	return nil
}

// putWrites replaces the writes of task taskID at a checkpoint, recording
// them as run runID's ("" = no run). A run keeps the rows it replaces that
// are not its own in checkpoint_writes_replaced.
func putWrites(ctx context.Context, tx pgx.Tx, runID, threadID, ns, cpID, taskID string, writes []driver.PendingWrite) error {
	if ok, err := scalar[bool](ctx, tx, `SELECT EXISTS (SELECT 1 FROM threads WHERE thread_id = ?)`, threadID); err != nil {
		return fmt.Errorf("put writes: %w", err)
	} else if !ok {
		return threadNotFound(threadID)
	}
	if runID != "" {
		if _, err := exec(ctx, tx, `INSERT INTO checkpoint_writes_replaced
			(thread_id, replaced_by, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, value, run_id)
			SELECT thread_id, ?, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, value, run_id
			FROM checkpoint_writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? AND task_id = ? AND run_id <> ?
			ON CONFLICT (thread_id, replaced_by, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE SET
				task_path = excluded.task_path, channel = excluded.channel, value = excluded.value, run_id = excluded.run_id`,
			runID, threadID, ns, cpID, taskID, runID); err != nil {
			return fmt.Errorf("put writes: keep replaced writes: %w", err)
		}
	}
	if _, err := exec(ctx, tx, `DELETE FROM checkpoint_writes
		WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? AND task_id = ?`,
		threadID, ns, cpID, taskID); err != nil {
		return fmt.Errorf("put writes: %w", err)
	}
	if len(writes) == 0 {
		return nil
	}
	seen := map[int]bool{}
	paths, idxs, chans, values := make([]string, len(writes)), make([]int, len(writes)), make([]string, len(writes)), make([]string, len(writes))
	for i, w := range writes {
		if seen[w.Idx] {
			return graphserver.Errorf(graphserver.EINVALID, "Two pending writes of task %s share index %d.", taskID, w.Idx)
		}
		seen[w.Idx] = true
		paths[i], idxs[i], chans[i], values[i] = w.TaskPath, w.Idx, w.Channel, string(w.Value)
	}
	if _, err := exec(ctx, tx, `INSERT INTO checkpoint_writes
		(thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, value, run_id)
		SELECT ?, ?, ?, ?, w.path, w.idx, w.channel, w.value, ?
		FROM unnest(?::text[], ?::int[], ?::text[], ?::text[]) AS w (path, idx, channel, value)`,
		threadID, ns, cpID, taskID, runID, paths, idxs, chans, values); err != nil {
		return fmt.Errorf("put writes: %w", err)
	}
	return nil
}

// GetCheckpoint implements driver.Checkpointer.
func (db *DB) GetCheckpoint(ctx context.Context, threadID, ns, cpID string) (*driver.CheckpointRecord, error) {
	// No transaction: under READ COMMITTED it would give the statements no
	// common snapshot, only two more round trips. A checkpoint's blobs
	// never change, and go only when no checkpoint needs them.
	out, err := getCheckpoint(ctx, db.pool, threadID, ns, cpID)
	return out, translate(err)
}

// getCheckpoint reads one checkpoint (the latest in ns when cpID is
// empty) with its values and pending writes.
func getCheckpoint(ctx context.Context, q querier, threadID, ns, cpID string) (*driver.CheckpointRecord, error) {
	var r checkpointRow
	var err error
	if cpID == "" {
		r, err = getRow[checkpointRow](ctx, q, checkpointSelect+`
			WHERE thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id DESC LIMIT 1`, threadID, ns)
	} else {
		r, err = getRow[checkpointRow](ctx, q, checkpointSelect+`
			WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?`, threadID, ns, cpID)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		if cpID == "" {
			return nil, graphserver.Errorf(graphserver.ENOTFOUND, "Thread %s has no checkpoint in namespace %q", threadID, ns)
		}
		return nil, graphserver.Errorf(graphserver.ENOTFOUND, "Checkpoint %s of thread %s not found", cpID, threadID)
	} else if err != nil {
		return nil, fmt.Errorf("get checkpoint: %w", err)
	}
	return loadCheckpoint(ctx, q, threadID, &r)
}

// loadCheckpoint decodes r and fills its values and pending writes.
func loadCheckpoint(ctx context.Context, q querier, threadID string, r *checkpointRow) (*driver.CheckpointRecord, error) {
	cp := &driver.CheckpointRecord{
		ThreadID: threadID, NS: r.NS, CheckpointID: r.CheckpointID, ParentCheckpointID: r.ParentCheckpointID,
		RunID: r.RunID, CreatedAt: utc(r.CreatedAt), Body: json.RawMessage(r.Body), ChannelVersions: map[string]string{},
	}
	var err error
	if cp.Metadata, err = jsoncol.DecodeObject(r.Metadata); err != nil {
		return nil, err
	}
	locs, err := decodeChannels(r.Channels)
	if err != nil {
		return nil, err
	}
	for ch, l := range locs {
		cp.ChannelVersions[ch] = l.version
	}
	if cp.Values, err = loadValues(ctx, q, threadID, locs); err != nil {
		return nil, fmt.Errorf("checkpoint %s of thread %s: %w", cp.CheckpointID, threadID, err)
	}
	cp.PendingWrites = []driver.PendingWrite{}
	if !r.HasWrites {
		return cp, nil
	}
	if cp.PendingWrites, err = loadWrites(ctx, q, threadID, r.NS, cp.CheckpointID); err != nil {
		return nil, err
	}
	return cp, nil
}

// loadChainsQuery reads, for each blob id of $2, the blob and its bases,
// deepest (the whole value) first.
const loadChainsQuery = `WITH RECURSIVE chain (start_id, base_id, data, depth) AS (
		SELECT b.blob_id, b.base_id, b.data, 0 FROM checkpoint_blobs AS b
		WHERE b.thread_id = $1 AND b.blob_id = ANY($2::bigint[])
		UNION ALL
		SELECT c.start_id, b.base_id, b.data, c.depth + 1 FROM chain AS c
		JOIN checkpoint_blobs AS b ON b.thread_id = $1 AND b.blob_id = c.base_id
	)
	SELECT start_id, base_id IS NULL, data FROM chain ORDER BY start_id, depth DESC`

// loadValues reconstructs the full value of every stored channel in locs
// with one query. A channel with no stored blob is left out.
func loadValues(ctx context.Context, q querier, threadID string, locs map[string]chanLoc) (map[string]json.RawMessage, error) {
	values := map[string]json.RawMessage{}
	var ids []int64
	for _, l := range locs {
		if l.stored {
			ids = append(ids, l.blob)
		}
	}
	if len(ids) == 0 {
		return values, nil
	}
	rows, err := q.Query(ctx, loadChainsQuery, threadID, ids)
	if err != nil {
		return nil, fmt.Errorf("load checkpoint values: %w", err)
	}
	defer rows.Close()
	type chain struct {
		head   []byte
		inners [][]byte // oldest first
		whole  bool
	}
	chains := map[int64]*chain{}
	for rows.Next() {
		var id int64
		var whole bool
		var data []byte
		if err := rows.Scan(&id, &whole, &data); err != nil {
			return nil, fmt.Errorf("load checkpoint values: %w", err)
		}
		c := chains[id]
		if c == nil {
			c = &chain{head: data, whole: whole}
			chains[id] = c
			continue
		}
		c.inners = append(c.inners, data)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load checkpoint values: %w", err)
	}
	for ch, l := range locs {
		if !l.stored {
			continue
		}
		c := chains[l.blob]
		if c == nil || !c.whole {
			return nil, fmt.Errorf("channel %s: blob %d or one of its bases is missing", ch, l.blob)
		}
		v, err := concatArrays(c.head, c.inners)
		if err != nil {
			return nil, fmt.Errorf("channel %s: %w", ch, err)
		}
		values[ch] = v
	}
	return values, nil
}

// concatArrays returns head, a whole value, followed by the elements in
// inners (each the inside of an array, oldest first). With no non-empty
// inner, head is returned as is; otherwise head must be an array (or null,
// counting as empty).
func concatArrays(head []byte, inners [][]byte) (json.RawMessage, error) {
	n := 0
	for _, in := range inners {
		n += len(in)
	}
	if n == 0 {
		return json.RawMessage(head), nil
	}
	inner, ok := jsoncol.ArrayInner(head)
	if !ok && !bytes.Equal(bytes.TrimSpace(head), []byte("null")) {
		return nil, fmt.Errorf("delta blob based on a non-array value")
	}
	buf := make([]byte, 0, len(inner)+n+len(inners)+2)
	buf = append(buf, '[')
	buf = append(buf, inner...)
	for _, in := range inners {
		if len(in) == 0 {
			continue
		}
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		buf = append(buf, in...)
	}
	buf = append(buf, ']')
	return json.RawMessage(buf), nil
}

// loadWrites reads the pending writes saved at a checkpoint, ordered by task
// path, task id and index.
func loadWrites(ctx context.Context, q querier, threadID, ns, cpID string) ([]driver.PendingWrite, error) {
	type writeRow struct {
		TaskID   string `db:"task_id"`
		TaskPath string `db:"task_path"`
		Idx      int    `db:"idx"`
		Channel  string `db:"channel"`
		Value    string `db:"value"`
	}
	rows, err := selectRows[writeRow](ctx, q, `SELECT task_id, task_path, idx, channel, value FROM checkpoint_writes
		WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? ORDER BY task_path, task_id, idx`, threadID, ns, cpID)
	if err != nil {
		return nil, fmt.Errorf("load pending writes: %w", err)
	}
	out := make([]driver.PendingWrite, 0, len(rows))
	for _, r := range rows {
		out = append(out, driver.PendingWrite{TaskID: r.TaskID, TaskPath: r.TaskPath, Idx: r.Idx, Channel: r.Channel, Value: json.RawMessage(r.Value)})
	}
	return out, nil
}

// ListCheckpoints implements driver.Checkpointer: checkpoints of
// opts.NS, newest first, older than opts.Before when set, whose metadata
// contains opts.Metadata, at most opts.Limit (0 = all). A missing thread
// gives an empty list.
func (db *DB) ListCheckpoints(ctx context.Context, threadID string, opts driver.CheckpointListOptions) ([]*driver.CheckpointRecord, error) {
	var w where
	w.add("thread_id = ?", threadID)
	w.add("checkpoint_ns = ?", opts.NS)
	if i := strings.IndexByte(opts.Before, 0); i >= 0 {
		// Text cannot hold NUL; ids hold none, so id < p+"\x00"+s
		// exactly when id <= p.
		w.add("checkpoint_id <= ?", opts.Before[:i])
	} else if opts.Before != "" {
		w.add("checkpoint_id < ?", opts.Before)
	}
	if err := w.contains("metadata", opts.Metadata); err != nil {
		return nil, err
	}
	lim, largs := limitOffset(opts.Limit, 0, false)
	rows, err := selectRows[checkpointRow](ctx, db.pool, checkpointSelect+w.String()+
		` ORDER BY checkpoint_id DESC`+lim, append(w.args, largs...)...)
	if err != nil {
		return nil, translate(fmt.Errorf("list checkpoints: %w", err))
	}
	out := make([]*driver.CheckpointRecord, 0, len(rows))
	for i := range rows {
		cp, err := loadCheckpoint(ctx, db.pool, threadID, &rows[i])
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, cp)
	}
	return out, nil
}

// deleteRunCheckpoints deletes the checkpoints that run runID wrote on a
// thread (every namespace), their pending writes and the run's writes on
// other checkpoints, puts back the writes those replaced, and collects the
// blobs no remaining checkpoint needs.
func deleteRunCheckpoints(ctx context.Context, tx pgx.Tx, threadID, runID string) error {
	if _, err := exec(ctx, tx, `DELETE FROM checkpoint_writes AS w USING checkpoints AS c
		WHERE w.thread_id = ? AND c.thread_id = w.thread_id AND c.run_id = ?
			AND c.checkpoint_ns = w.checkpoint_ns AND c.checkpoint_id = w.checkpoint_id`, threadID, runID); err != nil {
		return fmt.Errorf("delete run writes: %w", err)
	}
	if _, err := exec(ctx, tx, `DELETE FROM checkpoint_writes WHERE thread_id = ? AND run_id = ?`, threadID, runID); err != nil {
		return fmt.Errorf("delete run writes: %w", err)
	}
	n, err := exec(ctx, tx, `DELETE FROM checkpoints WHERE thread_id = ? AND run_id = ?`, threadID, runID)
	if err != nil {
		return fmt.Errorf("delete run checkpoints: %w", err)
	}
	// Put back what the run replaced, unless its task has writes again
	// (a later run's) or the checkpoint is gone.
	if _, err := exec(ctx, tx, `INSERT INTO checkpoint_writes
		(thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, value, run_id)
		SELECT r.thread_id, r.checkpoint_ns, r.checkpoint_id, r.task_id, r.task_path, r.idx, r.channel, r.value, r.run_id
		FROM checkpoint_writes_replaced AS r
		WHERE r.thread_id = $1 AND r.replaced_by = $2
			AND EXISTS (SELECT 1 FROM checkpoints AS c
				WHERE c.thread_id = $1 AND c.checkpoint_ns = r.checkpoint_ns AND c.checkpoint_id = r.checkpoint_id)
			AND NOT EXISTS (SELECT 1 FROM checkpoint_writes AS w WHERE w.thread_id = $1 AND w.checkpoint_ns = r.checkpoint_ns
				AND w.checkpoint_id = r.checkpoint_id AND w.task_id = r.task_id)
		ON CONFLICT DO NOTHING`, threadID, runID); err != nil {
		return fmt.Errorf("restore replaced writes: %w", err)
	}
	if _, err := exec(ctx, tx, `DELETE FROM checkpoint_writes_replaced WHERE thread_id = $1 AND (replaced_by = $2 OR run_id = $2)`,
		threadID, runID); err != nil {
		return fmt.Errorf("delete replaced writes: %w", err)
	}
	if n == 0 {
		return nil
	}
	return gcBlobs(ctx, tx, threadID)
}

// gcBlobs deletes a thread's blobs that no checkpoint needs, directly or as
// the base of a blob one needs.
func gcBlobs(ctx context.Context, tx pgx.Tx, threadID string) error {
	if _, err := exec(ctx, tx, `WITH RECURSIVE needed (id) AS (
		SELECT (j.value ->> 1)::bigint FROM checkpoints AS c, jsonb_each(c.channels) AS j
		WHERE c.thread_id = $1 AND jsonb_array_length(j.value) = 2
		UNION
		SELECT b.base_id FROM needed AS n
		JOIN checkpoint_blobs AS b ON b.thread_id = $1 AND b.blob_id = n.id
		WHERE b.base_id IS NOT NULL
	)
	DELETE FROM checkpoint_blobs WHERE thread_id = $1 AND blob_id NOT IN (SELECT id FROM needed)`, threadID); err != nil {
		return fmt.Errorf("collect checkpoint blobs: %w", err)
	}
	return nil
}

// copyCheckpoints copies every checkpoint, blob and pending write of
// thread sourceID to thread newID, which has none. Blob ids are unique per
// thread, so rows are copied as they are; a thread_id in checkpoint
// metadata is rewritten to the copy's.
func copyCheckpoints(ctx context.Context, tx pgx.Tx, sourceID, newID string) error {
	for _, q := range []string{
		`INSERT INTO checkpoints (thread_id, ` + checkpointColumns + `)
		SELECT $2, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, created_at,
			CASE WHEN jsonb_exists(metadata, 'thread_id') THEN jsonb_set(metadata, '{thread_id}', to_jsonb($2::text)) ELSE metadata END,
			channels, body
		FROM checkpoints WHERE thread_id = $1`,
		`INSERT INTO checkpoint_blobs (thread_id, blob_id, base_id, data)
		SELECT $2, blob_id, base_id, data FROM checkpoint_blobs WHERE thread_id = $1`,
		`INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, value)
		SELECT $2, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, value
		FROM checkpoint_writes WHERE thread_id = $1`,
	} {
		if _, err := tx.Exec(ctx, q, sourceID, newID); err != nil {
			return fmt.Errorf("copy thread checkpoints: %w", err)
		}
	}
	return nil
}

// keepLatest drops every checkpoint of a thread but its latest root one,
// which it stores again with whole blobs, no parent, and its pending
// writes.
func keepLatest(ctx context.Context, tx pgx.Tx, threadID string) error {
	cp, err := getCheckpoint(ctx, tx, threadID, "", "")
	if graphserver.ErrorCode(err) == graphserver.ENOTFOUND {
		cp = nil
	} else if err != nil {
		return err
	}
	if cp == nil {
		if _, err := exec(ctx, tx, `DELETE FROM checkpoint_writes WHERE thread_id = ?`, threadID); err != nil {
			return err
		}
	} else if _, err := exec(ctx, tx, `DELETE FROM checkpoint_writes WHERE thread_id = ? AND NOT (checkpoint_ns = '' AND checkpoint_id = ?)`,
		threadID, cp.CheckpointID); err != nil {
		return err
	}
	for _, q := range []string{
		`DELETE FROM checkpoint_writes_replaced WHERE thread_id = ?`,
		`DELETE FROM checkpoints WHERE thread_id = ?`,
		`DELETE FROM checkpoint_blobs WHERE thread_id = ?`,
	} {
		if _, err := exec(ctx, tx, q, threadID); err != nil {
			return err
		}
	}
	if cp == nil {
		return nil
	}
	cp.ParentCheckpointID = ""
	for _, ch := range slices.Sorted(maps.Keys(cp.Values)) {
		cp.NewBlobs = append(cp.NewBlobs, driver.ChannelBlob{Channel: ch, Version: cp.ChannelVersions[ch], Data: cp.Values[ch]})
	}
	return putCheckpoint(ctx, tx, cp, cp.CreatedAt, "", "")
}

// LatestCheckpointNotByRun implements driver.RunStorage.
func (db *DB) LatestCheckpointNotByRun(ctx context.Context, threadID, runID string) (string, error) {
	id, err := scalar[string](ctx, db.pool, `SELECT checkpoint_id FROM checkpoints
		WHERE thread_id = ? AND checkpoint_ns = '' AND run_id <> ? ORDER BY checkpoint_id DESC LIMIT 1`, threadID, runID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	} else if err != nil {
		return "", translate(fmt.Errorf("latest checkpoint of thread %s: %w", threadID, err))
	}
	return id, nil
}
