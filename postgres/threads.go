package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/internal/jsoncol"
)

// threadRow is a threads row.
type threadRow struct {
	ThreadID       string     `db:"thread_id"`
	CreatedAt      time.Time  `db:"created_at"`
	UpdatedAt      time.Time  `db:"updated_at"`
	StateUpdatedAt time.Time  `db:"state_updated_at"`
	Metadata       string     `db:"metadata"`
	Config         string     `db:"config"`
	Context        string     `db:"context"`
	Status         string     `db:"status"`
	Values         *string    `db:"state_values"`
	Interrupts     string     `db:"interrupts"`
	Error          *string    `db:"error"`
	TTLStrategy    *string    `db:"ttl_strategy"`
	TTLMinutes     *float64   `db:"ttl_minutes"`
	TTLExpiresAt   *time.Time `db:"ttl_expires_at"`
}

const threadColumns = `thread_id, created_at, updated_at, state_updated_at, metadata, config, context, status,
	state_values, interrupts, error, ttl_strategy, ttl_minutes, ttl_expires_at`

func (r *threadRow) thread() (*graphserver.Thread, error) {
	t := &graphserver.Thread{ThreadID: r.ThreadID, Status: r.Status, Values: rawOrNil(r.Values), Error: rawOrNil(r.Error),
		CreatedAt: utc(r.CreatedAt), UpdatedAt: utc(r.UpdatedAt), StateUpdatedAt: utc(r.StateUpdatedAt)}
	var err error
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
	if r.TTLStrategy != nil {
		t.TTL = &graphserver.ThreadTTLInfo{Strategy: *r.TTLStrategy, ExpiresAt: utcPtr(r.TTLExpiresAt)}
		if r.TTLMinutes != nil {
			t.TTL.TTLMinutes = *r.TTLMinutes
		}
	}
	return t, nil
}

func threadNotFound(id string) error {
	return graphserver.Errorf(graphserver.ENOTFOUND, "Thread with ID %s not found", id)
}

// getThread reads one thread visible through filter; forUpdate locks its
// row (the lock every change of a thread's runs takes first).
func getThread(ctx context.Context, q querier, id string, filter graphserver.Filter, forUpdate bool) (*graphserver.Thread, error) {
	var w where
	w.add("thread_id = ?", id)
	if err := w.filter("metadata", filter); err != nil {
		return nil, err
	}
	lock := ""
	if forUpdate {
		lock = " FOR NO KEY UPDATE"
	}
	r, err := getRow[threadRow](ctx, q, `SELECT `+threadColumns+` FROM threads`+w.String()+lock, w.args...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, threadNotFound(id)
	} else if err != nil {
		return nil, fmt.Errorf("get thread %s: %w", id, err)
	}
	return r.thread()
}

// lockThread locks the row of thread id when filter lets it be seen, and
// returns ENOTFOUND otherwise: getThread without reading the row.
//
// Lock order: whatever waits for locks takes its thread's row first, then
// rows of its runs (claims and sweeps, which take both, never wait: SKIP
// LOCKED), so processes sharing the database cannot deadlock on them. The
// thread lock is FOR NO KEY UPDATE, which the foreign key checks of
// checkpoint writes (FOR KEY SHARE) do not wait for.
func lockThread(ctx context.Context, q querier, id string, filter graphserver.Filter) error {
	var w where
	w.add("thread_id = ?", id)
	if err := w.filter("metadata", filter); err != nil {
		return err
	}
	_, err := scalar[int](ctx, q, `SELECT 1 FROM threads`+w.String()+` FOR NO KEY UPDATE`, w.args...)
	if errors.Is(err, pgx.ErrNoRows) {
		return threadNotFound(id)
	} else if err != nil {
		return fmt.Errorf("get thread %s: %w", id, err)
	}
	return nil
}

// lockThreadHead is lockThread returning the thread's metadata and config.
func lockThreadHead(ctx context.Context, q querier, id string, filter graphserver.Filter) (*driver.ThreadHead, error) {
	var w where
	w.add("thread_id = ?", id)
	if err := w.filter("metadata", filter); err != nil {
		return nil, err
	}
	type headRow struct {
		Metadata string `db:"metadata"`
		Config   string `db:"config"`
	}
	r, err := getRow[headRow](ctx, q, `SELECT metadata, config FROM threads`+w.String()+` FOR NO KEY UPDATE`, w.args...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, threadNotFound(id)
	} else if err != nil {
		return nil, fmt.Errorf("get thread %s: %w", id, err)
	}
	h := &driver.ThreadHead{}
	if h.Metadata, err = jsoncol.DecodeObject(r.Metadata); err != nil {
		return nil, err
	}
	if h.Config, err = jsoncol.DecodeObject(r.Config); err != nil {
		return nil, err
	}
	return h, nil
}

// expiry returns when a thread with TTL minutes expires if last active at t.
func expiry(t time.Time, minutes float64) time.Time {
	return t.Add(time.Duration(minutes * float64(time.Minute)))
}

// CreateThread implements driver.ThreadStorage. It stores t as given;
// an empty Status is stored as idle, zero timestamps as now, and a TTL
// without ExpiresAt expires TTLMinutes after UpdatedAt.
func (db *DB) CreateThread(ctx context.Context, t *graphserver.Thread, ifExists string, filter graphserver.Filter) (*graphserver.Thread, error) {
	args, err := threadInsertArgs(t, false)
	if err != nil {
		return nil, err
	}
	var out *graphserver.Thread
	err = db.writeTx(ctx, func(tx pgx.Tx) error {
		r, err := getRow[threadRow](ctx, tx, insertThreadQuery+` RETURNING `+threadColumns, args...)
		if errors.Is(err, pgx.ErrNoRows) {
			conflict := graphserver.Errorf(graphserver.ECONFLICT, "Thread with ID %s already exists", t.ThreadID)
			if ifExists != graphserver.IfExistsDoNothing {
				return conflict
			}
			out, err = getThread(ctx, tx, t.ThreadID, filter, false)
			if graphserver.ErrorCode(err) == graphserver.ENOTFOUND {
				return conflict
			}
			return err
		} else if err != nil {
			return fmt.Errorf("insert thread: %w", err)
		}
		out, err = r.thread()
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// insertThreadQuery inserts a thread (threadInsertArgs); no row is inserted
// when the id is taken. It is the one thread insert (CreateThread,
// Tx.InsertThread).
const insertThreadQuery = `INSERT INTO threads (` + threadColumns + `, temporary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (thread_id) DO NOTHING`

// threadInsertArgs are the arguments of insertThreadQuery for t, stored as
// given (the Server decides every field); temporary marks a stateless
// run's thread (driver.Tx.InsertThread), which search skips.
func threadInsertArgs(t *graphserver.Thread, temporary bool) ([]any, error) {
	c, err := jsoncol.Thread(t)
	if err != nil {
		return nil, err
	}
	var ttlStrategy *string
	var ttlMinutes *float64
	var ttlExpires *time.Time
	if t.TTL != nil {
		ttlStrategy, ttlMinutes, ttlExpires = &t.TTL.Strategy, &t.TTL.TTLMinutes, t.TTL.ExpiresAt
	}
	return []any{t.ThreadID, t.CreatedAt, t.UpdatedAt, t.StateUpdatedAt, c.Metadata, c.Config, c.Context, t.Status,
		c.Values, c.Interrupts, c.Error, ttlStrategy, ttlMinutes, ttlExpires, temporary}, nil
}

// GetThread implements driver.ThreadStorage.
func (db *DB) GetThread(ctx context.Context, id string, filter graphserver.Filter) (*graphserver.Thread, error) {
	t, err := getThread(ctx, db.pool, id, filter, false)
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
	err := db.tx(ctx, func(tx pgx.Tx) error {
		t, err := getThread(ctx, tx, id, filter, true)
		if err != nil {
			return err
		}
		metadata, err := jsoncol.Object(t.Metadata.Merge(patch.Metadata))
		if err != nil {
			return err
		}
		var ttlStrategy *string
		var ttlMinutes *float64
		var ttlExpires *time.Time
		if patch.TTL != nil && patch.TTL.Minutes > 0 {
			s := cmp.Or(patch.TTL.Strategy, graphserver.PruneDelete)
			m := patch.TTL.Minutes
			e := expiry(now, m)
			ttlStrategy, ttlMinutes, ttlExpires = &s, &m, &e
		} else if patch.TTL == nil && t.TTL != nil {
			s, m := t.TTL.Strategy, t.TTL.TTLMinutes
			e := expiry(now, m)
			ttlStrategy, ttlMinutes, ttlExpires = &s, &m, &e
		}
		r, err := getRow[threadRow](ctx, tx, `UPDATE threads SET metadata = ?, updated_at = ?, ttl_strategy = ?, ttl_minutes = ?,
			ttl_expires_at = ? WHERE thread_id = ? RETURNING `+threadColumns, metadata, now, ttlStrategy, ttlMinutes, ttlExpires, id)
		if err != nil {
			return fmt.Errorf("update thread: %w", err)
		}
		out, err = r.thread()
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteThread implements driver.ThreadStorage. Checkpoints, blobs,
// writes and runs go with the thread (ON DELETE CASCADE).
func (db *DB) DeleteThread(ctx context.Context, id string, filter graphserver.Filter) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		var w where
		w.add("thread_id = ?", id)
		if err := w.filter("metadata", filter); err != nil {
			return err
		}
		n, err := exec(ctx, tx, `DELETE FROM threads`+w.String(), w.args...)
		if err != nil {
			return fmt.Errorf("delete thread: %w", err)
		}
		if n == 0 {
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
	// Stateless runs' threads are not searched: the indexes that order the
	// search leave them out (migration 0004), and a query that did not
	// exclude them could not use those indexes.
	w.add("NOT temporary")
	if len(s.IDs) > 0 {
		w.add("thread_id = ANY(?::text[])", s.IDs)
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
			if err := w.containsJSON("state_values", v); err != nil {
				return nil, err
			}
		}
	}
	if err := w.filter("metadata", s.Filter); err != nil {
		return nil, err
	}
	return w, nil
}

// SearchThreads implements driver.ThreadStorage. It returns at most
// s.Limit+1 rows (no limit when s.Limit <= 0), sorted by s.SortBy (default
// created_at) and s.SortOrder (default desc), thread_id breaking ties.
func (db *DB) SearchThreads(ctx context.Context, s *graphserver.ThreadSearch) ([]*graphserver.Thread, error) {
	if s == nil {
		s = &graphserver.ThreadSearch{}
	}
	w, err := threadSearchWhere(s)
	if err != nil {
		return nil, err
	}
	lim, largs := limitOffset(s.Limit, s.Offset, true)
	rows, err := selectRows[threadRow](ctx, db.pool, `SELECT `+threadColumns+` FROM threads`+w.String()+
		orderBy(threadSorts, s.SortBy, s.SortOrder, "created_at", "thread_id")+lim, append(w.args, largs...)...)
	if err != nil {
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
	n, err := scalar[int](ctx, db.pool, `SELECT count(*) FROM threads`+w.String(), w.args...)
	if err != nil {
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
	err := db.tx(ctx, func(tx pgx.Tx) error {
		if _, err := getThread(ctx, tx, sourceID, filter, false); err != nil {
			return err
		}
		n, err := exec(ctx, tx, `INSERT INTO threads (`+threadColumns+`)
			SELECT ?, ?, ?, ?, metadata, config, context, CASE status WHEN 'busy' THEN 'idle' ELSE status END,
				state_values, interrupts, error, NULL, NULL, NULL
			FROM threads WHERE thread_id = ? ON CONFLICT (thread_id) DO NOTHING`, newID, now, now, now, sourceID)
		if err != nil {
			return fmt.Errorf("copy thread: %w", err)
		} else if n == 0 {
			return graphserver.Errorf(graphserver.ECONFLICT, "Thread with ID %s already exists", newID)
		}
		if err := copyCheckpoints(ctx, tx, sourceID, newID); err != nil {
			return err
		}
		out, err = getThread(ctx, tx, newID, nil, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PruneThreads implements driver.ThreadStorage. Strategy delete (or
// "") deletes the threads; keep_latest keeps each thread with only its
// latest root checkpoint, whose channel values are rewritten as whole
// blobs, and its pending writes. Ids that are missing or hidden by filter
// are skipped and not counted. An unknown strategy is EINVALID.
func (db *DB) PruneThreads(ctx context.Context, ids []string, strategy string, filter graphserver.Filter) (int, error) {
	if strategy == "" {
		strategy = graphserver.PruneDelete
	}
	if strategy != graphserver.PruneDelete && strategy != graphserver.PruneKeepLatest {
		return 0, graphserver.Errorf(graphserver.EINVALID, "The prune strategy %q is invalid: use delete or keep_latest.", strategy)
	}
	var count int
	err := db.tx(ctx, func(tx pgx.Tx) error {
		count = 0
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			if err := lockThread(ctx, tx, id, filter); graphserver.ErrorCode(err) == graphserver.ENOTFOUND {
				continue
			} else if err != nil {
				return err
			}
			if strategy == graphserver.PruneDelete {
				if _, err := exec(ctx, tx, `DELETE FROM threads WHERE thread_id = ?`, id); err != nil {
					return fmt.Errorf("prune thread %s: %w", id, err)
				}
			} else if err := keepLatest(ctx, tx, id); err != nil {
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

// SweepExpiredThreads implements driver.ThreadStorage: it applies the
// TTL of up to limit threads whose expiry is at or before now and that have
// no run in flight: strategy delete deletes them, keep_latest drops all but
// their latest checkpoint and disarms the TTL until the thread is next
// active. The rows are locked (skipping those another process sweeps), so
// a run created concurrently is never deleted with its thread.
func (db *DB) SweepExpiredThreads(ctx context.Context, now time.Time, limit int) (int, error) {
	var swept int
	err := db.tx(ctx, func(tx pgx.Tx) error {
		swept = 0
		type expired struct {
			ID       string `db:"thread_id"`
			Strategy string `db:"ttl_strategy"`
		}
		rows, err := selectRows[expired](ctx, tx, `SELECT thread_id, ttl_strategy FROM threads
			WHERE ttl_expires_at IS NOT NULL AND ttl_expires_at <= ? AND status <> 'busy'
			ORDER BY ttl_expires_at LIMIT ? FOR NO KEY UPDATE SKIP LOCKED`, now, limit)
		if err != nil {
			return fmt.Errorf("select expired threads: %w", err)
		}
		for _, r := range rows {
			if r.Strategy == graphserver.PruneKeepLatest {
				if err := keepLatest(ctx, tx, r.ID); err != nil {
					return fmt.Errorf("expire thread %s: %w", r.ID, err)
				}
				if _, err := exec(ctx, tx, `UPDATE threads SET ttl_expires_at = NULL WHERE thread_id = ?`, r.ID); err != nil {
					return fmt.Errorf("expire thread %s: %w", r.ID, err)
				}
			} else if _, err := exec(ctx, tx, `DELETE FROM threads WHERE thread_id = ?`, r.ID); err != nil {
				return fmt.Errorf("expire thread %s: %w", r.ID, err)
			}
			swept++
		}
		return nil
	})
	return swept, err
}
