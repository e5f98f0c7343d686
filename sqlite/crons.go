package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/internal/jsoncol"
)

var _ driver.CronStorage = (*DB)(nil)

// cronRow is a crons row.
type cronRow struct {
	CronID         string         `db:"cron_id"`
	AssistantID    string         `db:"assistant_id"`
	ThreadID       sql.NullString `db:"thread_id"`
	UserID         sql.NullString `db:"user_id"`
	Schedule       string         `db:"schedule"`
	Timezone       sql.NullString `db:"timezone"`
	OnRunCompleted sql.NullString `db:"on_run_completed"`
	EndTime        sql.NullString `db:"end_time"`
	NextRunDate    sql.NullString `db:"next_run_date"`
	Enabled        bool           `db:"enabled"`
	Payload        string         `db:"payload"`
	Metadata       string         `db:"metadata"`
	CreatedAt      string         `db:"created_at"`
	UpdatedAt      string         `db:"updated_at"`
}

// cronColumns are the crons columns, qualified so that they stay
// unambiguous in queries joining threads.
const cronColumns = `crons.cron_id, crons.assistant_id, crons.thread_id, crons.user_id, crons.schedule,
	crons.timezone, crons.on_run_completed, crons.end_time, crons.next_run_date, crons.enabled, crons.payload,
	crons.metadata, crons.created_at, crons.updated_at`

func (r *cronRow) cron() (*graphserver.Cron, error) {
	c := &graphserver.Cron{
		CronID: r.CronID, AssistantID: r.AssistantID, ThreadID: r.ThreadID.String, UserID: r.UserID.String,
		Schedule: r.Schedule, Timezone: r.Timezone.String, OnRunCompleted: r.OnRunCompleted.String, Enabled: r.Enabled,
	}
	var err error
	if c.EndTime, err = parseNullTime(r.EndTime); err != nil {
		return nil, err
	}
	if c.NextRunDate, err = parseNullTime(r.NextRunDate); err != nil {
		return nil, err
	}
	if c.CreatedAt, err = parseTime(r.CreatedAt); err != nil {
		return nil, err
	}
	if c.UpdatedAt, err = parseTime(r.UpdatedAt); err != nil {
		return nil, err
	}
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

// nullText stores "" as NULL.
func nullText(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
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
	// The thread's conditions go in a subquery; its json_each aliases
	// continue the outer numbering so that they stay unique.
	sub := where{n: w.n}
	if err := sub.filter("t.metadata", threadFilter); err != nil {
		return err
	}
	w.n = sub.n
	w.add(`(crons.thread_id IS NULL OR EXISTS (SELECT 1 FROM threads t WHERE t.thread_id = crons.thread_id AND `+
		strings.Join(sub.conds, " AND ")+`))`, sub.args...)
	return nil
}

// getCron reads one cron visible through the filters.
func getCron(ctx context.Context, q sqlx.QueryerContext, id string, filter, threadFilter graphserver.Filter) (*graphserver.Cron, error) {
	var w where
	w.add("crons.cron_id = ?", id)
	if err := w.cronAccess(filter, threadFilter); err != nil {
		return nil, err
	}
	var r cronRow
	err := sqlx.GetContext(ctx, q, &r, `SELECT `+cronColumns+` FROM crons`+w.String(), w.args...)
	if errors.Is(err, sql.ErrNoRows) {
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
	err = db.write(ctx, func(tx *connTx) error {
		if _, err := getAssistant(ctx, tx, c.AssistantID, nil); err != nil {
			return err
		}
		if c.ThreadID != "" {
			if _, err := getThread(ctx, tx, c.ThreadID, threadFilter); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO crons (cron_id, assistant_id, thread_id, user_id, schedule, timezone,
			on_run_completed, end_time, next_run_date, enabled, payload, metadata, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.CronID, c.AssistantID, nullText(c.ThreadID), nullText(c.UserID), c.Schedule, nullText(c.Timezone),
			nullText(c.OnRunCompleted), nullTime(c.EndTime), nullTime(c.NextRunDate), c.Enabled, payload, metadata,
			formatTime(c.CreatedAt), formatTime(c.UpdatedAt))
		if isConstraint(err) {
			return graphserver.Errorf(graphserver.ECONFLICT, "Cron with ID %s already exists", c.CronID)
		} else if err != nil {
			return fmt.Errorf("insert cron: %w", err)
		}
		out, err = getCron(ctx, tx, c.CronID, nil, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GetCron implements driver.CronStorage.
func (db *DB) GetCron(ctx context.Context, id string, filter, threadFilter graphserver.Filter) (*graphserver.Cron, error) {
	c, err := getCron(ctx, db.reader, id, filter, threadFilter)
	return c, translate(err)
}

// UpdateCron implements driver.CronStorage: metadata is merged
// shallowly, the other fields of u that are set replace the stored ones.
func (db *DB) UpdateCron(ctx context.Context, id string, u *driver.CronUpdate, filter, threadFilter graphserver.Filter) (*graphserver.Cron, error) {
	if u == nil {
		u = &driver.CronUpdate{}
	}
	sets := []string{"updated_at = ?"}
	args := []any{formatTime(u.UpdatedAt)}
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
		set("end_time", nil)
	} else if u.EndTime != nil {
		set("end_time", formatTime(*u.EndTime))
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
		sets = append(sets, "metadata = json_patch(metadata, ?)")
		args = append(args, m)
	}
	if u.ClearNextRunDate {
		set("next_run_date", nil)
	} else if u.NextRunDate != nil {
		set("next_run_date", formatTime(*u.NextRunDate))
	}
	var out *graphserver.Cron
	err := db.write(ctx, func(tx *connTx) error {
		if _, err := getCron(ctx, tx, id, filter, threadFilter); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE crons SET `+strings.Join(sets, ", ")+` WHERE cron_id = ?`,
			append(args, id)...); err != nil {
			return fmt.Errorf("update cron: %w", err)
		}
		var err error
		out, err = getCron(ctx, tx, id, nil, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteCron implements driver.CronStorage.
func (db *DB) DeleteCron(ctx context.Context, id string, filter, threadFilter graphserver.Filter) error {
	return db.write(ctx, func(tx *connTx) error {
		var w where
		w.add("crons.cron_id = ?", id)
		if err := w.cronAccess(filter, threadFilter); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM crons`+w.String(), w.args...)
		if err != nil {
			return fmt.Errorf("delete cron: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
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
func selectCrons(ctx context.Context, q sqlx.QueryerContext, query string, args ...any) ([]*graphserver.Cron, error) {
	var rows []cronRow
	if err := sqlx.SelectContext(ctx, q, &rows, query, args...); err != nil {
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
	q := `SELECT ` + cronColumns + ` FROM crons` + w.String() +
		orderBy(cronSorts, s.SortBy, s.SortOrder, "crons.created_at", "crons.cron_id") + lim
	out, err := selectCrons(ctx, db.reader, q, append(w.args, largs...)...)
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
	var n int
	if err := db.reader.GetContext(ctx, &n, `SELECT count(*) FROM crons`+w.String(), w.args...); err != nil {
		return 0, translate(fmt.Errorf("count crons: %w", err))
	}
	return n, nil
}

// DueCrons implements driver.CronStorage.
func (db *DB) DueCrons(ctx context.Context, now time.Time, limit int) ([]*graphserver.Cron, error) {
	ts := formatTime(now)
	out, err := selectCrons(ctx, db.reader, `SELECT `+cronColumns+` FROM crons
		WHERE crons.enabled = 1 AND crons.next_run_date <= ? AND (crons.end_time IS NULL OR crons.end_time >= ?)
		ORDER BY crons.next_run_date, crons.cron_id LIMIT ?`, ts, ts, max(limit, 1))
	if err != nil {
		return nil, translate(fmt.Errorf("due crons: %w", err))
	}
	return out, nil
}

// fireCron claims a cron firing inside tx (see driver.CronFiring) and
// reports whether it did.
func fireCron(ctx context.Context, tx *connTx, f *driver.CronFiring) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE crons SET next_run_date = ?
		WHERE cron_id = ? AND enabled = 1 AND next_run_date = ?`, nullTime(f.Next), f.CronID, formatTime(f.Due))
	if err != nil {
		return false, fmt.Errorf("fire cron: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("fire cron: %w", err)
	}
	return n == 1, nil
}

// FireCron implements driver.CronStorage.
func (db *DB) FireCron(ctx context.Context, f *driver.CronFiring) (bool, error) {
	var fired bool
	err := db.write(ctx, func(tx *connTx) error {
		var err error
		fired, err = fireCron(ctx, tx, f)
		return err
	})
	return fired, err
}
