package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/internal/jsoncol"
)

// threadRow is a threads row.
type threadRow struct {
	ThreadID       string          `db:"thread_id"`
	CreatedAt      string          `db:"created_at"`
	UpdatedAt      string          `db:"updated_at"`
	StateUpdatedAt string          `db:"state_updated_at"`
	Metadata       string          `db:"metadata"`
	Config         string          `db:"config"`
	Context        string          `db:"context"`
	Status         string          `db:"status"`
	Values         sql.NullString  `db:"state_values"`
	Interrupts     string          `db:"interrupts"`
	Error          sql.NullString  `db:"error"`
	TTLStrategy    sql.NullString  `db:"ttl_strategy"`
	TTLMinutes     sql.NullFloat64 `db:"ttl_minutes"`
	TTLExpiresAt   sql.NullString  `db:"ttl_expires_at"`
	// Temporary marks a stateless run's thread (Tx.InsertThread), which
	// the search indexes leave out (migration 0011). Inserted, never
	// selected.
	Temporary bool `db:"-"`
}

const threadColumns = `thread_id, created_at, updated_at, state_updated_at, metadata, config, context, status,
	state_values, interrupts, error, ttl_strategy, ttl_minutes, ttl_expires_at`

func (r *threadRow) thread() (*graphserver.Thread, error) {
	t := &graphserver.Thread{ThreadID: r.ThreadID, Status: r.Status, Values: rawOrNil(r.Values), Error: rawOrNil(r.Error)}
	var err error
	if t.CreatedAt, err = parseTime(r.CreatedAt); err != nil {
		return nil, err
	}
	if t.UpdatedAt, err = parseTime(r.UpdatedAt); err != nil {
		return nil, err
	}
	if t.StateUpdatedAt, err = parseTime(r.StateUpdatedAt); err != nil {
		return nil, err
	}
	if t.Metadata, err = jsoncol.DecodeObject(r.Metadata); err != nil {
		return nil, err
	}
	if t.Config, err = jsoncol.DecodeObject(r.Config); err != nil {
		return nil, err
	}
	if t.Context, err = jsoncol.DecodeObject(r.Context); err != nil {
		return nil, err
	}
	t.Interrupts = map[string][]graphserver.Interrupt{}
	if r.Interrupts != "" && r.Interrupts != "null" && r.Interrupts != "{}" {
		if err := json.Unmarshal([]byte(r.Interrupts), &t.Interrupts); err != nil {
			return nil, fmt.Errorf("decode stored interrupts: %w", err)
		}
	}
	if r.TTLStrategy.Valid {
		exp, err := parseNullTime(r.TTLExpiresAt)
		if err != nil {
			return nil, err
		}
		t.TTL = &graphserver.ThreadTTLInfo{Strategy: r.TTLStrategy.String, TTLMinutes: r.TTLMinutes.Float64, ExpiresAt: exp}
	}
	return t, nil
}

func threadNotFound(id string) error {
	return graphserver.Errorf(graphserver.ENOTFOUND, "Thread with ID %s not found", id)
}

// getThread reads one thread visible through filter.
func getThread(ctx context.Context, q sqlx.QueryerContext, id string, filter graphserver.Filter) (*graphserver.Thread, error) {
	var w where
	w.add("thread_id = ?", id)
	if err := w.filter("metadata", filter); err != nil {
		return nil, err
	}
	var r threadRow
	err := sqlx.GetContext(ctx, q, &r, `SELECT `+threadColumns+` FROM threads`+w.String(), w.args...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, threadNotFound(id)
	} else if err != nil {
		return nil, fmt.Errorf("get thread %s: %w", id, err)
	}
	return r.thread()
}

// threadHeadQuery selects a thread's metadata and config joined to its
// active runs; threadHead adds the WHERE.
var threadHeadQuery = `SELECT t.metadata, t.config, ` + runRefColumns + ` FROM threads AS t
	LEFT JOIN runs AS r ON r.thread_id = t.thread_id AND ` + activeStatus("r")

// threadHead returns the metadata, config and active runs of thread id
// when filter lets it be seen, ENOTFOUND otherwise: one statement, the
// thread's row joined to the runs ActiveRuns lists.
func threadHead(ctx context.Context, q sqlx.QueryerContext, id string, filter graphserver.Filter) (*driver.ThreadHead, error) {
	var w where
	w.add("t.thread_id = ?", id)
	if err := w.filter("t.metadata", filter); err != nil {
		return nil, err
	}
	var rows []struct {
		Metadata string         `db:"metadata"`
		Config   string         `db:"config"`
		RunID    sql.NullString `db:"run_id"`
		ThreadID sql.NullString `db:"thread_id"`
		Status   sql.NullString `db:"status"`
		Attempt  sql.NullInt64  `db:"attempt"`
		Cancel   sql.NullString `db:"cancel_action"`
	}
	err := sqlx.SelectContext(ctx, q, &rows, threadHeadQuery+w.String(), w.args...)
	if err != nil {
		return nil, fmt.Errorf("get thread %s: %w", id, err)
	}
	if len(rows) == 0 {
		return nil, threadNotFound(id)
	}
	h := &driver.ThreadHead{}
	if h.Metadata, err = jsoncol.DecodeObject(rows[0].Metadata); err != nil {
		return nil, err
	}
	if h.Config, err = jsoncol.DecodeObject(rows[0].Config); err != nil {
		return nil, err
	}
	for _, r := range rows {
		if r.RunID.Valid {
			h.Active = append(h.Active, driver.RunRef{RunID: r.RunID.String, ThreadID: r.ThreadID.String,
				Status: r.Status.String, Attempt: int(r.Attempt.Int64), CancelAction: r.Cancel.String})
		}
	}
	return h, nil
}

// expiry returns when a thread with TTL minutes expires if last active at t.
func expiry(t time.Time, minutes float64) time.Time {
	return t.Add(time.Duration(minutes * float64(time.Minute)))
}

// CreateThread implements driver.ThreadStorage. It stores t as given (the
// Server decides every field).
func (db *DB) CreateThread(ctx context.Context, t *graphserver.Thread, ifExists string, filter graphserver.Filter) (*graphserver.Thread, error) {
	row, err := newThreadRow(t)
	if err != nil {
		return nil, err
	}
	var out *graphserver.Thread
	err = db.writeGrouped(ctx, func(ctx context.Context, tx *connTx) error {
		err := insertThreadRow(ctx, tx, row)
		if graphserver.ErrorCode(err) == graphserver.ECONFLICT {
			if ifExists != graphserver.IfExistsDoNothing {
				return err
			}
			out, err = getThread(ctx, tx, t.ThreadID, filter)
			if graphserver.ErrorCode(err) == graphserver.ENOTFOUND {
				return graphserver.Errorf(graphserver.ECONFLICT, "Thread with ID %s already exists", t.ThreadID)
			}
			return err
		} else if err != nil {
			return err
		}
		out, err = row.thread()
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// newThreadRow is the row CreateThread stores for t: what the thread reads
// back as, without reading it.
func newThreadRow(t *graphserver.Thread) (*threadRow, error) {
	c, err := jsoncol.Thread(t)
	if err != nil {
		return nil, err
	}
	var ttlStrategy, ttlExpires sql.NullString
	var ttlMinutes sql.NullFloat64
	if t.TTL != nil {
		ttlStrategy = sql.NullString{String: t.TTL.Strategy, Valid: true}
		ttlMinutes = sql.NullFloat64{Float64: t.TTL.TTLMinutes, Valid: true}
		ttlExpires = nullTime(t.TTL.ExpiresAt)
	}
	return &threadRow{ThreadID: t.ThreadID, CreatedAt: formatTime(t.CreatedAt), UpdatedAt: formatTime(t.UpdatedAt),
		StateUpdatedAt: formatTime(t.StateUpdatedAt), Metadata: c.Metadata, Config: c.Config, Context: c.Context, Status: t.Status,
		Values: nullString(c.Values), Interrupts: c.Interrupts, Error: nullString(c.Error), TTLStrategy: ttlStrategy, TTLMinutes: ttlMinutes, TTLExpiresAt: ttlExpires}, nil
}

// insertThreadRow inserts row in tx; ECONFLICT when its id is taken. It is
// the one thread insert (CreateThread, CopyThread, Tx.InsertThread).
func insertThreadRow(ctx context.Context, tx *connTx, row *threadRow) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO threads (`+threadColumns+`, temporary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		row.ThreadID, row.CreatedAt, row.UpdatedAt, row.StateUpdatedAt, row.Metadata, row.Config, row.Context, row.Status,
		row.Values, row.Interrupts, row.Error, row.TTLStrategy, row.TTLMinutes, row.TTLExpiresAt, row.Temporary)
	if isConstraint(err) {
		return graphserver.Errorf(graphserver.ECONFLICT, "Thread with ID %s already exists", row.ThreadID)
	} else if err != nil {
		return fmt.Errorf("insert thread: %w", err)
	}
	return nil
}

// GetThread implements driver.ThreadStorage.
func (db *DB) GetThread(ctx context.Context, id string, filter graphserver.Filter) (*graphserver.Thread, error) {
	t, err := getThread(ctx, db.reader, id, filter)
	return t, translate(err)
}

// UpdateThread implements driver.ThreadStorage: metadata is merged
// shallowly, a TTL replaces the thread's TTL (expiring patch.TTL.Minutes
// after now; Minutes <= 0 removes it), and updated_at becomes now.
func (db *DB) UpdateThread(ctx context.Context, id string, patch *graphserver.ThreadPatch, now time.Time, filter graphserver.Filter) (*graphserver.Thread, error) {
	if patch == nil {
		patch = &graphserver.ThreadPatch{}
	}
	var out *graphserver.Thread
	err := db.write(ctx, func(tx *connTx) error {
		t, err := getThread(ctx, tx, id, filter)
		if err != nil {
			return err
		}
		metadata, err := jsoncol.Object(t.Metadata.Merge(patch.Metadata))
		if err != nil {
			return err
		}
		var ttlStrategy, ttlExpires sql.NullString
		var ttlMinutes sql.NullFloat64
		if patch.TTL != nil && patch.TTL.Minutes > 0 {
			ttlStrategy = sql.NullString{String: cmp.Or(patch.TTL.Strategy, graphserver.PruneDelete), Valid: true}
			ttlMinutes = sql.NullFloat64{Float64: patch.TTL.Minutes, Valid: true}
			exp := expiry(now, patch.TTL.Minutes)
			ttlExpires = nullTime(&exp)
		} else if patch.TTL == nil && t.TTL != nil {
			ttlStrategy = sql.NullString{String: t.TTL.Strategy, Valid: true}
			ttlMinutes = sql.NullFloat64{Float64: t.TTL.TTLMinutes, Valid: true}
			exp := expiry(now, t.TTL.TTLMinutes)
			ttlExpires = nullTime(&exp)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE threads SET metadata = ?, updated_at = ?, ttl_strategy = ?, ttl_minutes = ?,
			ttl_expires_at = ? WHERE thread_id = ?`, metadata, formatTime(now), ttlStrategy, ttlMinutes, ttlExpires, id); err != nil {
			return fmt.Errorf("update thread: %w", err)
		}
		out, err = getThread(ctx, tx, id, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteThread implements driver.ThreadStorage. Checkpoints, blobs and
// writes go with the thread (foreign keys with ON DELETE CASCADE; later
// tables referencing threads cascade the same way).
func (db *DB) DeleteThread(ctx context.Context, id string, filter graphserver.Filter) error {
	return db.write(ctx, func(tx *connTx) error {
		var w where
		w.add("thread_id = ?", id)
		if err := w.filter("metadata", filter); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM threads`+w.String(), w.args...)
		if err != nil {
			return fmt.Errorf("delete thread: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("delete thread: %w", err)
		} else if n == 0 {
			return threadNotFound(id)
		}
		return nil
	})
}

// threadSorts whitelists sort_by values.
var threadSorts = map[string]string{
	"thread_id":        "thread_id",
	"status":           "status",
	"created_at":       "created_at",
	"updated_at":       "updated_at",
	"state_updated_at": "state_updated_at",
}

func threadSearchWhere(s *graphserver.ThreadSearch) (*where, error) {
	w := &where{}
	// Stateless runs' threads are not searched: the indexes that order and
	// filter the search leave them out (migration 0011), and a query that
	// did not exclude them could not use those indexes.
	w.add("temporary = 0")
	if len(s.IDs) > 0 {
		ids, err := json.Marshal(s.IDs)
		if err != nil {
			return nil, fmt.Errorf("encode ids: %w", err)
		}
		w.add("thread_id IN (SELECT value FROM json_each(?))", string(ids))
	}
	if s.Status != "" {
		w.add("status = ?", s.Status)
	}
	if err := w.contains("metadata", s.Metadata); err != nil {
		return nil, err
	}
	if len(s.Values) > 0 {
		var v any
		if err := json.Unmarshal(s.Values, &v); err != nil {
			return nil, graphserver.Errorf(graphserver.EINVALID, "The values filter is not valid JSON.")
		}
		if v != nil {
			cond, args, err := w.containment("state_values", "$", v)
			if err != nil {
				return nil, err
			}
			w.add(cond, args...)
		}
	}
	if err := w.filter("metadata", s.Filter); err != nil {
		return nil, err
	}
	return w, nil
}

// threadSearchQuery is SearchThreads' query and its arguments.
func threadSearchQuery(s *graphserver.ThreadSearch) (string, []any, error) {
	w, err := threadSearchWhere(s)
	if err != nil {
		return "", nil, err
	}
	lim, largs := limitOffset(s.Limit, s.Offset, true)
	q := `SELECT ` + threadColumns + ` FROM threads` + w.String() +
		orderBy(threadSorts, s.SortBy, s.SortOrder, "created_at", "thread_id") + lim
	return q, append(w.args, largs...), nil
}

// SearchThreads implements driver.ThreadStorage. It returns at most
// s.Limit+1 rows (no limit when s.Limit <= 0), sorted by s.SortBy (default
// created_at) and s.SortOrder (default desc), thread_id breaking ties.
func (db *DB) SearchThreads(ctx context.Context, s *graphserver.ThreadSearch) ([]*graphserver.Thread, error) {
	if s == nil {
		s = &graphserver.ThreadSearch{}
	}
	q, args, err := threadSearchQuery(s)
	if err != nil {
		return nil, err
	}
	var rows []threadRow
	if err := db.reader.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, translate(fmt.Errorf("search threads: %w", err))
	}
	out := make([]*graphserver.Thread, 0, len(rows))
	for i := range rows {
		t, err := rows[i].thread()
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// CountThreads implements driver.ThreadStorage; limit, offset and sort
// are ignored.
func (db *DB) CountThreads(ctx context.Context, s *graphserver.ThreadSearch) (int, error) {
	if s == nil {
		s = &graphserver.ThreadSearch{}
	}
	w, err := threadSearchWhere(s)
	if err != nil {
		return 0, err
	}
	var n int
	if err := db.reader.GetContext(ctx, &n, `SELECT count(*) FROM threads`+w.String(), w.args...); err != nil {
		return 0, translate(fmt.Errorf("count threads: %w", err))
	}
	return n, nil
}

// CopyThread implements driver.ThreadStorage. The copy has the
// source's metadata, config, context, values, interrupts, error and status
// (busy becomes idle: no run works on the copy), no TTL, timestamps now, and
// every checkpoint, blob and pending write of the source under newID, in one
// transaction. ENOTFOUND when the source is missing or hidden, ECONFLICT when
// newID is taken.
func (db *DB) CopyThread(ctx context.Context, sourceID, newID string, now time.Time, filter graphserver.Filter) (*graphserver.Thread, error) {
	var out *graphserver.Thread
	err := db.write(ctx, func(tx *connTx) error {
		if _, err := getThread(ctx, tx, sourceID, filter); err != nil {
			return err
		}
		var row threadRow
		if err := tx.GetContext(ctx, &row, `SELECT `+threadColumns+` FROM threads WHERE thread_id = ?`, sourceID); err != nil {
			return fmt.Errorf("copy thread: %w", err)
		}
		ts := formatTime(now)
		row.ThreadID, row.CreatedAt, row.UpdatedAt, row.StateUpdatedAt = newID, ts, ts, ts
		if row.Status == graphserver.ThreadBusy {
			row.Status = graphserver.ThreadIdle
		}
		row.TTLStrategy, row.TTLMinutes, row.TTLExpiresAt = sql.NullString{}, sql.NullFloat64{}, sql.NullString{}
		if err := insertThreadRow(ctx, tx, &row); err != nil {
			return err
		}
		if err := copyCheckpoints(ctx, tx, sourceID, newID); err != nil {
			return err
		}
		var err error
		out, err = getThread(ctx, tx, newID, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PruneThreads implements driver.ThreadStorage. Strategy delete (or
// "") deletes the threads; keep_latest keeps each thread with only its
// latest root checkpoint, whose channel values are rewritten as full blobs,
// and its pending writes; every other checkpoint, blob and write, subgraph
// namespaces included, is deleted. Ids that are missing or hidden by filter
// are skipped and not counted. An unknown strategy is EINVALID.
func (db *DB) PruneThreads(ctx context.Context, ids []string, strategy string, filter graphserver.Filter) (int, error) {
	if strategy == "" {
		strategy = graphserver.PruneDelete
	}
	if strategy != graphserver.PruneDelete && strategy != graphserver.PruneKeepLatest {
		return 0, graphserver.Errorf(graphserver.EINVALID, "The prune strategy %q is invalid: use delete or keep_latest.", strategy)
	}
	var count int
	err := db.write(ctx, func(tx *connTx) error {
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			if _, err := getThread(ctx, tx, id, filter); graphserver.ErrorCode(err) == graphserver.ENOTFOUND {
				continue
			} else if err != nil {
				return err
			}
			if strategy == graphserver.PruneDelete {
				if _, err := tx.ExecContext(ctx, `DELETE FROM threads WHERE thread_id = ?`, id); err != nil {
					return fmt.Errorf("prune thread %s: %w", id, err)
				}
			} else if err := keepLatest(ctx, tx, id, db.latest); err != nil {
				return fmt.Errorf("prune thread %s: %w", id, err)
			}
			count++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return count, nil
}
