package record

import (
	"encoding/json"
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
	// (cronSelectColumns); nil otherwise, and then absent from the wire.
	Now *time.Time `json:"now,omitempty"`
}

// MarshalJSON writes empty ThreadID, OnRunCompleted, Timezone and UserID as
// null, as the LangGraph API requires.
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
	SortBy    string   `json:"sort_by,omitempty"`    // cronSortColumns; default created_at
	SortOrder string   `json:"sort_order,omitempty"` // asc|desc; default desc
	Select    []string `json:"select,omitempty"`     // cronSelectColumns

	// Filter narrows by cron metadata with Filter operators, as
	// AssistantSearch.Filter does. Not settable over HTTP.
	Filter Filter `json:"-"`
	// ThreadFilter narrows thread crons by their thread's metadata; crons
	// without a thread are not affected. Not settable over HTTP.
	ThreadFilter Filter `json:"-"`
}

// nullString returns nil for "", else a pointer to s.
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
