package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/internal/jsoncol"
)

var _ driver.CronStorage = (*DB)(nil)

// cronRow is a crons row.
type cronRow struct {
	CronID         string     `db:"cron_id"`
	AssistantID    string     `db:"assistant_id"`
	ThreadID       *string    `db:"thread_id"`
	UserID         *string    `db:"user_id"`
	Schedule       string     `db:"schedule"`
	Timezone       *string    `db:"timezone"`
	OnRunCompleted *string    `db:"on_run_completed"`
	EndTime        *time.Time `db:"end_time"`
	NextRunDate    *time.Time `db:"next_run_date"`
	Enabled        bool       `db:"enabled"`
	Payload        string     `db:"payload"`
	Metadata       string     `db:"metadata"`
	CreatedAt      time.Time  `db:"created_at"`
	UpdatedAt      time.Time  `db:"updated_at"`
}

// cronColumns are the crons columns, qualified so that they stay
// unambiguous in queries joining threads.
const cronColumns = `crons.cron_id, crons.assistant_id, crons.thread_id, crons.user_id, crons.schedule,
	crons.timezone, crons.on_run_completed, crons.end_time, crons.next_run_date, crons.enabled, crons.payload,
	crons.metadata, crons.created_at, crons.updated_at`

func (r *cronRow) cron() (*graphserver.Cron, error) {
	c := &graphserver.Cron{
		CronID: r.CronID, AssistantID: r.AssistantID, ThreadID: deref(r.ThreadID), UserID: deref(r.UserID),
		Schedule: r.Schedule, Timezone: deref(r.Timezone), OnRunCompleted: deref(r.OnRunCompleted), Enabled: r.Enabled,
		EndTime: utcPtr(r.EndTime), NextRunDate: utcPtr(r.NextRunDate), CreatedAt: utc(r.CreatedAt), UpdatedAt: utc(r.UpdatedAt),
	}
	var err error
	if c.Metadata, err = jsoncol.DecodeObject(r.Metadata); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(r.Payload), &c.Payload); err != nil {
		return nil, fmt.Errorf("decode stored cron payload: %w", err)
	}
	return c, nil
}

func cronNotFound(id string) error {
	return graphserver.Errorf(graphserver.ENOTFOUND, "Cron with ID %s not found", id)
}

// cronAccess adds the access-control filters of a cron read or write: filter
// on the cron's metadata, threadFilter on its thread's (crons without a
// thread pass it).
func (w *where) cronAccess(filter, threadFilter graphserver.Filter) error {
	if err := w.filter("crons.metadata", filter); err != nil {
		return err
	}
	if len(threadFilter) == 0 {
		return nil
	}
	sub := where{terms: w.terms}
	if err := sub.filter("t.metadata", threadFilter); err != nil {
		return err
	}
	w.terms = sub.terms
	w.add(`(crons.thread_id IS NULL OR EXISTS (SELECT 1 FROM threads t WHERE t.thread_id = crons.thread_id AND `+
		sub.and()+`))`, sub.args...)
	return nil
}

// getCron reads one cron visible through the filters.
func getCron(ctx context.Context, q querier, id string, filter, threadFilter graphserver.Filter, forUpdate bool) (*graphserver.Cron, error) {
	var w where
	w.add("crons.cron_id = ?", id)
	if err := w.cronAccess(filter, threadFilter); err != nil {
		return nil, err
	}
	lock := ""
	if forUpdate {
		lock = " FOR NO KEY UPDATE OF crons"
	}
	r, err := getRow[cronRow](ctx, q, `SELECT `+cronColumns+` FROM crons`+w.String()+lock, w.args...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, cronNotFound(id)
	} else if err != nil {
		return nil, fmt.Errorf("get cron %s: %w", id, err)
	}
	return r.cron()
}

// CreateCron implements driver.CronStorage.
func (db *DB) CreateCron(ctx context.Context, c *graphserver.Cron, threadFilter graphserver.Filter) (*graphserver.Cron, error) {
	payload, err := jsoncol.Value(c.Payload)
	if err != nil {
		return nil, err
	}
	metadata, err := jsoncol.Object(c.Metadata)
	if err != nil {
		return nil, err
	}
	var out *graphserver.Cron
	err = db.tx(ctx, func(tx pgx.Tx) error {
		if _, err := getAssistant(ctx, tx, c.AssistantID, nil, false); err != nil {
			return err
		}
		if c.ThreadID != "" {
			if _, err := getThread(ctx, tx, c.ThreadID, threadFilter, false); err != nil {
				return err
			}
		}
		n, err := exec(ctx, tx, `INSERT INTO crons (cron_id, assistant_id, thread_id, user_id, schedule, timezone,
			on_run_completed, end_time, next_run_date, enabled, payload, metadata, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (cron_id) DO NOTHING`,
			c.CronID, c.AssistantID, nullText(c.ThreadID), nullText(c.UserID), c.Schedule, nullText(c.Timezone),
			nullText(c.OnRunCompleted), c.EndTime, c.NextRunDate, c.Enabled, payload, metadata, c.CreatedAt, c.UpdatedAt)
		if err != nil {
			return fmt.Errorf("insert cron: %w", err)
		} else if n == 0 {
			return graphserver.Errorf(graphserver.ECONFLICT, "Cron with ID %s already exists", c.CronID)
		}
		out, err = getCron(ctx, tx, c.CronID, nil, nil, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GetCron implements driver.CronStorage.
func (db *DB) GetCron(ctx context.Context, id string, filter, threadFilter graphserver.Filter) (*graphserver.Cron, error) {
	c, err := getCron(ctx, db.pool, id, filter, threadFilter, false)
	return c, translate(err)
}

// UpdateCron implements driver.CronStorage: metadata is merged
// shallowly, the other fields of u that are set replace the stored ones.
func (db *DB) UpdateCron(ctx context.Context, id string, u *driver.CronUpdate, filter, threadFilter graphserver.Filter) (*graphserver.Cron, error) {
	if u == nil {
		u = &driver.CronUpdate{}
	}
	sets := []string{"updated_at = ?"}
	args := []any{u.UpdatedAt}
	set := func(col string, v any) {
		sets = append(sets, col+" = ?")
		args = append(args, v)
	}
	if u.Schedule != nil {
		set("schedule", *u.Schedule)
	}
	if u.Timezone != nil {
		set("timezone", nullText(*u.Timezone))
	}
	if u.ClearEndTime {
		sets = append(sets, "end_time = NULL")
	} else if u.EndTime != nil {
		set("end_time", *u.EndTime)
	}
	if u.Enabled != nil {
		set("enabled", *u.Enabled)
	}
	if u.OnRunCompleted != nil {
		set("on_run_completed", nullText(*u.OnRunCompleted))
	}
	if u.Payload != nil {
		p, err := jsoncol.Value(u.Payload)
		if err != nil {
			return nil, err
		}
		set("payload", p)
	}
	if len(u.Metadata) > 0 {
		m, err := jsoncol.Object(u.Metadata)
		if err != nil {
			return nil, err
		}
		sets = append(sets, "metadata = metadata || ?::jsonb")
		args = append(args, m)
	}
	if u.ClearNextRunDate {
		sets = append(sets, "next_run_date = NULL")
	} else if u.NextRunDate != nil {
		set("next_run_date", *u.NextRunDate)
	}
	var out *graphserver.Cron
	err := db.tx(ctx, func(tx pgx.Tx) error {
		if _, err := getCron(ctx, tx, id, filter, threadFilter, true); err != nil {
			return err
		}
		if _, err := exec(ctx, tx, `UPDATE crons SET `+strings.Join(sets, ", ")+` WHERE cron_id = ?`, append(args, id)...); err != nil {
			return fmt.Errorf("update cron: %w", err)
		}
		var err error
		out, err = getCron(ctx, tx, id, nil, nil, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteCron implements driver.CronStorage.
func (db *DB) DeleteCron(ctx context.Context, id string, filter, threadFilter graphserver.Filter) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		var w where
		w.add("crons.cron_id = ?", id)
		if err := w.cronAccess(filter, threadFilter); err != nil {
			return err
		}
		n, err := exec(ctx, tx, `DELETE FROM crons`+w.String(), w.args...)
		if err != nil {
			return fmt.Errorf("delete cron: %w", err)
		} else if n == 0 {
			return cronNotFound(id)
		}
		return nil
	})
}

// cronSorts whitelists sort_by values.
var cronSorts = map[string]string{
	"cron_id":       "crons.cron_id",
	"assistant_id":  "crons.assistant_id",
	"thread_id":     "crons.thread_id",
	"next_run_date": "crons.next_run_date",
	"end_time":      "crons.end_time",
	"created_at":    "crons.created_at",
	"updated_at":    "crons.updated_at",
}

func cronSearchWhere(s *graphserver.CronSearch) (*where, error) {
	w := &where{}
	if s.AssistantID != "" {
		w.add("crons.assistant_id = ?", s.AssistantID)
	}
	if s.ThreadID != "" {
		w.add("crons.thread_id = ?", s.ThreadID)
	}
	if s.Enabled != nil {
		w.add("crons.enabled = ?", *s.Enabled)
	}
	if err := w.contains("crons.metadata", s.Metadata); err != nil {
		return nil, err
	}
	if err := w.cronAccess(s.Filter, s.ThreadFilter); err != nil {
		return nil, err
	}
	return w, nil
}

// selectCrons runs a query returning cron rows.
func selectCrons(ctx context.Context, q querier, query string, args ...any) ([]*graphserver.Cron, error) {
	rows, err := selectRows[cronRow](ctx, q, query, args...)
	if err != nil {
		return nil, err
	}
	out := make([]*graphserver.Cron, 0, len(rows))
	for i := range rows {
		c, err := rows[i].cron()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// SearchCrons implements driver.CronStorage. It returns at most
// s.Limit+1 crons (no limit when s.Limit <= 0).
func (db *DB) SearchCrons(ctx context.Context, s *graphserver.CronSearch) ([]*graphserver.Cron, error) {
	if s == nil {
		s = &graphserver.CronSearch{}
	}
	w, err := cronSearchWhere(s)
	if err != nil {
		return nil, err
	}
	lim, largs := limitOffset(s.Limit, s.Offset, true)
	out, err := selectCrons(ctx, db.pool, `SELECT `+cronColumns+` FROM crons`+w.String()+
		orderBy(cronSorts, s.SortBy, s.SortOrder, "crons.created_at", "crons.cron_id")+lim, append(w.args, largs...)...)
	if err != nil {
		return nil, translate(fmt.Errorf("search crons: %w", err))
	}
	return out, nil
}

// CountCrons implements driver.CronStorage.
func (db *DB) CountCrons(ctx context.Context, s *graphserver.CronSearch) (int, error) {
	if s == nil {
		s = &graphserver.CronSearch{}
	}
	w, err := cronSearchWhere(s)
	if err != nil {
		return 0, err
	}
	n, err := scalar[int](ctx, db.pool, `SELECT count(*) FROM crons`+w.String(), w.args...)
	if err != nil {
		return 0, translate(fmt.Errorf("count crons: %w", err))
	}
	return n, nil
}

// DueCrons implements driver.CronStorage.
func (db *DB) DueCrons(ctx context.Context, now time.Time, limit int) ([]*graphserver.Cron, error) {
	out, err := selectCrons(ctx, db.pool, `SELECT `+cronColumns+` FROM crons
		WHERE crons.enabled AND crons.next_run_date <= $1 AND (crons.end_time IS NULL OR crons.end_time >= $1)
		ORDER BY crons.next_run_date, crons.cron_id LIMIT $2`, now, max(limit, 1))
	if err != nil {
		return nil, translate(fmt.Errorf("due crons: %w", err))
	}
	return out, nil
}

// fireCron claims a cron firing inside tx (see driver.CronFiring) and
// reports whether it did. The compare-and-set on next_run_date is one
// UPDATE: of schedulers in several processes racing for one firing, one
// moves it and the others, waiting on its row lock, find it moved.
func fireCron(ctx context.Context, tx pgx.Tx, f *driver.CronFiring) (bool, error) {
	n, err := exec(ctx, tx, `UPDATE crons SET next_run_date = ?
		WHERE cron_id = ? AND enabled AND next_run_date = ?`, f.Next, f.CronID, f.Due)
	if err != nil {
		return false, fmt.Errorf("fire cron: %w", err)
	}
	return n == 1, nil
}

// FireCron implements driver.CronStorage.
func (db *DB) FireCron(ctx context.Context, f *driver.CronFiring) (bool, error) {
	var fired bool
	err := db.tx(ctx, func(tx pgx.Tx) error {
		var err error
		fired, err = fireCron(ctx, tx, f)
		return err
	})
	return fired, err
}
