package driver

import (
	"context"
	"time"

	"github.com/graphserver/graphserver/record"
)

// CronUpdate is a change to a stored cron, computed by the Server from a
// CronPatch. Nil fields are left unchanged.
type CronUpdate struct {
	Schedule *string
	Timezone *string // "" stores null (UTC)
	EndTime  *time.Time
	// ClearEndTime sets end_time to null.
	ClearEndTime   bool
	Enabled        *bool
	OnRunCompleted *string
	// Payload replaces the payload.
	Payload *record.RunCreate
	// Metadata is merged shallowly into the metadata.
	Metadata    record.Metadata
	NextRunDate *time.Time
	// ClearNextRunDate sets next_run_date to null.
	ClearNextRunDate bool
	UpdatedAt        time.Time
}

// CronFiring claims one firing of a cron: the cron, still enabled, moves
// from NextRunDate Due to Next (nil: null, the cron has no next firing).
// Whoever moves it owns the firing, so a firing happens once however many
// schedulers share the storage.
type CronFiring struct {
	CronID string
	Due    time.Time
	Next   *time.Time
}

// CronStorage persists crons. Filters follow the Storage conventions: a
// filter hides what it does not match, as if it did not exist (ENOTFOUND).
// filter applies to a cron's metadata; threadFilter to the metadata of a
// thread cron's thread (crons without a thread pass it).
//
// A cron is deleted with its thread and with its assistant. Search sorts
// null values (thread_id, end_time, next_run_date) before any other in
// ascending order, after them in descending order.
type CronStorage interface {
	// CreateCron inserts c. ENOTFOUND when its assistant is missing, or
	// when its thread is missing or hidden by threadFilter; ECONFLICT when
	// the id is taken.
	CreateCron(ctx context.Context, c *record.Cron, threadFilter record.Filter) (*record.Cron, error)
	// GetCron returns a cron. ENOTFOUND when it is missing or hidden.
	GetCron(ctx context.Context, id string, filter, threadFilter record.Filter) (*record.Cron, error)
	// UpdateCron applies u and returns the cron after it. ENOTFOUND when it
	// is missing or hidden.
	UpdateCron(ctx context.Context, id string, u *CronUpdate, filter, threadFilter record.Filter) (*record.Cron, error)
	// DeleteCron deletes a cron (not the runs it created). ENOTFOUND when
	// it is missing or hidden.
	DeleteCron(ctx context.Context, id string, filter, threadFilter record.Filter) error
	// SearchCrons returns at most s.Limit+1 crons matching s (assistant id,
	// thread id, enabled, metadata containment, Filter, ThreadFilter),
	// sorted by s.SortBy (default created_at) and s.SortOrder (default
	// desc), ties broken by cron_id in the same order.
	SearchCrons(ctx context.Context, s *record.CronSearch) ([]*record.Cron, error)
	// CountCrons counts the crons matching s; paging and sort are ignored.
	CountCrons(ctx context.Context, s *record.CronSearch) (int, error)
	// DueCrons returns up to limit enabled crons whose next_run_date is at
	// or before now and whose end_time is null or at or after now, the
	// earliest next_run_date first.
	DueCrons(ctx context.Context, now time.Time, limit int) ([]*record.Cron, error)
	// FireCron claims the firing f on its own (see CronFiring) and reports
	// whether it did: false when the cron is gone, disabled, or no longer
	// due at f.Due (another scheduler claimed the firing). RunStorage's
	// CreateRun claims it together with the run it creates (RunInsert.Cron).
	FireCron(ctx context.Context, f *CronFiring) (bool, error)
}
