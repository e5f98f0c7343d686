package sqlite

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/graphserver/graphserver"
)

// checkpointRow is a checkpoints row.
type checkpointRow struct {
	ThreadID           string         `db:"thread_id"`
	NS                 string         `db:"checkpoint_ns"`
	CheckpointID       checkpointID   `db:"checkpoint_id"`
	ParentCheckpointID checkpointID   `db:"parent_checkpoint_id"`
	RunID              string         `db:"run_id"`
	CreatedAt          sql.NullString `db:"created_at"`
	Metadata           string         `db:"metadata"`
	ChannelVersions    string         `db:"channel_versions"`
	Body               string         `db:"body"`
}

// checkpointID is a checkpoint id column (see migrations/0001_core.sql): a
// canonical lower-case UUID is stored as its 16 bytes, any other id as TEXT.
type checkpointID string

// Value implements driver.Valuer.
func (id checkpointID) Value() (driver.Value, error) {
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

// idText is the text form of the checkpoint_id column.
const idText = `CASE WHEN typeof(checkpoint_id) = 'blob' THEN lower(substr(hex(checkpoint_id), 1, 8) || '-' ||
	substr(hex(checkpoint_id), 9, 4) || '-' || substr(hex(checkpoint_id), 13, 4) || '-' ||
	substr(hex(checkpoint_id), 17, 4) || '-' || substr(hex(checkpoint_id), 21)) ELSE checkpoint_id END`

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
		w.add(idText+" < ?", before)
		return
	}
	w.add("checkpoint_id "+op+" ? AND (typeof(checkpoint_id) = 'blob' OR checkpoint_id < ?)", u[:], before)
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

const checkpointColumns = `thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, created_at,
	metadata, channel_versions, body`

// isForeignKey reports whether err is a FOREIGN KEY violation.
func isForeignKey(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

// PutCheckpoint implements graphserver.Checkpointer. The checkpoint row is
// inserted, or replaced when one with the same thread, namespace and id
// exists; each of cp.NewBlobs is inserted unless a blob with the same
// channel and version exists already (then it is a no-op). ENOTFOUND when
// the thread does not exist; EINVALID for missing ids or invalid JSON.
func (db *DB) PutCheckpoint(ctx context.Context, cp *graphserver.CheckpointRecord) error {
	if cp == nil || cp.ThreadID == "" || cp.CheckpointID == "" {
		return graphserver.Errorf(graphserver.EINVALID, "A checkpoint needs a thread id and a checkpoint id.")
	}
	metadata, err := marshalObject(cp.Metadata)
	if err != nil {
		return err
	}
	versions := "{}"
	if cp.ChannelVersions != nil {
		if versions, err = marshalJSON(cp.ChannelVersions); err != nil {
			return err
		}
	}
	body := "null"
	if len(cp.Body) > 0 {
		if !json.Valid(cp.Body) {
			return graphserver.Errorf(graphserver.EINVALID, "The checkpoint body is not valid JSON.")
		}
		body = string(cp.Body)
	}
	for _, b := range cp.NewBlobs {
		if b.Channel == "" || b.Version == "" || !json.Valid(b.Data) {
			return graphserver.Errorf(graphserver.EINVALID, "The blob of channel %q version %q needs a channel, a version and valid JSON data.", b.Channel, b.Version)
		}
	}
	created := cp.CreatedAt
	if created.IsZero() {
		created = db.now()
	}
	return db.write(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO checkpoints (`+checkpointColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
				parent_checkpoint_id = excluded.parent_checkpoint_id, run_id = excluded.run_id,
				created_at = excluded.created_at, metadata = excluded.metadata,
				channel_versions = excluded.channel_versions, body = excluded.body`,
			cp.ThreadID, cp.NS, checkpointID(cp.CheckpointID), checkpointID(cp.ParentCheckpointID), cp.RunID,
			createdAtColumn(cp.CheckpointID, created), metadata, versions, body)
		if isForeignKey(err) {
			return threadNotFound(cp.ThreadID)
		} else if err != nil {
			return fmt.Errorf("put checkpoint: %w", err)
		}
		for _, b := range cp.NewBlobs {
			if _, err := tx.ExecContext(ctx, `INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, base, data)
				VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
				cp.ThreadID, cp.NS, b.Channel, b.Version, b.Base, string(b.Data)); err != nil {
				return fmt.Errorf("put checkpoint blob: %w", err)
			}
		}
		return nil
	})
}

// PutWrites implements graphserver.Checkpointer: the task's earlier writes
// at that checkpoint are replaced by writes (TaskID set to taskID). ENOTFOUND
// when the thread does not exist.
func (db *DB) PutWrites(ctx context.Context, threadID, ns, cpID, taskID string, writes []graphserver.PendingWrite) error {
	for _, w := range writes {
		if !json.Valid(w.Value) {
			return graphserver.Errorf(graphserver.EINVALID, "The pending write to channel %q is not valid JSON.", w.Channel)
		}
	}
	return db.write(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM checkpoint_writes
			WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? AND task_id = ?`,
			threadID, ns, checkpointID(cpID), taskID); err != nil {
			return fmt.Errorf("put writes: %w", err)
		}
		for _, w := range writes {
			_, err := tx.ExecContext(ctx, `INSERT INTO checkpoint_writes
				(thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, value)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
				threadID, ns, checkpointID(cpID), taskID, w.TaskPath, w.Idx, w.Channel, string(w.Value))
			if isForeignKey(err) {
				return threadNotFound(threadID)
			} else if isConstraint(err) {
				return graphserver.Errorf(graphserver.EINVALID, "Two pending writes of task %s share index %d.", taskID, w.Idx)
			} else if err != nil {
				return fmt.Errorf("put writes: %w", err)
			}
		}
		return nil
	})
}

// GetCheckpoint implements graphserver.Checkpointer.
func (db *DB) GetCheckpoint(ctx context.Context, threadID, ns, cpID string) (*graphserver.CheckpointRecord, error) {
	var out *graphserver.CheckpointRecord
	err := db.read(ctx, func(tx *sqlx.Tx) error {
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
func getCheckpoint(ctx context.Context, q sqlx.QueryerContext, threadID, ns, cpID string) (*graphserver.CheckpointRecord, error) {
	var r checkpointRow
	var err error
	if cpID == "" {
		err = sqlx.GetContext(ctx, q, &r, `SELECT `+checkpointColumns+` FROM checkpoints
			WHERE thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id DESC LIMIT 1`, threadID, ns)
	} else {
		err = sqlx.GetContext(ctx, q, &r, `SELECT `+checkpointColumns+` FROM checkpoints
			WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?`, threadID, ns, checkpointID(cpID))
	}
	if errors.Is(err, sql.ErrNoRows) {
		if cpID == "" {
			return nil, graphserver.Errorf(graphserver.ENOTFOUND, "Thread %s has no checkpoint in namespace %q", threadID, ns)
		}
		return nil, graphserver.Errorf(graphserver.ENOTFOUND, "Checkpoint %s of thread %s not found", cpID, threadID)
	} else if err != nil {
		return nil, fmt.Errorf("get checkpoint: %w", err)
	}
	return loadCheckpoint(ctx, q, &r)
}

// loadCheckpoint decodes r and fills its values and pending writes.
func loadCheckpoint(ctx context.Context, q sqlx.QueryerContext, r *checkpointRow) (*graphserver.CheckpointRecord, error) {
	cp := &graphserver.CheckpointRecord{
		ThreadID: r.ThreadID, NS: r.NS, CheckpointID: string(r.CheckpointID), ParentCheckpointID: string(r.ParentCheckpointID),
		RunID: r.RunID, Body: json.RawMessage(r.Body), ChannelVersions: map[string]string{},
	}
	var err error
	if r.CreatedAt.Valid {
		if cp.CreatedAt, err = parseTime(r.CreatedAt.String); err != nil {
			return nil, err
		}
	} else if t, ok := idTime(cp.CheckpointID); ok {
		cp.CreatedAt = t
	} else {
		return nil, fmt.Errorf("checkpoint %s has no creation time", cp.CheckpointID)
	}
	if cp.Metadata, err = unmarshalObject(r.Metadata); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(r.ChannelVersions), &cp.ChannelVersions); err != nil {
		return nil, fmt.Errorf("decode channel versions: %w", err)
	}
	if cp.Values, err = loadValues(ctx, q, r.ThreadID, r.NS, r.ChannelVersions); err != nil {
		return nil, err
	}
	if cp.PendingWrites, err = loadWrites(ctx, q, r.ThreadID, r.NS, cp.CheckpointID); err != nil {
		return nil, err
	}
	return cp, nil
}

// loadValuesQuery walks each channel's blob back through its bases to the
// nearest full blob. Rows come without ORDER BY (sorting would copy every
// blob): loadValues orders each chain by depth.
const loadValuesQuery = `WITH RECURSIVE chain (channel, base, data, depth) AS (
	SELECT b.channel, b.base, b.data, 0
	FROM json_each(?) AS cv
	JOIN checkpoint_blobs AS b
		ON b.thread_id = ? AND b.checkpoint_ns = ? AND b.channel = cv.key AND b.version = cv.value
	UNION ALL
	SELECT b.channel, b.base, b.data, c.depth + 1
	FROM chain AS c
	JOIN checkpoint_blobs AS b
		ON b.thread_id = ? AND b.checkpoint_ns = ? AND b.channel = c.channel AND b.version = c.base
	WHERE c.base <> '' AND c.depth < 1000000
)
SELECT channel, base, data, depth FROM chain`

// chainPart is one blob of a channel's chain, depth 0 being the newest.
type chainPart struct {
	depth int
	base  string
	data  []byte
}

// loadValues reconstructs the full value of every channel in versions (a
// JSON object channel -> version). A channel with no stored blob is left
// out; a delta chain that does not end in a full blob is an error.
func loadValues(ctx context.Context, q sqlx.QueryerContext, threadID, ns, versions string) (map[string]json.RawMessage, error) {
	values := map[string]json.RawMessage{}
	if versions == "" || versions == "{}" {
		return values, nil
	}
	rows, err := q.QueryContext(ctx, loadValuesQuery, versions, threadID, ns, threadID, ns)
	if err != nil {
		return nil, fmt.Errorf("load checkpoint values: %w", err)
	}
	defer rows.Close()
	chains := map[string][]chainPart{}
	for rows.Next() {
		var ch string
		var p chainPart
		if err := rows.Scan(&ch, &p.base, &p.data, &p.depth); err != nil {
			return nil, fmt.Errorf("load checkpoint values: %w", err)
		}
		chains[ch] = append(chains[ch], p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load checkpoint values: %w", err)
	}
	for ch, parts := range chains {
		// deepest (the full value) first
		slices.SortFunc(parts, func(a, b chainPart) int { return cmp.Compare(b.depth, a.depth) })
		if parts[0].base != "" {
			return nil, fmt.Errorf("channel %s of thread %s: delta blob based on missing version %s", ch, threadID, parts[0].base)
		}
		data := make([][]byte, len(parts))
		for i, p := range parts {
			data[i] = p.data
		}
		v, err := concatArrays(data)
		if err != nil {
			return nil, fmt.Errorf("channel %s: %w", ch, err)
		}
		values[ch] = v
	}
	return values, nil
}

// concatArrays joins a full value and the arrays appended to it. A single
// part is returned as is; otherwise every part must be a JSON array (a null
// full value counts as empty) and their elements are spliced in order.
func concatArrays(parts [][]byte) (json.RawMessage, error) {
	if len(parts) == 1 {
		return json.RawMessage(parts[0]), nil
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	n := 0
	for i, p := range parts {
		p = bytes.TrimSpace(p)
		if i == 0 && bytes.Equal(p, []byte("null")) {
			continue
		}
		if len(p) < 2 || p[0] != '[' || p[len(p)-1] != ']' {
			return nil, fmt.Errorf("delta blob chain holds a non-array value")
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
	return json.RawMessage(buf.Bytes()), nil
}

// loadWrites reads the pending writes saved at a checkpoint, ordered by task
// path, task id and index.
func loadWrites(ctx context.Context, q sqlx.QueryerContext, threadID, ns, cpID string) ([]graphserver.PendingWrite, error) {
	var rows []struct {
		TaskID   string `db:"task_id"`
		TaskPath string `db:"task_path"`
		Idx      int    `db:"idx"`
		Channel  string `db:"channel"`
		Value    string `db:"value"`
	}
	if err := sqlx.SelectContext(ctx, q, &rows, `SELECT task_id, task_path, idx, channel, value FROM checkpoint_writes
		WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? ORDER BY task_path, task_id, idx`,
		threadID, ns, checkpointID(cpID)); err != nil {
		return nil, fmt.Errorf("load pending writes: %w", err)
	}
	out := make([]graphserver.PendingWrite, 0, len(rows))
	for _, r := range rows {
		out = append(out, graphserver.PendingWrite{TaskID: r.TaskID, TaskPath: r.TaskPath, Idx: r.Idx, Channel: r.Channel, Value: json.RawMessage(r.Value)})
	}
	return out, nil
}

// ListCheckpoints implements graphserver.Checkpointer: checkpoints of
// opts.NS, newest first, older than opts.Before when set, whose metadata
// contains opts.Metadata, at most opts.Limit (0 = all). A missing thread
// gives an empty list.
func (db *DB) ListCheckpoints(ctx context.Context, threadID string, opts graphserver.CheckpointListOptions) ([]*graphserver.CheckpointRecord, error) {
	var w where
	w.add("thread_id = ?", threadID)
	w.add("checkpoint_ns = ?", opts.NS)
	if opts.Before != "" {
		addBefore(&w, opts.Before)
	}
	if err := w.contains("metadata", opts.Metadata); err != nil {
		return nil, err
	}
	lim, largs := limitOffset(opts.Limit, 0, false)
	var out []*graphserver.CheckpointRecord
	err := db.read(ctx, func(tx *sqlx.Tx) error {
		var rows []checkpointRow
		if err := tx.SelectContext(ctx, &rows, `SELECT `+checkpointColumns+` FROM checkpoints`+w.String()+
			` ORDER BY checkpoint_id DESC`+lim, append(w.args, largs...)...); err != nil {
			return fmt.Errorf("list checkpoints: %w", err)
		}
		out = make([]*graphserver.CheckpointRecord, 0, len(rows))
		for i := range rows {
			cp, err := loadCheckpoint(ctx, tx, &rows[i])
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
// thread (every namespace), their pending writes, and the blobs no remaining
// checkpoint needs. It is not part of graphserver.Storage: the Server uses it
// to roll back a run (multitask rollback). Deleting nothing is not an error.
func (db *DB) DeleteRunCheckpoints(ctx context.Context, threadID, runID string) error {
	if runID == "" {
		return graphserver.Errorf(graphserver.EINVALID, "A run id is required.")
	}
	return db.write(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM checkpoint_writes WHERE thread_id = ? AND (checkpoint_ns, checkpoint_id) IN
			(SELECT checkpoint_ns, checkpoint_id FROM checkpoints WHERE thread_id = ? AND run_id = ?)`,
			threadID, threadID, runID); err != nil {
			return fmt.Errorf("delete run writes: %w", err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM checkpoints WHERE thread_id = ? AND run_id = ?`, threadID, runID)
		if err != nil {
			return fmt.Errorf("delete run checkpoints: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		return gcBlobs(ctx, tx, threadID)
	})
}

// gcBlobs deletes a thread's blobs that no checkpoint refers to, directly
// or as the base of a delta blob it refers to.
func gcBlobs(ctx context.Context, tx *sqlx.Tx, threadID string) error {
	_, err := tx.ExecContext(ctx, `WITH RECURSIVE needed (ns, channel, version) AS (
		SELECT c.checkpoint_ns, cv.key, cv.value
		FROM checkpoints AS c, json_each(c.channel_versions) AS cv
		WHERE c.thread_id = ?
		UNION
		SELECT b.checkpoint_ns, b.channel, b.base
		FROM needed AS n
		JOIN checkpoint_blobs AS b
			ON b.thread_id = ? AND b.checkpoint_ns = n.ns AND b.channel = n.channel AND b.version = n.version
		WHERE b.base <> ''
	)
	DELETE FROM checkpoint_blobs WHERE thread_id = ? AND (checkpoint_ns, channel, version) NOT IN
		(SELECT ns, channel, version FROM needed)`, threadID, threadID, threadID)
	if err != nil {
		return fmt.Errorf("collect blobs: %w", err)
	}
	return nil
}
