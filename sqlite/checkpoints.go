package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/internal/jsoncol"
	"github.com/graphserver/graphserver/record"
)

// checkpointRow is a checkpoints row joined with its shared metadata.
type checkpointRow struct {
	TID                int64          `db:"tid"`
	NS                 string         `db:"checkpoint_ns"`
	CheckpointID       checkpointID   `db:"checkpoint_id"`
	ParentCheckpointID checkpointID   `db:"parent_checkpoint_id"`
	RunID              checkpointID   `db:"run_id"`
	CreatedAt          sql.NullString `db:"created_at"`
	Metadata           string         `db:"metadata"`
	Shared             sql.NullString `db:"shared"`
	MetadataRunID      bool           `db:"metadata_run_id"`
	Channels           string         `db:"channels"`
	Body               string         `db:"body"`
	HasWrites          bool           `db:"has_writes"`
}

// checkpointID is an id column of the checkpoint tables (checkpoint ids and
// run_id, see migrations/0001_core.sql): a canonical lower-case UUID is
// stored as its 16 bytes, any other id as TEXT.
type checkpointID string

// Value implements sqldriver.Valuer.
func (id checkpointID) Value() (sqldriver.Value, error) {
	if u, ok := parseCanonicalUUID(string(id)); ok {
		return u[:], nil
	}
	return string(id), nil
}

// Scan implements sql.Scanner.
func (id *checkpointID) Scan(src any) error {
	switch v := src.(type) {
	case []byte:
		u, err := uuid.FromBytes(v)
		if err != nil {
			return fmt.Errorf("stored checkpoint id: %w", err)
		}
		*id = checkpointID(u.String())
	case string:
		*id = checkpointID(v)
	case nil:
		*id = ""
	default:
		return fmt.Errorf("stored checkpoint id has type %T", src)
	}
	return nil
}

// parseCanonicalUUID parses s when it is a UUID in canonical lower-case
// form, the only form that survives a round trip through 16 bytes.
func parseCanonicalUUID(s string) (uuid.UUID, bool) {
	if len(s) != 36 {
		return uuid.UUID{}, false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return uuid.UUID{}, false
			}
		case (c < '0' || c > '9') && (c < 'a' || c > 'f'):
			return uuid.UUID{}, false
		}
	}
	u, err := uuid.Parse(s)
	return u, err == nil
}

// idText returns the SQL text form of an id column stored as checkpointID.
func idText(col string) string {
	return `CASE WHEN typeof(` + col + `) = 'blob' THEN lower(substr(hex(` + col + `), 1, 8) || '-' ||
	substr(hex(` + col + `), 9, 4) || '-' || substr(hex(` + col + `), 13, 4) || '-' ||
	substr(hex(` + col + `), 17, 4) || '-' || substr(hex(` + col + `), 21)) ELSE ` + col + ` END`
}

// addBefore adds the condition "the checkpoint id is less than before",
// comparing ids as strings. Canonical UUID ids compare like their bytes and
// every TEXT sorts before a BLOB, so a bound that is a UUID, or starts with
// one, becomes a range on the key; any other bound compares the ids' text.
func addBefore(w *where, before string) {
	u, ok := parseCanonicalUUID(before)
	op := "<"
	if !ok && len(before) > 36 {
		// id < before (36 chars then more) <=> id <= its first 36 chars
		u, ok = parseCanonicalUUID(before[:36])
		op = "<="
	}
	if !ok {
		w.add(idText("c.checkpoint_id")+" < ?", before)
		return
	}
	w.add("c.checkpoint_id "+op+" ? AND (typeof(c.checkpoint_id) = 'blob' OR c.checkpoint_id < ?)", u[:], before)
}

// idTime returns the millisecond time in a UUIDv7 checkpoint id.
func idTime(id string) (time.Time, bool) {
	u, ok := parseCanonicalUUID(id)
	if !ok || u.Version() != 7 {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(binary.BigEndian.Uint64(u[:8]) >> 16)).UTC(), true
}

// createdAtColumn is the created_at of a checkpoint: NULL when the id (a
// UUIDv7) holds the same time.
func createdAtColumn(id string, created time.Time) sql.NullString {
	if t, ok := idTime(id); ok && t.Equal(created) {
		return sql.NullString{}
	}
	return sql.NullString{String: formatTime(created), Valid: true}
}

// checkpointSelect selects checkpointRow columns; add a WHERE on c.
// has_writes tells whether the checkpoint has pending writes, so that
// loadCheckpoint reads them only then (most checkpoints, the latest one a
// run starts from among them, have none).
const checkpointSelect = `SELECT c.tid, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id, c.run_id, c.created_at,
	c.metadata, m.json AS shared, c.metadata_run_id, c.channels, c.body,
	EXISTS (SELECT 1 FROM checkpoint_writes AS w
		WHERE w.tid = c.tid AND w.checkpoint_ns = c.checkpoint_ns AND w.checkpoint_id = c.checkpoint_id) AS has_writes
	FROM checkpoints AS c LEFT JOIN checkpoint_metadata AS m ON m.tid = c.tid AND m.mid = c.shared_metadata`

// isForeignKey reports whether err is a FOREIGN KEY violation.
func isForeignKey(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

// threadKey returns the tid of a thread's checkpoint rows; ok is false when
// the thread has none.
func threadKey(ctx context.Context, q sqlx.QueryerContext, threadID string) (tid int64, ok bool, err error) {
	err = sqlx.GetContext(ctx, q, &tid, `SELECT tid FROM checkpoint_threads WHERE thread_id = ?`, threadID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	} else if err != nil {
		return 0, false, fmt.Errorf("get checkpoint thread key: %w", err)
	}
	return tid, true, nil
}

// ensureThreadKey returns the tid of a thread, assigning one if needed.
// ENOTFOUND when the thread does not exist.
func ensureThreadKey(ctx context.Context, tx *connTx, threadID string) (int64, error) {
	tid, ok, err := threadKey(ctx, tx, threadID)
	if ok || err != nil {
		return tid, err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO checkpoint_threads (thread_id) VALUES (?)`, threadID)
	if isForeignKey(err) {
		return 0, threadNotFound(threadID)
	} else if err != nil {
		return 0, fmt.Errorf("add checkpoint thread key: %w", err)
	}
	return res.LastInsertId()
}

// chanLoc is one entry of the channels column: a channel's version and the
// checkpoint_blobs row (chain, seq) holding its value, if stored. It is
// encoded as [version, chain, seq], or [version] when not stored, by
// encodeChannels.
type chanLoc struct {
	version    string
	chain, seq int64
	stored     bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (l *chanLoc) UnmarshalJSON(b []byte) error {
	var a []any
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	*l = chanLoc{}
	if len(a) > 0 {
		l.version, _ = a[0].(string)
	}
	if len(a) == 3 {
		c, ok1 := a[1].(float64)
		s, ok2 := a[2].(float64)
		if !ok1 || !ok2 {
			return fmt.Errorf("stored channel location %s is invalid", b)
		}
		l.chain, l.seq, l.stored = int64(c), int64(s), true
	}
	return nil
}

// inlineMetadataKeys are the metadata keys that vary from one checkpoint to
// the next; they are stored in the checkpoint row, the rest once per thread
// in checkpoint_metadata.
var inlineMetadataKeys = map[string]bool{"source": true, "step": true, "parents": true, "writes": true}

// splitMD is checkpoint metadata as stored (splitMetadata): its inline
// part, its shared part ("" when empty) and whether run_id was left out of
// the shared part because it equals the checkpoint's run id.
type splitMD struct {
	inline, shared string
	runFlag        bool
}

// splitMetadata splits checkpoint metadata into its inline and shared
// parts, each encoded as jsoncol.Object encodes the map of its keys, from
// md's sorted keys into pooled buffers: a run's last checkpoints are saved
// on SQLite's single writer (Tx.PutCheckpoints).
func splitMetadata(md graphserver.Object, runID string) (splitMD, error) {
	var buf [16]string
	keys := buf[:0]
	for k := range md {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, strings.Compare)
	var out splitMD
	if v, ok := md["run_id"]; ok && runID != "" && v == any(runID) {
		out.runFlag = true
	}
	part := func(inline bool) (string, error) {
		return record.EncodeString(func(b []byte) ([]byte, error) {
			var err error
			for _, k := range keys {
				if inlineMetadataKeys[k] != inline || (!inline && k == "run_id" && out.runFlag) {
					continue
				}
				if b, err = record.AppendJSON(record.AppendJSONKey(b, k), md[k]); err != nil {
					return b, graphserver.Errorf(graphserver.EINVALID, "The object cannot be encoded as JSON: %v.", err)
				}
			}
			if len(b) == 0 {
				return b, nil
			}
			return append(b, '}'), nil
		})
	}
	var err error
	if out.inline, err = part(true); err != nil {
		return splitMD{}, err
	}
	if out.inline == "" {
		out.inline = "{}"
	}
	if out.shared, err = part(false); err != nil {
		return splitMD{}, err
	}
	return out, nil
}

// metadataExpr is the SQL expression of a checkpoint's whole metadata (c
// joined with checkpoint_metadata m, as in checkpointSelect): the JSON
// objects of the parts spliced together (their keys are distinct).
var metadataExpr = `('{' || substr(
	CASE WHEN length(c.metadata) > 2 THEN ',' || substr(c.metadata, 2, length(c.metadata) - 2) ELSE '' END ||
	CASE WHEN length(m.json) > 2 THEN ',' || substr(m.json, 2, length(m.json) - 2) ELSE '' END ||
	CASE WHEN c.metadata_run_id THEN ',"run_id":' || json_quote(` + idText("c.run_id") + `) ELSE '' END, 2) || '}')`

// addSharedMetadata adds a thread's shared metadata json, numbered after
// the greatest mid, and returns its mid.
func addSharedMetadata(ctx context.Context, tx *connTx, tid int64, js string) (int64, error) {
	var mid int64
	if err := tx.GetContext(ctx, &mid, `INSERT INTO checkpoint_metadata (tid, mid, json)
		SELECT ?1, coalesce(max(mid), 0) + 1, ?2 FROM checkpoint_metadata WHERE tid = ?1 RETURNING mid`, tid, js); err != nil {
		return 0, fmt.Errorf("add shared checkpoint metadata: %w", err)
	}
	return mid, nil
}

// PutCheckpoint implements driver.Checkpointer. The checkpoint row is
// inserted, or replaced when one with the same thread, namespace and id
// exists; each of cp.NewBlobs is stored unless the parent checkpoint (or the
// one replaced) has the same channel and version already (then it is a
// no-op). A delta blob extends its base's append chain when the base is the
// chain's tip and starts a chain linked to the base otherwise (a fork).
// ENOTFOUND when the thread does not exist; EINVALID for missing ids,
// invalid JSON, a delta blob that is not an array or whose base version is
// not stored.
func (db *DB) PutCheckpoint(ctx context.Context, cp *driver.CheckpointRecord) error {
	return db.putCheckpoints(ctx, []*driver.CheckpointRecord{cp}, nil)
}

// PutCheckpoints implements driver.CheckpointBatcher: each of cps as
// PutCheckpoint saves it, in one grouped write.
func (db *DB) PutCheckpoints(ctx context.Context, cps []*driver.CheckpointRecord) error {
	return db.putCheckpoints(ctx, cps, nil)
}

// putCheckpoints saves cps in order in one grouped write, each checking
// lease when not nil.
func (db *DB) putCheckpoints(ctx context.Context, cps []*driver.CheckpointRecord, lease *runLease) error {
	created, err := driver.CheckpointTimes(cps, db.now)
	if err != nil {
		return err
	}
	// Split and encoded here, on the caller's goroutine, rather than on
	// the writer's (writeGrouped runs one function at a time).
	mds := make([]splitMD, len(cps))
	for i, cp := range cps {
		if mds[i], err = splitMetadata(cp.Metadata, cp.RunID); err != nil {
			return err
		}
	}
	return db.writeGrouped(ctx, func(ctx context.Context, tx *connTx) error {
		var prev *putChain
		for i, cp := range cps {
			var err error
			if prev, err = putCheckpoint(ctx, tx, cp, created[i], mds[i], lease, prev, db.latest); err != nil {
				return err
			}
		}
		return nil
	})
}

// runLease names the run whose lease a checkpoint write needs (holdsRun).
type runLease struct{ runID, owner string }

// checkpointKnownQuery reads what putCheckpoint needs to know: the thread
// key, the channels of the parent and of the checkpoint replaced, the mid of
// the shared metadata, and (?6, ?7: a run id and its lease owner) whether
// that lease is held, so that a run's checkpoint write checks its lease
// without a statement of its own.
const checkpointKnownQuery = `SELECT t.tid,
		(SELECT channels FROM checkpoints WHERE tid = t.tid AND checkpoint_ns = ?1 AND checkpoint_id = ?2) AS parent,
		(SELECT channels FROM checkpoints WHERE tid = t.tid AND checkpoint_ns = ?1 AND checkpoint_id = ?3) AS self,
		(SELECT mid FROM checkpoint_metadata WHERE tid = t.tid AND json = ?4) AS mid,
		?6 IS NULL OR EXISTS (SELECT 1 FROM runs WHERE run_id = ?6 AND lease_owner = ?7 AND status = 'running') AS held
	FROM checkpoint_threads AS t WHERE t.thread_id = ?5`

// putChain is what putCheckpoint knows of the checkpoint it wrote, for the
// next one of the same transaction when that is its child.
type putChain struct {
	tid    int64
	ns, id string
	locs   map[string]chanLoc
	shared string // shared metadata, and its mid
	mid    int64
}

// putCheckpoint writes cp (validated, its metadata split as md) in tx: one query for what it needs to
// know (thread key, channels of the parent and of the checkpoint replaced,
// shared metadata, the lease of run when not nil: ENOTFOUND when it is not
// held), one statement per new blob, one for the row. With prev (what the
// transaction's previous put returned) naming cp's parent and cp's shared
// metadata, the query is skipped: the parent's channels are prev's, the
// lease was checked in this transaction, and a checkpoint replaced (an id
// taken already, which a run's new checkpoints never have) has the blobs
// cp needs found by placer.scan instead.
func putCheckpoint(ctx context.Context, tx *connTx, cp *driver.CheckpointRecord, created time.Time, md splitMD, run *runLease, prev *putChain, cache *latestCache) (*putChain, error) {
	if prev != nil && prev.ns == cp.NS && prev.id == cp.ParentCheckpointID && prev.id != cp.CheckpointID && prev.shared == md.shared {
		p := placer{ctx: ctx, tx: tx, tid: prev.tid, ns: cp.NS, placed: map[[2]string]chanLoc{}, known: []map[string]chanLoc{prev.locs}, cache: cache.forPut(cp.NS)}
		return writeCheckpoint(ctx, tx, &p, cp, created, md, prev.mid)
	}
	var known struct {
		TID    int64          `db:"tid"`
		Parent sql.NullString `db:"parent"`
		Self   sql.NullString `db:"self"`
		MID    sql.NullInt64  `db:"mid"`
		Held   bool           `db:"held"`
	}
	var runID, owner sql.NullString
	if run != nil {
		runID, owner = sql.NullString{String: run.runID, Valid: true}, sql.NullString{String: run.owner, Valid: true}
	}
	err := tx.GetContext(ctx, &known, checkpointKnownQuery,
		cp.NS, checkpointID(cp.ParentCheckpointID), checkpointID(cp.CheckpointID), md.shared, cp.ThreadID, runID, owner)
	if errors.Is(err, sql.ErrNoRows) {
		// The thread's first checkpoint: the lease is checked alone.
		if run != nil {
			if err := holdsRun(ctx, tx, run.runID, run.owner); err != nil {
				return nil, err
			}
		}
		if known.TID, err = ensureThreadKey(ctx, tx, cp.ThreadID); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("put checkpoint: %w", err)
	} else if !known.Held {
		return nil, leaseLost(run.runID)
	}
	tid := known.TID
	mid := known.MID.Int64
	if md.shared != "" && !known.MID.Valid {
		if mid, err = addSharedMetadata(ctx, tx, tid, md.shared); err != nil {
			return nil, err
		}
	}
	p := placer{ctx: ctx, tx: tx, tid: tid, ns: cp.NS, placed: map[[2]string]chanLoc{}, cache: cache.forPut(cp.NS), replaced: known.Self.Valid}
	for _, chans := range []sql.NullString{known.Parent, known.Self} {
		if !chans.Valid {
			continue
		}
		locs, err := decodeChannels(chans.String)
		if err != nil {
			return nil, err
		}
		p.known = append(p.known, locs)
	}
	return writeCheckpoint(ctx, tx, &p, cp, created, md, mid)
}

// writeCheckpoint stores cp's new blobs through p and cp's row, and returns
// what the next put of the transaction may reuse.
func writeCheckpoint(ctx context.Context, tx *connTx, p *placer, cp *driver.CheckpointRecord, created time.Time,
	md splitMD, mid int64) (*putChain, error) {
	for _, b := range cp.NewBlobs {
		if err := p.put(b); err != nil {
			return nil, err
		}
	}
	locs := make(map[string]chanLoc, len(cp.ChannelVersions))
	for ch, v := range cp.ChannelVersions {
		l, ok := p.find(ch, v)
		if !ok {
			var err error
			if l, ok, err = p.scan(ch, v); err != nil {
				return nil, err
			}
		}
		if !ok {
			l = chanLoc{version: v}
		}
		locs[ch] = l
	}
	channels := encodeChannels(locs)
	body := "null"
	if len(cp.Body) > 0 {
		body = string(cp.Body)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO checkpoints (tid, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id,
			created_at, metadata, shared_metadata, metadata_run_id, channels, body)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tid, checkpoint_ns, checkpoint_id) DO UPDATE SET
			parent_checkpoint_id = excluded.parent_checkpoint_id, run_id = excluded.run_id,
			created_at = excluded.created_at, metadata = excluded.metadata, shared_metadata = excluded.shared_metadata,
			metadata_run_id = excluded.metadata_run_id, channels = excluded.channels, body = excluded.body`,
		p.tid, cp.NS, checkpointID(cp.CheckpointID), checkpointID(cp.ParentCheckpointID), checkpointID(cp.RunID),
		createdAtColumn(cp.CheckpointID, created), md.inline, mid, md.runFlag, channels, body)
	if err != nil {
		return nil, fmt.Errorf("put checkpoint: %w", err)
	}
	if p.cache != nil {
		// The row as loadCheckpoint reads it back.
		row := checkpointRow{TID: p.tid, NS: cp.NS, CheckpointID: checkpointID(cp.CheckpointID),
			ParentCheckpointID: checkpointID(cp.ParentCheckpointID), RunID: checkpointID(cp.RunID),
			CreatedAt: createdAtColumn(cp.CheckpointID, created), Metadata: md.inline,
			Shared: sql.NullString{String: md.shared, Valid: md.shared != ""}, MetadataRunID: md.runFlag,
			Channels: channels, Body: body}
		p.cache.afterPut(p, cp, row, locs)
	}
	return &putChain{tid: p.tid, ns: cp.NS, id: cp.CheckpointID, locs: locs, shared: md.shared, mid: mid}, nil
}

// placer stores the blobs of one checkpoint in their chains.
type placer struct {
	ctx    context.Context
	tx     *connTx
	tid    int64
	ns     string
	known  []map[string]chanLoc  // channels of the parent and of the checkpoint replaced
	placed map[[2]string]chanLoc // channel, version -> stored by this put

	// cache, when not nil (a root checkpoint, the cache on: forPut),
	// stages the thread's latest-checkpoint entry after the write
	// (latestCache.afterPut), from what put wrote; replaced tells that the
	// write replaced a checkpoint.
	cache    *latestCache
	replaced bool
	written  map[[2]string]writtenBlob
}

// writtenBlob is a blob put stored: where, its data as stored, and whether
// it extends its base's chain (appended) or starts a chain linked to its
// base (linked).
type writtenBlob struct {
	loc              chanLoc
	data             []byte
	appended, linked bool
}

// wrote records a blob put stored, for the cache.
func (p *placer) wrote(ch, v string, b writtenBlob) {
	if p.cache == nil {
		return
	}
	if p.written == nil {
		p.written = map[[2]string]writtenBlob{}
	}
	b.data = bytes.Clone(b.data) // the caller's record keeps its own
	p.written[[2]string{ch, v}] = b
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
	var raw string
	err := p.tx.GetContext(p.ctx, &raw, `SELECT j.value FROM checkpoints AS c, json_each(c.channels) AS j
		WHERE c.tid = ? AND c.checkpoint_ns = ? AND j.key = ? AND json_array_length(j.value) = 3
			AND json_extract(j.value, '$[0]') = ? LIMIT 1`, p.tid, p.ns, ch, v)
	if errors.Is(err, sql.ErrNoRows) {
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

// put stores one blob: a whole value as row 0 of a new chain; a delta as the
// next row of its base's chain when the base is the tip, else as row 0 of a
// new chain linked to the base. A delta row holds the inside of its array.
func (p *placer) put(b driver.ChannelBlob) error {
	if _, ok := p.find(b.Channel, b.Version); ok {
		return nil
	}
	l := chanLoc{version: b.Version, stored: true}
	data := b.Data
	var link sql.NullInt64
	var linkSeq sql.NullInt64
	if b.Base != "" {
		base, ok := p.find(b.Channel, b.Base)
		if !ok {
			var err error
			if base, ok, err = p.scan(b.Channel, b.Base); err != nil {
				return err
			}
		}
		if !ok {
			return graphserver.Errorf(graphserver.EINVALID, "The blob of channel %q version %q is based on version %q, which is not stored.", b.Channel, b.Version, b.Base)
		}
		data, _ = jsoncol.ArrayInner(b.Data)
		res, err := p.tx.ExecContext(p.ctx, `INSERT INTO checkpoint_blobs (tid, checkpoint_ns, channel, chain, seq, data)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, p.tid, p.ns, b.Channel, base.chain, base.seq+1, string(data))
		if err != nil {
			return fmt.Errorf("put checkpoint blob: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("put checkpoint blob: %w", err)
		} else if n == 1 { // the base was the tip of its chain
			l.chain, l.seq = base.chain, base.seq+1
			p.placed[[2]string{b.Channel, b.Version}] = l
			p.wrote(b.Channel, b.Version, writtenBlob{loc: l, data: data, appended: true})
			return nil
		}
		link = sql.NullInt64{Int64: base.chain, Valid: true}
		linkSeq = sql.NullInt64{Int64: base.seq, Valid: true}
	}
	if err := p.newChain(b.Channel, link, linkSeq, string(data), &l.chain); err != nil {
		return err
	}
	p.placed[[2]string{b.Channel, b.Version}] = l
	p.wrote(b.Channel, b.Version, writtenBlob{loc: l, data: data, linked: link.Valid})
	return nil
}

// newChain stores data as row 0 of a new chain of channel ch (linked to
// link, linkSeq when valid) and sets *chain to its number. A chain's
// number only has to be free in its channel: the number after the highest
// this put knows of the channel (in the parent, the checkpoint replaced,
// or written by this put; 0 when none) is free in a thread's linear
// history, where each new chain is the channel's newest, and is tried
// first in a plain insert; when it is taken (a fork's chains, chains of
// checkpoints this put does not see), the number after the channel's
// highest is read and written in one statement.
func (p *placer) newChain(ch string, link, linkSeq sql.NullInt64, data string, chain *int64) error {
	next := p.nextChain(ch)
	res, err := p.tx.ExecContext(p.ctx, `INSERT INTO checkpoint_blobs (tid, checkpoint_ns, channel, chain, seq, link_chain, link_seq, data)
		VALUES (?, ?, ?, ?, 0, ?, ?, ?) ON CONFLICT DO NOTHING`, p.tid, p.ns, ch, next, link, linkSeq, data)
	if err != nil {
		return fmt.Errorf("put checkpoint blob: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("put checkpoint blob: %w", err)
	} else if n == 1 {
		*chain = next
		return nil
	}
	if err := p.tx.GetContext(p.ctx, chain, `INSERT INTO checkpoint_blobs (tid, checkpoint_ns, channel, chain, seq, link_chain, link_seq, data)
		VALUES (?1, ?2, ?3, coalesce((SELECT chain FROM checkpoint_blobs WHERE tid = ?1 AND checkpoint_ns = ?2 AND channel = ?3
			ORDER BY chain DESC LIMIT 1) + 1, 0), 0, ?4, ?5, ?6) RETURNING chain`,
		p.tid, p.ns, ch, link, linkSeq, data); err != nil {
		return fmt.Errorf("put checkpoint blob: %w", err)
	}
	return nil
}

// nextChain returns the number after the highest chain of channel ch
// that p knows of (placed, or in p.known): 0 when it knows none.
func (p *placer) nextChain(ch string) int64 {
	var next int64
	for k, l := range p.placed {
		if k[0] == ch {
			next = max(next, l.chain+1)
		}
	}
	for _, m := range p.known {
		if l, ok := m[ch]; ok && l.stored {
			next = max(next, l.chain+1)
		}
	}
	return next
}

// PutWrites implements driver.Checkpointer: the task's earlier writes
// at that checkpoint are replaced by writes (TaskID set to taskID). ENOTFOUND
// when the thread does not exist.
func (db *DB) PutWrites(ctx context.Context, threadID, ns, cpID, taskID string, writes []driver.PendingWrite) error {
	if err := validWrites(writes); err != nil {
		return err
	}
	return db.writeGrouped(ctx, func(ctx context.Context, tx *connTx) error {
		return putWrites(ctx, tx, "", threadID, ns, cpID, taskID, writes)
	})
}

// PutRunCheckpoint implements driver.RunCheckpointer: PutCheckpoint,
// in a transaction that first checks that owner holds run runID (ENOTFOUND
// when not).
func (db *DB) PutRunCheckpoint(ctx context.Context, runID, owner string, cp *driver.CheckpointRecord) error {
	return db.PutRunCheckpoints(ctx, runID, owner, []*driver.CheckpointRecord{cp})
}

// PutRunCheckpoints implements driver.RunCheckpointer: each of cps as
// PutRunCheckpoint saves it, in one grouped write (writeGrouped: ctx's
// end stops it only while it waits for its group, as the driver contract
// asks).
func (db *DB) PutRunCheckpoints(ctx context.Context, runID, owner string, cps []*driver.CheckpointRecord) error {
	return db.putCheckpoints(ctx, cps, &runLease{runID: runID, owner: owner})
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
	return db.writeGrouped(ctx, func(ctx context.Context, tx *connTx) error {
		if err := holdsRun(ctx, tx, runID, owner); err != nil {
			return err
		}
		return putWrites(ctx, tx, runID, threadID, ns, cpID, taskID, writes)
	})
}

// holdsRun returns ENOTFOUND unless owner holds run runID's lease.
func holdsRun(ctx context.Context, tx *connTx, runID, owner string) error {
	var n int
	err := tx.GetContext(ctx, &n, `SELECT 1 FROM runs WHERE run_id = ? AND lease_owner = ? AND status = 'running'`, runID, owner)
	if errors.Is(err, sql.ErrNoRows) {
		return leaseLost(runID)
	} else if err != nil {
		return fmt.Errorf("check lease of run %s: %w", runID, err)
	}
	return nil
}

// leaseLost is the ENOTFOUND of a write by a run whose lease is not held.
func leaseLost(runID string) error {
	return graphserver.Errorf(graphserver.ENOTFOUND, "Run %s is not held by this worker (its lease was lost).", runID)
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
func putWrites(ctx context.Context, tx *connTx, runID, threadID, ns, cpID, taskID string, writes []driver.PendingWrite) error {
	tid, err := ensureThreadKey(ctx, tx, threadID)
	if err != nil {
		return err
	}
	run, cp := checkpointID(runID), checkpointID(cpID)
	if runID != "" {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO checkpoint_writes_replaced
			(tid, replaced_by, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, value, run_id)
			SELECT tid, ?, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, value, run_id
			FROM checkpoint_writes WHERE tid = ? AND checkpoint_ns = ? AND checkpoint_id = ? AND task_id = ? AND run_id <> ?`,
			run, tid, ns, cp, taskID, run); err != nil {
			return fmt.Errorf("put writes: keep replaced writes: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM checkpoint_writes
		WHERE tid = ? AND checkpoint_ns = ? AND checkpoint_id = ? AND task_id = ?`,
		tid, ns, cp, taskID); err != nil {
		return fmt.Errorf("put writes: %w", err)
	}
	for _, w := range writes {
		_, err := tx.ExecContext(ctx, `INSERT INTO checkpoint_writes
			(tid, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, value, run_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			tid, ns, cp, taskID, w.TaskPath, w.Idx, w.Channel, string(w.Value), run)
		if isConstraint(err) {
			return graphserver.Errorf(graphserver.EINVALID, "Two pending writes of task %s share index %d.", taskID, w.Idx)
		} else if err != nil {
			return fmt.Errorf("put writes: %w", err)
		}
	}
	return nil
}

// GetCheckpoint implements driver.Checkpointer.
func (db *DB) GetCheckpoint(ctx context.Context, threadID, ns, cpID string) (*driver.CheckpointRecord, error) {
	var out *driver.CheckpointRecord
	err := db.read(ctx, func(tx *connTx) error {
		var err error
		out, err = getCheckpoint(ctx, tx, threadID, ns, cpID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// getCheckpoint reads one checkpoint (the latest in ns when cpID is
// empty) with its values and pending writes.
func getCheckpoint(ctx context.Context, q sqlx.QueryerContext, threadID, ns, cpID string) (*driver.CheckpointRecord, error) {
	cp, _, err := getCheckpointParts(ctx, q, threadID, ns, cpID, nil)
	return cp, err
}

// getCheckpointParts is getCheckpoint, also returning the row read and,
// when parts is not nil, collecting the parts of its values in it.
func getCheckpointParts(ctx context.Context, q sqlx.QueryerContext, threadID, ns, cpID string, parts *valueParts) (*driver.CheckpointRecord, *checkpointRow, error) {
	notFound := func() error {
		if cpID == "" {
			return graphserver.Errorf(graphserver.ENOTFOUND, "Thread %s has no checkpoint in namespace %q", threadID, ns)
		}
		return graphserver.Errorf(graphserver.ENOTFOUND, "Checkpoint %s of thread %s not found", cpID, threadID)
	}
	var r checkpointRow
	var err error
	const thread = `c.tid = (SELECT tid FROM checkpoint_threads WHERE thread_id = ?)`
	if cpID == "" {
		err = sqlx.GetContext(ctx, q, &r, checkpointSelect+`
			WHERE `+thread+` AND c.checkpoint_ns = ? ORDER BY c.checkpoint_id DESC LIMIT 1`, threadID, ns)
	} else {
		err = sqlx.GetContext(ctx, q, &r, checkpointSelect+`
			WHERE `+thread+` AND c.checkpoint_ns = ? AND c.checkpoint_id = ?`, threadID, ns, checkpointID(cpID))
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, notFound()
	} else if err != nil {
		return nil, nil, fmt.Errorf("get checkpoint: %w", err)
	}
	cp, err := loadCheckpoint(ctx, q, threadID, &r, parts)
	return cp, &r, err
}

// loadCheckpoint decodes r and fills its values and pending writes.
func loadCheckpoint(ctx context.Context, q sqlx.QueryerContext, threadID string, r *checkpointRow, parts *valueParts) (*driver.CheckpointRecord, error) {
	cp, locs, err := decodeCheckpointRow(threadID, r)
	if err != nil {
		return nil, err
	}
	if cp.Values, err = loadValues(ctx, q, r.TID, r.NS, locs, r.Channels, parts); err != nil {
		return nil, fmt.Errorf("checkpoint %s of thread %s: %w", cp.CheckpointID, threadID, err)
	}
	cp.PendingWrites = []driver.PendingWrite{}
	if !r.HasWrites {
		return cp, nil
	}
	if cp.PendingWrites, err = loadWrites(ctx, q, r.TID, r.NS, cp.CheckpointID); err != nil {
		return nil, err
	}
	return cp, nil
}

// decodeCheckpointRow decodes r, but for its values and pending writes,
// and returns its channels' locations.
func decodeCheckpointRow(threadID string, r *checkpointRow) (*driver.CheckpointRecord, map[string]chanLoc, error) {
	cp := &driver.CheckpointRecord{
		ThreadID: threadID, NS: r.NS, CheckpointID: string(r.CheckpointID), ParentCheckpointID: string(r.ParentCheckpointID),
		RunID: string(r.RunID), Body: json.RawMessage(r.Body), ChannelVersions: map[string]string{},
	}
	var err error
	if r.CreatedAt.Valid {
		if cp.CreatedAt, err = parseTime(r.CreatedAt.String); err != nil {
			return nil, nil, err
		}
	} else if t, ok := idTime(cp.CheckpointID); ok {
		cp.CreatedAt = t
	} else {
		return nil, nil, fmt.Errorf("checkpoint %s has no creation time", cp.CheckpointID)
	}
	if cp.Metadata, err = jsoncol.DecodeObject(r.Metadata); err != nil {
		return nil, nil, err
	}
	if r.Shared.Valid {
		// The parts' keys are distinct: the shared ones are added.
		shared, err := jsoncol.DecodeObject(r.Shared.String)
		if err != nil {
			return nil, nil, fmt.Errorf("decode shared checkpoint metadata: %w", err)
		}
		if len(cp.Metadata) == 0 {
			cp.Metadata = shared
		} else {
			maps.Copy(cp.Metadata, shared)
		}
	}
	if r.MetadataRunID {
		cp.Metadata["run_id"] = cp.RunID
	}
	locs, err := decodeChannels(r.Channels)
	if err != nil {
		return nil, nil, err
	}
	for ch, l := range locs {
		cp.ChannelVersions[ch] = l.version
	}
	return cp, locs, nil
}

// loadHeadsQuery reads, for each channel of a JSON object channel ->
// [version, chain, seq], row 0 of the chain: its link and data.
// CROSS JOIN keeps json_each the outer loop, so each row is one primary
// key lookup (the planner would otherwise scan the thread's blobs).
const loadHeadsQuery = `SELECT j.key, b.link_chain, b.link_seq, b.data
	FROM json_each(?) AS j
	CROSS JOIN checkpoint_blobs AS b ON b.tid = ? AND b.checkpoint_ns = ? AND b.channel = j.key
		AND b.chain = json_extract(j.value, '$[1]') AND b.seq = 0
	WHERE json_array_length(j.value) = 3`

// loadTailQuery reads rows 1..seq of a chain as one result row: their seqs
// and their non-empty data, each joined with commas in the order the
// aggregate saw them. That order is the subquery's (a range scan of the
// primary key, no sort); SQLite does not promise it, so the seqs let
// chainTail check it, and loadTailSortedQuery is the fallback.
const loadTailQuery = `SELECT coalesce(group_concat(seq, ','), ''), coalesce(group_concat(d, ','), '')
	FROM (SELECT seq, nullif(data, '') AS d FROM checkpoint_blobs
		WHERE tid = ? AND checkpoint_ns = ? AND channel = ? AND chain = ? AND seq BETWEEN 1 AND ? ORDER BY seq)`

// loadTailSortedQuery is loadTailQuery with the order guaranteed (and a
// sort).
const loadTailSortedQuery = `SELECT coalesce(group_concat(seq, ',' ORDER BY seq), ''),
		coalesce(group_concat(nullif(data, ''), ',' ORDER BY seq), '')
	FROM checkpoint_blobs WHERE tid = ? AND checkpoint_ns = ? AND channel = ? AND chain = ? AND seq BETWEEN 1 AND ?`

// chainTail returns the elements appended by rows 1..l.seq of chain
// l.chain, joined with commas.
func chainTail(ctx context.Context, q sqlx.QueryerContext, tid int64, ns, ch string, l chanLoc) ([]byte, error) {
	for _, query := range []string{loadTailQuery, loadTailSortedQuery} {
		var seqs string
		var data []byte
		if err := q.QueryRowxContext(ctx, query, tid, ns, ch, l.chain, l.seq).Scan(&seqs, &data); err != nil {
			return nil, fmt.Errorf("load checkpoint values: %w", err)
		}
		want := int64(1)
		for s := range strings.SplitSeq(seqs, ",") {
			if s != strconv.FormatInt(want, 10) {
				break
			}
			want++
		}
		if want == l.seq+1 {
			return data, nil
		}
		if n := strings.Count(seqs, ",") + 1; seqs == "" || int64(n) != l.seq {
			return nil, fmt.Errorf("channel %s: chain %d lacks some of its rows 1..%d", ch, l.chain, l.seq)
		}
	}
	return nil, fmt.Errorf("channel %s: chain %d rows out of order", ch, l.chain)
}

// valueParts collects what loadValues read of each stored channel, for
// latestCache: linked tells that a chain linked to another was read (its
// parts are not kept).
type valueParts struct {
	chans  map[string]chanParts
	linked bool
}

// loadValues reconstructs the full value of every stored channel in locs,
// the decoded channels column: one query for the first row of every chain,
// one per chain longer than a row, again for each fork's link (rare). A
// channel with no stored blob is left out; a chain with missing rows is an
// error. parts, when not nil, collects the parts of each value.
func loadValues(ctx context.Context, q sqlx.QueryerContext, tid int64, ns string, locs map[string]chanLoc, channels string, parts *valueParts) (map[string]json.RawMessage, error) {
	values := map[string]json.RawMessage{}
	inners := map[string][][]byte{} // channel -> appended elements, newest first
	want := map[string]chanLoc{}
	for ch, l := range locs {
		if l.stored {
			want[ch] = l
		}
	}
	type head struct {
		link, linkSeq sql.NullInt64
		data          []byte
	}
	// The first query reads the chains the channels column names as it
	// is (loadHeadsQuery skips the channels not stored), the next ones
	// the links.
	arg := channels
	for len(want) > 0 {
		rows, err := q.QueryContext(ctx, loadHeadsQuery, arg, tid, ns)
		if err != nil {
			return nil, fmt.Errorf("load checkpoint values: %w", err)
		}
		heads := make(map[string]*head, len(want))
		for rows.Next() {
			var ch string
			var h head
			if err := rows.Scan(&ch, &h.link, &h.linkSeq, &h.data); err != nil {
				rows.Close()
				return nil, fmt.Errorf("load checkpoint values: %w", err)
			}
			heads[ch] = &h
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("load checkpoint values: %w", err)
		}
		next := map[string]chanLoc{}
		for ch, l := range want {
			h := heads[ch]
			if h == nil {
				return nil, fmt.Errorf("channel %s: chain %d has no row 0", ch, l.chain)
			}
			var tail []byte
			if l.seq > 0 {
				var err error
				if tail, err = chainTail(ctx, q, tid, ns, ch, l); err != nil {
					return nil, err
				}
				inners[ch] = append(inners[ch], tail)
			}
			if parts != nil {
				if h.link.Valid || arg != channels {
					parts.linked = true
				} else {
					parts.chans[ch] = chanParts{loc: l, head: h.data, tail: tail}
				}
			}
			if !h.link.Valid {
				v, err := concatArrays(h.data, inners[ch])
				if err != nil {
					return nil, fmt.Errorf("channel %s: %w", ch, err)
				}
				values[ch] = v
				continue
			}
			// Links point to older chains, so this ends.
			if h.link.Int64 >= l.chain {
				return nil, fmt.Errorf("channel %s: chain %d links to chain %d", ch, l.chain, h.link.Int64)
			}
			inners[ch] = append(inners[ch], h.data)
			next[ch] = chanLoc{chain: h.link.Int64, seq: h.linkSeq.Int64, stored: true}
		}
		want = next
		if len(want) > 0 {
			arg = encodeChannels(want)
		}
	}
	return values, nil
}

// concatArrays returns the value of a chain: head, a whole value, followed
// by the elements in inners (each the inside of an array, newest first).
// With no non-empty inner, head is returned as is; otherwise head must be an
// array (or null, counting as empty).
func concatArrays(head []byte, inners [][]byte) (json.RawMessage, error) {
	n := 0
	for _, in := range inners {
		n += len(in)
	}
	if n == 0 {
		return json.RawMessage(head), nil
	}
	inner, ok := jsoncol.ArrayInner(head)
	if !ok {
		if !bytes.Equal(bytes.TrimSpace(head), []byte("null")) {
			return nil, fmt.Errorf("delta blob chain holds a non-array value")
		}
	}
	buf := make([]byte, 0, len(inner)+n+len(inners)+2)
	buf = append(buf, '[')
	buf = append(buf, inner...)
	for i := len(inners) - 1; i >= 0; i-- {
		if len(inners[i]) == 0 {
			continue
		}
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		buf = append(buf, inners[i]...)
	}
	buf = append(buf, ']')
	return json.RawMessage(buf), nil
}

// loadWrites reads the pending writes saved at a checkpoint, ordered by task
// path, task id and index.
func loadWrites(ctx context.Context, q sqlx.QueryerContext, tid int64, ns, cpID string) ([]driver.PendingWrite, error) {
	var rows []struct {
		TaskID   string `db:"task_id"`
		TaskPath string `db:"task_path"`
		Idx      int    `db:"idx"`
		Channel  string `db:"channel"`
		Value    string `db:"value"`
	}
	if err := sqlx.SelectContext(ctx, q, &rows, `SELECT task_id, task_path, idx, channel, value FROM checkpoint_writes
		WHERE tid = ? AND checkpoint_ns = ? AND checkpoint_id = ? ORDER BY task_path, task_id, idx`,
		tid, ns, checkpointID(cpID)); err != nil {
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
// (all of it, shared part included) contains opts.Metadata, at most
// opts.Limit (0 = all). A missing thread gives an empty list.
func (db *DB) ListCheckpoints(ctx context.Context, threadID string, opts driver.CheckpointListOptions) ([]*driver.CheckpointRecord, error) {
	var w where
	w.add("c.tid = (SELECT tid FROM checkpoint_threads WHERE thread_id = ?)", threadID)
	w.add("c.checkpoint_ns = ?", opts.NS)
	if opts.Before != "" {
		addBefore(&w, opts.Before)
	}
	if err := w.contains(metadataExpr, opts.Metadata); err != nil {
		return nil, err
	}
	lim, largs := limitOffset(opts.Limit, 0, false)
	out := []*driver.CheckpointRecord{}
	err := db.read(ctx, func(tx *connTx) error {
		var rows []checkpointRow
		if err := tx.SelectContext(ctx, &rows, checkpointSelect+w.String()+
			` ORDER BY c.checkpoint_id DESC`+lim, append(w.args, largs...)...); err != nil {
			return fmt.Errorf("list checkpoints: %w", err)
		}
		out = make([]*driver.CheckpointRecord, 0, len(rows))
		for i := range rows {
			cp, err := loadCheckpoint(ctx, tx, threadID, &rows[i], nil)
			if err != nil {
				return err
			}
			out = append(out, cp)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteRunCheckpoints deletes the checkpoints that run runID wrote on a
// thread (every namespace), their pending writes, and the blobs and shared
// metadata no remaining checkpoint needs. It is not part of
// driver.Storage: the Server uses it to roll back a run (multitask
// rollback). Deleting nothing is not an error.
func (db *DB) DeleteRunCheckpoints(ctx context.Context, threadID, runID string) error {
	if runID == "" {
		return graphserver.Errorf(graphserver.EINVALID, "A run id is required.")
	}
	return db.write(ctx, func(tx *connTx) error {
		return deleteRunCheckpoints(ctx, tx, threadID, runID)
	})
}

// deleteRunCheckpoints is DeleteRunCheckpoints in tx. The run's pending
// writes on other checkpoints go too, and the writes they replaced come
// back.
func deleteRunCheckpoints(ctx context.Context, tx *connTx, threadID, runID string) error {
	tid, ok, err := threadKey(ctx, tx, threadID)
	if err != nil || !ok {
		return err
	}
	run := checkpointID(runID)
	if _, err := tx.ExecContext(ctx, `DELETE FROM checkpoint_writes WHERE tid = ? AND (checkpoint_ns, checkpoint_id) IN
		(SELECT checkpoint_ns, checkpoint_id FROM checkpoints WHERE tid = ? AND run_id = ?)`,
		tid, tid, run); err != nil {
		return fmt.Errorf("delete run writes: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM checkpoint_writes WHERE tid = ? AND run_id = ?`, tid, run); err != nil {
		return fmt.Errorf("delete run writes: %w", err)
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM checkpoints WHERE tid = ? AND run_id = ?`, tid, run)
	if err != nil {
		return fmt.Errorf("delete run checkpoints: %w", err)
	}
	// Put back what the run replaced, unless its task has writes again
	// (a later run's) or the checkpoint is gone.
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO checkpoint_writes
		(tid, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, value, run_id)
		SELECT r.tid, r.checkpoint_ns, r.checkpoint_id, r.task_id, r.task_path, r.idx, r.channel, r.value, r.run_id
		FROM checkpoint_writes_replaced AS r
		WHERE r.tid = ?1 AND r.replaced_by = ?2
			AND EXISTS (SELECT 1 FROM checkpoints AS c
				WHERE c.tid = ?1 AND c.checkpoint_ns = r.checkpoint_ns AND c.checkpoint_id = r.checkpoint_id)
			AND NOT EXISTS (SELECT 1 FROM checkpoint_writes AS w WHERE w.tid = ?1 AND w.checkpoint_ns = r.checkpoint_ns
				AND w.checkpoint_id = r.checkpoint_id AND w.task_id = r.task_id)`, tid, run); err != nil {
		return fmt.Errorf("restore replaced writes: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM checkpoint_writes_replaced WHERE tid = ?1 AND (replaced_by = ?2 OR run_id = ?2)`,
		tid, run); err != nil {
		return fmt.Errorf("delete replaced writes: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	return gcCheckpoints(ctx, tx, tid)
}

// gcCheckpoints deletes a thread's blob rows that no checkpoint needs (the
// tail of a chain past the last row a checkpoint refers to, directly or
// through a fork's link, and unused chains) and its unused shared metadata.
func gcCheckpoints(ctx context.Context, tx *connTx, tid int64) error {
	if _, err := tx.ExecContext(ctx, `WITH RECURSIVE needed (ns, channel, chain, seq) AS (
		SELECT c.checkpoint_ns, j.key, json_extract(j.value, '$[1]'), json_extract(j.value, '$[2]')
		FROM checkpoints AS c, json_each(c.channels) AS j
		WHERE c.tid = ?1 AND json_array_length(j.value) = 3
		UNION
		SELECT b.checkpoint_ns, b.channel, b.link_chain, b.link_seq
		FROM needed AS n
		JOIN checkpoint_blobs AS b
			ON b.tid = ?1 AND b.checkpoint_ns = n.ns AND b.channel = n.channel AND b.chain = n.chain AND b.seq = 0
		WHERE b.link_chain IS NOT NULL
	),
	tip (ns, channel, chain, seq) AS MATERIALIZED (SELECT CAST(ns AS TEXT), CAST(channel AS TEXT), CAST(chain AS INTEGER), CAST(max(seq) AS INTEGER)
		FROM needed GROUP BY ns, channel, chain)
	DELETE FROM checkpoint_blobs WHERE tid = ?1 AND NOT EXISTS (SELECT 1 FROM tip
		WHERE tip.ns = checkpoint_blobs.checkpoint_ns AND tip.channel = checkpoint_blobs.channel
			AND tip.chain = checkpoint_blobs.chain AND tip.seq >= checkpoint_blobs.seq)`, tid); err != nil {
		return fmt.Errorf("collect checkpoint blobs: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM checkpoint_metadata WHERE tid = ?1 AND mid NOT IN
		(SELECT shared_metadata FROM checkpoints WHERE tid = ?1)`, tid); err != nil {
		return fmt.Errorf("collect checkpoint metadata: %w", err)
	}
	return nil
}

// copyCheckpoints copies every checkpoint row of thread sourceID (shared
// metadata, blobs and pending writes included) to thread newID, which has
// none. Chains and shared metadata are numbered per thread, so rows are
// copied as they are.
func copyCheckpoints(ctx context.Context, tx *connTx, sourceID, newID string) error {
	src, ok, err := threadKey(ctx, tx, sourceID)
	if err != nil || !ok {
		return err
	}
	dst, err := ensureThreadKey(ctx, tx, newID)
	if err != nil {
		return err
	}
	rewriteThreadID := `INSERT INTO checkpoint_metadata (tid, mid, json) SELECT ?, mid,
			CASE WHEN json_type(json, '$.thread_id') IS NULL THEN json ELSE json_set(json, '$.thread_id', ?) END
		FROM checkpoint_metadata WHERE tid = ?`
	// The copy's checkpoints name the copy: a thread_id in the shared
	// metadata is rewritten (its value is the same in every row).
	if _, err := tx.ExecContext(ctx, rewriteThreadID, dst, newID, src); err != nil {
		return fmt.Errorf("copy thread checkpoint metadata: %w", err)
	}
	for _, q := range []string{
		`INSERT INTO checkpoints (tid, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, created_at,
			metadata, shared_metadata, metadata_run_id, channels, body)
		SELECT ?, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, created_at,
			metadata, shared_metadata, metadata_run_id, channels, body
		FROM checkpoints WHERE tid = ?`,
		`INSERT INTO checkpoint_blobs (tid, checkpoint_ns, channel, chain, seq, link_chain, link_seq, data)
		SELECT ?, checkpoint_ns, channel, chain, seq, link_chain, link_seq, data FROM checkpoint_blobs WHERE tid = ?`,
		`INSERT INTO checkpoint_writes (tid, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, value)
		SELECT ?, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, value
		FROM checkpoint_writes WHERE tid = ?`,
	} {
		if _, err := tx.ExecContext(ctx, q, dst, src); err != nil {
			return fmt.Errorf("copy thread checkpoints: %w", err)
		}
	}
	return nil
}

// keepLatest drops every checkpoint of a thread but its latest
// root one, which it stores again with full (non-delta) blobs, no parent,
// and its pending writes.
func keepLatest(ctx context.Context, tx *connTx, threadID string, cache *latestCache) error {
	// The latest checkpoint keeps its id but loses its parent: its cached
	// entry would no longer match it.
	cache.drop(threadID)
	tid, ok, err := threadKey(ctx, tx, threadID)
	if err != nil || !ok {
		return err
	}
	cp, err := getCheckpoint(ctx, tx, threadID, "", "")
	if graphserver.ErrorCode(err) == graphserver.ENOTFOUND {
		cp = nil
	} else if err != nil {
		return err
	}
	if cp == nil {
		if _, err := tx.ExecContext(ctx, `DELETE FROM checkpoint_writes WHERE tid = ?`, tid); err != nil {
			return err
		}
	} else if _, err := tx.ExecContext(ctx, `DELETE FROM checkpoint_writes WHERE tid = ? AND NOT (checkpoint_ns = '' AND checkpoint_id = ?)`,
		tid, checkpointID(cp.CheckpointID)); err != nil {
		return err
	}
	for _, q := range []string{
		`DELETE FROM checkpoint_writes_replaced WHERE tid = ?`,
		`DELETE FROM checkpoints WHERE tid = ?`,
		`DELETE FROM checkpoint_blobs WHERE tid = ?`,
		`DELETE FROM checkpoint_metadata WHERE tid = ?`,
	} {
		if _, err := tx.ExecContext(ctx, q, tid); err != nil {
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
	md, err := splitMetadata(cp.Metadata, cp.RunID)
	if err != nil {
		return err
	}
	_, err = putCheckpoint(ctx, tx, cp, cp.CreatedAt, md, nil, nil, nil)
	return err
}
