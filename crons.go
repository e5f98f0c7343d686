package graphserver

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"
)

// Cron is a schedule that creates a run each time it fires: on its thread
// (a thread cron), or on a new thread each time (a stateless cron). Its
// Payload is the body of the runs it creates.
//
// On the wire, an empty ThreadID, OnRunCompleted, Timezone or UserID is null.
type Cron struct {
	CronID      string `json:"cron_id"`
	AssistantID string `json:"assistant_id"`
	// ThreadID is the thread the runs are created on; "" for a stateless cron.
	ThreadID string `json:"thread_id"`
	// OnRunCompleted says what happens to the thread of each run of a
	// stateless cron: OnCompletionDelete (the default) or OnCompletionKeep.
	// It is "" for a thread cron.
	OnRunCompleted string `json:"on_run_completed"`
	// EndTime, when set, is when the cron stops firing.
	EndTime *time.Time `json:"end_time"`
	// Schedule is a standard 5-field cron expression (minute hour
	// day-of-month month day-of-week) or a descriptor (@yearly, @monthly,
	// @weekly, @daily, @hourly, @every <duration>).
	Schedule string `json:"schedule"`
	// Timezone is the IANA time zone the schedule is read in; "" is UTC.
	Timezone  string    `json:"timezone"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Payload is the run-creation body of every run the cron creates.
	Payload RunCreate `json:"payload"`
	// UserID is the identity of the cron's creator, "" without auth.
	UserID string `json:"user_id"`
	// NextRunDate is when the cron fires next; nil once its next firing
	// would come after EndTime.
	NextRunDate *time.Time `json:"next_run_date"`
	Metadata    Metadata   `json:"metadata"`
	// Enabled is false for a cron that keeps its definition but does not
	// fire.
	Enabled bool `json:"enabled"`

	// Now is the server's time of a search that selected "now"
	// (CronSelectColumns); nil otherwise, and then absent from the wire.
	Now *time.Time `json:"now,omitempty"`
}

// MarshalJSON writes empty ThreadID, OnRunCompleted, Timezone and UserID as
// null, as the wire contract requires.
func (c Cron) MarshalJSON() ([]byte, error) {
	type plain Cron
	return json.Marshal(struct {
		plain
		ThreadID       *string `json:"thread_id"`
		OnRunCompleted *string `json:"on_run_completed"`
		Timezone       *string `json:"timezone"`
		UserID         *string `json:"user_id"`
	}{plain(c), nullString(c.ThreadID), nullString(c.OnRunCompleted), nullString(c.Timezone), nullString(c.UserID)})
}

// nullString returns nil for "", else a pointer to s.
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// CronCreate is the body of POST /threads/{thread_id}/runs/crons and POST
// /runs/crons: the fields of the runs to create (RunCreate; AssistantID is
// required) and the schedule.
type CronCreate struct {
	RunCreate
	// Schedule is required: see Cron.Schedule.
	Schedule string `json:"schedule"`
	// Timezone is an IANA time zone name; "" is UTC.
	Timezone string `json:"timezone,omitempty"`
	// EndTime, when set, is when the cron stops firing. On the wire it is
	// an ISO 8601 timestamp; one without a zone is read as UTC.
	EndTime *time.Time `json:"end_time,omitempty"`
	// Enabled defaults to true.
	Enabled *bool `json:"enabled,omitempty"`
	// OnRunCompleted applies to stateless crons only: OnCompletionDelete
	// (the default) deletes each run's thread after the run,
	// OnCompletionKeep keeps it. Thread crons ignore it.
	OnRunCompleted string `json:"on_run_completed,omitempty"`
}

// UnmarshalJSON decodes a cron creation body, reading end_time leniently
// (see parseAPITime).
func (c *CronCreate) UnmarshalJSON(data []byte) error {
	type plain CronCreate
	aux := struct {
		*plain
		EndTime json.RawMessage `json:"end_time"`
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	t, _, err := parseAPITime("end_time", aux.EndTime)
	c.EndTime = t
	return err
}

// CronPatch is the body of PATCH /runs/crons/{cron_id}. Nil fields are left
// unchanged; Metadata is merged shallowly into the cron's metadata (and into
// the metadata of the runs it creates).
type CronPatch struct {
	Schedule *string `json:"schedule,omitempty"`
	// Timezone sets the IANA time zone; "" makes it UTC.
	Timezone *string `json:"timezone,omitempty"`
	// EndTime sets the end time.
	EndTime *time.Time `json:"end_time,omitempty"`
	// ClearEndTime removes the end time; on the wire it is an explicit
	// "end_time": null (an absent end_time leaves it unchanged).
	ClearEndTime bool `json:"-"`
	// Enabled disables (false) or re-enables (true) the cron. Re-enabling
	// schedules the next firing from the time of the update.
	Enabled        *bool   `json:"enabled,omitempty"`
	OnRunCompleted *string `json:"on_run_completed,omitempty"` // stateless crons only

	// The fields below replace those of the payload.
	Input           json.RawMessage `json:"input,omitempty"`
	Metadata        Metadata        `json:"metadata,omitempty"`
	Config          Object          `json:"config,omitempty"`
	Context         Object          `json:"context,omitempty"`
	Webhook         *string         `json:"webhook,omitempty"`
	InterruptBefore Breakpoints     `json:"interrupt_before,omitempty"`
	InterruptAfter  Breakpoints     `json:"interrupt_after,omitempty"`
	StreamMode      StreamModes     `json:"stream_mode,omitempty"`
	StreamSubgraphs *bool           `json:"stream_subgraphs,omitempty"`
	StreamResumable *bool           `json:"stream_resumable,omitempty"`
	Durability      *string         `json:"durability,omitempty"`
}

// UnmarshalJSON decodes a cron patch: an explicit "end_time": null sets
// ClearEndTime; a timestamp is read leniently (see parseAPITime).
func (p *CronPatch) UnmarshalJSON(data []byte) error {
	type plain CronPatch
	aux := struct {
		*plain
		EndTime json.RawMessage `json:"end_time"`
	}{plain: (*plain)(p)}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	t, null, err := parseAPITime("end_time", aux.EndTime)
	p.EndTime, p.ClearEndTime = t, null
	return err
}

// apiTimeLayouts are the timestamp forms the API accepts: RFC 3339 (what
// both SDKs send for an aware time), and ISO 8601 without a zone (Python's
// isoformat() of a naive datetime), read as UTC.
var apiTimeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02",
}

// parseAPITime reads an optional timestamp field: absent gives nil, false;
// JSON null gives nil, true; a string in one of apiTimeLayouts gives the
// time in UTC with microsecond precision. Anything else is EINVALID.
func parseAPITime(field string, raw json.RawMessage) (*time.Time, bool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, false, nil
	}
	if string(raw) == "null" {
		return nil, true, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		for _, layout := range apiTimeLayouts {
			if t, err := time.Parse(layout, strings.TrimSpace(s)); err == nil {
				t = t.UTC().Truncate(time.Microsecond)
				return &t, false, nil
			}
		}
	}
	return nil, false, Errorf(EINVALID, "Invalid %s: must be an ISO 8601 timestamp such as 2025-01-02T15:04:05Z", field)
}

// CronSearch selects crons for SearchCrons and CountCrons (which ignores
// paging, sort and select).
type CronSearch struct {
	// AssistantID matches crons of that assistant (an assistant id or a
	// registered graph id).
	AssistantID string `json:"assistant_id,omitempty"`
	// ThreadID matches crons on that thread.
	ThreadID string `json:"thread_id,omitempty"`
	// Enabled, when set, matches enabled (true) or disabled (false) crons.
	Enabled   *bool    `json:"enabled,omitempty"`
	Metadata  Metadata `json:"metadata,omitempty"` // containment
	Limit     int      `json:"limit,omitempty"`
	Offset    int      `json:"offset,omitempty"`
	SortBy    string   `json:"sort_by,omitempty"`    // CronSortColumns; default created_at
	SortOrder string   `json:"sort_order,omitempty"` // asc|desc; default desc
	Select    []string `json:"select,omitempty"`     // CronSelectColumns

	// Filter narrows by cron metadata with Filter operators, as
	// AssistantSearch.Filter does. Not settable over HTTP.
	Filter Filter `json:"-"`
	// ThreadFilter narrows thread crons by their thread's metadata; crons
	// without a thread are not affected. Not settable over HTTP.
	ThreadFilter Filter `json:"-"`
}

// CronSortColumns are the values sort_by accepts on cron search.
var CronSortColumns = []string{"cron_id", "assistant_id", "thread_id", "next_run_date", "end_time", "created_at", "updated_at"}

// CronSelectColumns are the values select accepts on cron search ("now" is
// the server's time of the search).
var CronSelectColumns = []string{"cron_id", "assistant_id", "thread_id", "on_run_completed", "end_time", "schedule", "timezone", "created_at", "updated_at", "user_id", "payload", "next_run_date", "metadata", "enabled", "now"}

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
	Payload *RunCreate
	// Metadata is merged shallowly into the metadata.
	Metadata    Metadata
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
	CreateCron(ctx context.Context, c *Cron, threadFilter Filter) (*Cron, error)
	// GetCron returns a cron. ENOTFOUND when it is missing or hidden.
	GetCron(ctx context.Context, id string, filter, threadFilter Filter) (*Cron, error)
	// UpdateCron applies u and returns the cron after it. ENOTFOUND when it
	// is missing or hidden.
	UpdateCron(ctx context.Context, id string, u *CronUpdate, filter, threadFilter Filter) (*Cron, error)
	// DeleteCron deletes a cron (not the runs it created). ENOTFOUND when
	// it is missing or hidden.
	DeleteCron(ctx context.Context, id string, filter, threadFilter Filter) error
	// SearchCrons returns at most s.Limit+1 crons matching s (assistant id,
	// thread id, enabled, metadata containment, Filter, ThreadFilter),
	// sorted by s.SortBy (default created_at) and s.SortOrder (default
	// desc), ties broken by cron_id in the same order.
	SearchCrons(ctx context.Context, s *CronSearch) ([]*Cron, error)
	// CountCrons counts the crons matching s; paging and sort are ignored.
	CountCrons(ctx context.Context, s *CronSearch) (int, error)
	// DueCrons returns up to limit enabled crons whose next_run_date is at
	// or before now and whose end_time is null or at or after now, the
	// earliest next_run_date first.
	DueCrons(ctx context.Context, now time.Time, limit int) ([]*Cron, error)
	// FireCron claims the firing f on its own (see CronFiring) and reports
	// whether it did: false when the cron is gone, disabled, or no longer
	// due at f.Due (another scheduler claimed the firing). RunStorage's
	// CreateRun claims it together with the run it creates (RunInsert.Cron).
	FireCron(ctx context.Context, f *CronFiring) (bool, error)
}
