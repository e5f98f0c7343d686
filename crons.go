package graphserver

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/record"
	"github.com/robfig/cron/v3"
)

// Cron is a schedule that creates a run each time it fires: on its thread
// (a thread cron), or on a new thread each time (a stateless cron). Its
// Payload is the body of the runs it creates.
//
// On the wire, an empty ThreadID, OnRunCompleted, Timezone or UserID is null.
type Cron = record.Cron

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
type CronSearch = record.CronSearch

// cronSortColumns are the values sort_by accepts on cron search.
var cronSortColumns = []string{"cron_id", "assistant_id", "thread_id", "next_run_date", "end_time", "created_at", "updated_at"}

// cronSelectColumns are the values select accepts on cron search ("now" is
// the server's time of the search).
var cronSelectColumns = []string{"cron_id", "assistant_id", "thread_id", "on_run_completed", "end_time", "schedule", "timezone", "created_at", "updated_at", "user_id", "payload", "next_run_date", "metadata", "enabled", "now"}

// CronIntervalDefault is the default Options.CronInterval.
const CronIntervalDefault = time.Second

// cronFireBatch bounds the due crons read at once; FireDueCrons reads
// batches until none is left.
const cronFireBatch = 100

// maxScheduleLength bounds a cron schedule's length.
const maxScheduleLength = 256

// cronParser reads the schedules the API accepts: standard 5-field
// expressions and descriptors (@yearly, @annually, @monthly, @weekly,
// @daily, @midnight, @hourly, @every <duration>).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// cronSchedule is a parsed schedule and the time zone it is read in.
type cronSchedule struct {
	spec cron.Schedule
	loc  *time.Location
}

// parseCronSchedule parses schedule, read in the IANA time zone tz ("" is
// UTC). It returns EINVALID with the parser's message for a bad schedule,
// and for an unknown time zone.
func parseCronSchedule(schedule, tz string) (sched *cronSchedule, err error) {
	spec := strings.TrimSpace(schedule)
	switch {
	case spec == "":
		return nil, Errorf(EINVALID, "schedule is required: a cron expression such as \"0 9 * * 1-5\", or a descriptor such as @hourly.")
	case len(spec) > maxScheduleLength:
		return nil, Errorf(EINVALID, "Invalid schedule: longer than %d characters.", maxScheduleLength)
	case strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ="):
		return nil, Errorf(EINVALID, "Invalid schedule %q: give the time zone in the timezone field, not in the schedule.", schedule)
	}
	loc, err := loadTimezone(tz)
	if err != nil {
		return nil, err
	}
	defer func() {
		// The parser is a dependency: a panic on some input must not reach
		// the caller.
		if r := recover(); r != nil {
			sched, err = nil, Errorf(EINVALID, "Invalid schedule %q.", schedule)
		}
	}()
	s, err := cronParser.Parse(spec)
	if err != nil {
		return nil, Errorf(EINVALID, "Invalid schedule %q: %v.", schedule, err)
	}
	return &cronSchedule{spec: s, loc: loc}, nil
}

// loadTimezone returns the location of an IANA time zone name ("" and
// "UTC" are UTC). EINVALID for an unknown name. Names are looked up in the
// system's time zone database, then in Go's; a program running where
// neither exists imports time/tzdata.
func loadTimezone(tz string) (*time.Location, error) {
	if tz == "" || tz == "UTC" {
		return time.UTC, nil
	}
	if tz != "Local" && len(tz) <= 64 {
		if loc, err := time.LoadLocation(tz); err == nil {
			return loc, nil
		}
	}
	return nil, Errorf(EINVALID, "Invalid timezone %q: must be an IANA time zone name such as America/New_York.", tz)
}

// next returns the first firing strictly after t, in UTC, or false when the
// schedule never fires again (the parser looks five years ahead).
func (c *cronSchedule) next(t time.Time) (n time.Time, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			n, ok = time.Time{}, false
		}
	}()
	n = c.spec.Next(t.In(c.loc))
	if n.IsZero() {
		return n, false
	}
	return n.UTC(), true
}

// nextRun returns the firing of sched after t, nil when there is none or it
// comes after end.
func (c *cronSchedule) nextRun(t time.Time, end *time.Time) *time.Time {
	n, ok := c.next(t)
	if !ok || (end != nil && n.After(*end)) {
		return nil
	}
	return &n
}

// withCronID records the cron's id in the runs it creates, as
// config.configurable.cron_id (as the Platform does); when the payload has
// a context, in the context instead (a run cannot have both; the context
// is mirrored into configurable).
func withCronID(rc *RunCreate, id string) {
	if len(rc.Context) > 0 {
		rc.Context = rc.Context.Merge(Object{"cron_id": id})
		return
	}
	configurable, _ := asObject(rc.Config["configurable"])
	rc.Config = rc.Config.Merge(Object{"configurable": configurable.Merge(Object{"cron_id": id})})
}

// withoutCronID undoes withCronID: the payload as the client gave it.
func withoutCronID(rc *RunCreate, id string) {
	if rc.Context["cron_id"] == id {
		rc.Context = rc.Context.Clone()
		delete(rc.Context, "cron_id")
		if len(rc.Context) == 0 {
			rc.Context = nil
		}
	}
	if configurable, ok := asObject(rc.Config["configurable"]); ok && configurable["cron_id"] == id {
		configurable = configurable.Clone()
		delete(configurable, "cron_id")
		rc.Config = rc.Config.Clone()
		if len(configurable) == 0 {
			delete(rc.Config, "configurable")
		} else {
			rc.Config["configurable"] = configurable
		}
		if len(rc.Config) == 0 {
			rc.Config = nil
		}
	}
}

// CronCreateValue is the value crons:create authorization handlers see.
// Handlers may change Metadata: the cron is created
// with theirs.
type CronCreateValue struct {
	Payload  *RunCreate `json:"payload"`
	Schedule string     `json:"schedule"`
	CronID   string     `json:"cron_id"`
	ThreadID *string    `json:"thread_id"`
	UserID   *string    `json:"user_id"`
	EndTime  *time.Time `json:"end_time"`
	Metadata Metadata   `json:"metadata"`
}

// CronUpdateValue is the value crons:update authorization handlers see.
type CronUpdateValue struct {
	CronID         string     `json:"cron_id"`
	Schedule       *string    `json:"schedule"`
	EndTime        *time.Time `json:"end_time"`
	Enabled        *bool      `json:"enabled"`
	OnRunCompleted *string    `json:"on_run_completed"`
	Payload        *CronPatch `json:"payload"`
	Metadata       Metadata   `json:"metadata"`
}

// cronOwner returns the identity a cron created in ctx belongs to ("" when
// the request carries none). Access control records it as the cron's
// user_id.
func (s *Server) cronOwner(ctx context.Context) string {
	if u := UserFromContext(ctx); u != nil {
		return u.Identity
	}
	return ""
}

// cronRunContext returns the context a cron's runs are created in: the
// scheduler's, acting for the cron's owner (c.UserID), so that the run
// passes the threads:create_run handler as its owner and sees the owner in
// its configurable. A cron without an owner (created without access
// control) runs as no one: with an Auth set, its runs are refused.
func (s *Server) cronRunContext(ctx context.Context, c *Cron) context.Context {
	if c.UserID == "" {
		return ctx
	}
	return NewContextWithUser(ctx, &User{Identity: c.UserID, IsAuthenticated: true})
}

// CreateCron creates a cron: on thread threadID (each firing creates a run
// on that thread, with the payload's multitask strategy), or stateless when
// threadID is "" (each firing creates a run on a new thread, deleted after
// the run unless OnRunCompleted is keep). The cron first fires at the first
// time of its schedule after now.
//
// The run fields are checked as a run creation checks them. It returns
// EINVALID for a bad schedule (with the parser's message), time zone or
// field, EBADREQUEST as CreateRun does, ENOTFOUND when the assistant, or the
// thread, is missing or hidden. It blocks on storage.
func (s *Server) CreateCron(ctx context.Context, threadID string, c CronCreate) (*Cron, error) {
	stateless := threadID == ""
	if !stateless {
		var err error
		if threadID, err = parseUUID("thread", threadID); err != nil {
			return nil, err
		}
	}
	sched, err := parseCronSchedule(c.Schedule, c.Timezone)
	if err != nil {
		return nil, err
	}
	if stateless {
		if err := checkEnum("on_run_completed", &c.OnRunCompleted, OnCompletionDelete, []string{OnCompletionDelete, OnCompletionKeep}); err != nil {
			return nil, err
		}
	} else {
		c.OnRunCompleted = ""
	}
	probe := c.RunCreate // validation fills defaults: keep the payload as given
	if err := s.validateRunCreate(ctx, &probe, stateless); err != nil {
		return nil, err
	}
	asst, err := s.runAssistant(ctx, c.AssistantID)
	if err != nil {
		return nil, err
	}

	now := s.clock()
	id := uuid.NewString()
	payload := c.RunCreate
	payload.AssistantID = asst.AssistantID
	payload.Headers = nil
	withCronID(&payload, id)
	value := &CronCreateValue{Payload: &payload, Schedule: c.Schedule, CronID: id, ThreadID: nullString(threadID),
		UserID: nullString(s.cronOwner(ctx)), EndTime: c.EndTime, Metadata: c.Metadata.Clone()}
	if _, err := s.authFilter(ctx, "crons", "create", value); err != nil {
		return nil, err
	}
	var threadFilter Filter
	if !stateless {
		if threadFilter, err = s.authFilter(ctx, "threads", "read", &ThreadRef{ThreadID: threadID}); err != nil {
			return nil, err
		}
	}
	payload.Metadata = value.Metadata.Clone()
	if len(payload.Metadata) == 0 {
		payload.Metadata = nil
	}
	cr := &Cron{
		CronID:         id,
		AssistantID:    asst.AssistantID,
		ThreadID:       threadID,
		OnRunCompleted: c.OnRunCompleted,
		EndTime:        c.EndTime,
		Schedule:       strings.TrimSpace(c.Schedule),
		Timezone:       c.Timezone,
		CreatedAt:      now,
		UpdatedAt:      now,
		Payload:        payload,
		UserID:         s.cronOwner(ctx),
		NextRunDate:    sched.nextRun(now, c.EndTime),
		Metadata:       value.Metadata.Clone(),
		Enabled:        c.Enabled == nil || *c.Enabled,
	}
	if _, ok := sched.next(now); !ok {
		return nil, Errorf(EINVALID, "Invalid schedule %q: it never fires.", c.Schedule)
	}
	return s.storage.CreateCron(ctx, cr, threadFilter)
}

// cronThreadFilter returns the filter hiding cron id from a caller who may
// not read its thread (nil for a stateless cron), reading the cron through
// filter. ENOTFOUND when the cron is missing or hidden by filter.
func (s *Server) cronThreadFilter(ctx context.Context, id string, filter Filter) (*Cron, Filter, error) {
	c, err := s.storage.GetCron(ctx, id, filter, nil)
	if err != nil || c.ThreadID == "" {
		return c, nil, err
	}
	tf, err := s.authFilter(ctx, "threads", "read", &ThreadRef{ThreadID: c.ThreadID})
	return c, tf, err
}

// GetCron returns a cron. It returns EINVALID when id is not a UUID and
// ENOTFOUND when the cron is missing or hidden from the caller (a cron on a
// thread is hidden from who may not read the thread). It blocks on storage.
func (s *Server) GetCron(ctx context.Context, id string) (*Cron, error) {
	id, err := parseUUID("cron", id)
	if err != nil {
		return nil, err
	}
	filter, err := s.authFilter(ctx, "crons", "read", &CronRef{CronID: id})
	if err != nil {
		return nil, err
	}
	_, threadFilter, err := s.cronThreadFilter(ctx, id, filter)
	if err != nil {
		return nil, err
	}
	return s.storage.GetCron(ctx, id, filter, threadFilter)
}

// UpdateCron applies p to a cron and returns it. Changing the schedule or
// time zone, or re-enabling a disabled cron, schedules the next firing from
// now; an end time earlier than the next firing ends the cron, and moving or
// clearing the end time of an ended cron schedules it again from now.
// Metadata is merged into the cron's metadata and into that of its runs.
//
// It returns EINVALID for a malformed id or field (as CreateCron),
// ENOTFOUND when the cron is missing or hidden. It blocks on storage.
func (s *Server) UpdateCron(ctx context.Context, id string, p CronPatch) (*Cron, error) {
	id, err := parseUUID("cron", id)
	if err != nil {
		return nil, err
	}
	value := &CronUpdateValue{CronID: id, Schedule: p.Schedule, EndTime: p.EndTime, Enabled: p.Enabled,
		OnRunCompleted: p.OnRunCompleted, Payload: &p, Metadata: p.Metadata.Clone()}
	filter, err := s.authFilter(ctx, "crons", "update", value)
	if err != nil {
		return nil, err
	}
	p.Metadata = value.Metadata
	cur, threadFilter, err := s.cronThreadFilter(ctx, id, filter)
	if err != nil {
		return nil, err
	}
	now := s.clock()
	u := &driver.CronUpdate{UpdatedAt: now, Schedule: p.Schedule, Timezone: p.Timezone, Enabled: p.Enabled, Metadata: p.Metadata}
	schedule, tz := cur.Schedule, cur.Timezone
	if p.Schedule != nil {
		trimmed := strings.TrimSpace(*p.Schedule)
		schedule, u.Schedule = trimmed, &trimmed
	}
	if p.Timezone != nil {
		tz = *p.Timezone
	}
	sched, err := parseCronSchedule(schedule, tz)
	if err != nil {
		return nil, err
	}
	if _, ok := sched.next(now); !ok {
		return nil, Errorf(EINVALID, "Invalid schedule %q: it never fires.", schedule)
	}
	if p.OnRunCompleted != nil && cur.ThreadID == "" {
		orc := *p.OnRunCompleted
		if err := checkEnum("on_run_completed", &orc, OnCompletionDelete, []string{OnCompletionDelete, OnCompletionKeep}); err != nil {
			return nil, err
		}
		u.OnRunCompleted = &orc
	}
	if u.Payload, err = s.patchCronPayload(ctx, cur, &p); err != nil {
		return nil, err
	}

	end, endChanged := cur.EndTime, p.ClearEndTime || p.EndTime != nil
	if p.ClearEndTime {
		end, u.ClearEndTime = nil, true
	} else if p.EndTime != nil {
		end, u.EndTime = p.EndTime, p.EndTime
	}
	reschedule := p.Schedule != nil || p.Timezone != nil || (p.Enabled != nil && *p.Enabled && !cur.Enabled) ||
		(endChanged && cur.NextRunDate == nil)
	switch {
	case reschedule:
		u.NextRunDate = sched.nextRun(now, end)
		u.ClearNextRunDate = u.NextRunDate == nil
	case end != nil && cur.NextRunDate != nil && cur.NextRunDate.After(*end):
		u.ClearNextRunDate = true
	}
	return s.storage.UpdateCron(ctx, id, u, filter, threadFilter)
}

// patchCronPayload returns cur's payload with the run fields of p applied
// and checked as a run creation checks them, or nil when p changes none.
func (s *Server) patchCronPayload(ctx context.Context, cur *Cron, p *CronPatch) (*RunCreate, error) {
	rc := cur.Payload
	withoutCronID(&rc, cur.CronID)
	changed := false
	if p.Input != nil {
		rc.Input, changed = p.Input, true
	}
	if len(p.Metadata) > 0 {
		rc.Metadata, changed = rc.Metadata.Merge(p.Metadata), true
	}
	if p.Config != nil {
		rc.Config, changed = p.Config.Clone(), true
	}
	if p.Context != nil {
		rc.Context, changed = p.Context.Clone(), true
	}
	if p.Webhook != nil {
		rc.Webhook, changed = *p.Webhook, true
	}
	if p.InterruptBefore != nil {
		rc.InterruptBefore, changed = p.InterruptBefore, true
	}
	if p.InterruptAfter != nil {
		rc.InterruptAfter, changed = p.InterruptAfter, true
	}
	if p.StreamMode != nil {
		rc.StreamMode, changed = p.StreamMode, true
	}
	if p.StreamSubgraphs != nil {
		rc.StreamSubgraphs, changed = *p.StreamSubgraphs, true
	}
	if p.StreamResumable != nil {
		rc.StreamResumable, changed = *p.StreamResumable, true
	}
	if p.Durability != nil {
		rc.Durability, rc.CheckpointDuring, changed = *p.Durability, nil, true
	}
	if !changed {
		return nil, nil
	}
	probe := rc
	if err := s.validateRunCreate(ctx, &probe, cur.ThreadID == ""); err != nil {
		return nil, err
	}
	withCronID(&rc, cur.CronID)
	return &rc, nil
}

// DeleteCron deletes a cron; the runs it created stay. It returns EINVALID
// when id is not a UUID and ENOTFOUND when the cron is missing or hidden. It
// blocks on storage.
func (s *Server) DeleteCron(ctx context.Context, id string) error {
	id, err := parseUUID("cron", id)
	if err != nil {
		return err
	}
	filter, err := s.authFilter(ctx, "crons", "delete", &CronRef{CronID: id})
	if err != nil {
		return err
	}
	_, threadFilter, err := s.cronThreadFilter(ctx, id, filter)
	if err != nil {
		return err
	}
	return s.storage.DeleteCron(ctx, id, filter, threadFilter)
}

// checkCronSearch validates the filters shared by search and count: the
// assistant id (a UUID or graph id) and thread id, canonicalised. It also
// narrows q to what the caller may see: crons:search, and for thread crons
// threads:read of q's thread or threads:search.
func (s *Server) checkCronSearch(ctx context.Context, q *CronSearch) error {
	if err := checkFilter("metadata", q.Metadata); err != nil {
		return err
	}
	var err error
	if q.AssistantID != "" {
		if q.AssistantID, err = s.resolveAssistantID(q.AssistantID); err != nil {
			return err
		}
	}
	if q.ThreadID != "" {
		if q.ThreadID, err = parseUUID("thread", q.ThreadID); err != nil {
			return err
		}
	}
	filter, err := s.authFilter(ctx, "crons", "search", q)
	if err != nil {
		return err
	}
	var threadFilter Filter
	if q.ThreadID != "" {
		threadFilter, err = s.authFilter(ctx, "threads", "read", &ThreadRef{ThreadID: q.ThreadID})
	} else {
		threadFilter, err = s.authFilter(ctx, "threads", "search", &ThreadSearch{})
	}
	if err != nil {
		return err
	}
	q.Filter = q.Filter.And(filter)
	q.ThreadFilter = q.ThreadFilter.And(threadFilter)
	return nil
}

// SearchCrons returns one page of the crons matching q, sorted by q.SortBy
// (default created_at) and q.SortOrder (default desc). Limit 0 means
// SearchLimitDefault.
//
// It returns EINVALID when the assistant or thread id is malformed, limit
// is outside 1..SearchLimitMax, offset is negative, or sort_by, sort_order or a
// select field is not one the API offers (cronSortColumns,
// cronSelectColumns). It blocks on storage.
func (s *Server) SearchCrons(ctx context.Context, q CronSearch) (*Page[*Cron], error) {
	if err := checkPaging(&q.Limit, &q.Offset); err != nil {
		return nil, err
	}
	if err := checkSort(&q.SortBy, &q.SortOrder, "created_at", cronSortColumns); err != nil {
		return nil, err
	}
	if err := checkSelect(q.Select, cronSelectColumns); err != nil {
		return nil, err
	}
	if err := s.checkCronSearch(ctx, &q); err != nil {
		return nil, err
	}
	rows, err := s.storage.SearchCrons(ctx, &q)
	if err != nil {
		return nil, err
	}
	if slices.Contains(q.Select, "now") {
		now := s.clock()
		for _, c := range rows {
			c.Now = &now
		}
	}
	return newPage(rows, q.Limit, q.Offset, q.Select), nil
}

// CountCrons counts the crons matching q's assistant, thread, enabled and
// metadata filters; paging, sort and select are ignored. It returns
// EINVALID as SearchCrons does for bad ids. It blocks on storage.
func (s *Server) CountCrons(ctx context.Context, q CronSearch) (int, error) {
	if err := s.checkCronSearch(ctx, &q); err != nil {
		return 0, err
	}
	return s.storage.CountCrons(ctx, &q)
}

// FireDueCrons fires every cron due at the server's current time
// (Options.Now) and returns how many runs it created. Each firing creates
// one run through the same path as CreateRun (a thread cron's run on its
// thread with the payload's multitask strategy; a stateless cron's on a new
// thread), and schedules the cron's next firing after now: a cron that
// missed several firings (the server was down) fires once, then follows its
// schedule. A firing is claimed in the transaction that creates its run, so
// it happens once however many Servers share the storage and call
// FireDueCrons at once. A firing whose run cannot be created (the thread
// refuses it, the assistant is gone) is logged and skipped.
//
// A started Server calls it every Options.CronInterval; call it yourself to
// drive crons from your own clock. It returns EUNAVAILABLE after Close, and
// the first storage error.
func (s *Server) FireDueCrons(ctx context.Context) (int, error) {
	if s.isClosed() {
		return 0, ErrServerClosed
	}
	now := s.clock()
	fired := 0
	seen := map[string]bool{}
	for {
		due, err := s.storage.DueCrons(ctx, now, cronFireBatch)
		if err != nil {
			return fired, err
		}
		progress := false
		for _, c := range due {
			if seen[c.CronID] {
				continue // its firing failed in a way that did not advance it
			}
			seen[c.CronID], progress = true, true
			ok, err := s.fireCron(ctx, c, now)
			if err != nil {
				return fired, err
			}
			if ok {
				fired++
			}
		}
		if len(due) < cronFireBatch || !progress {
			return fired, nil
		}
	}
}

// fireCron creates the run of one due firing of c and reports whether it
// did. The firing is skipped (its next date set) when the run cannot be
// created; it is left for a later try when the server is closing or storage
// fails, which is the error returned.
func (s *Server) fireCron(ctx context.Context, c *Cron, now time.Time) (bool, error) {
	log := s.logger.With("cron_id", c.CronID)
	due := *c.NextRunDate
	var next *time.Time
	if sched, err := parseCronSchedule(c.Schedule, c.Timezone); err != nil {
		log.Error("cron schedule unreadable: the cron stops", "schedule", c.Schedule, "timezone", c.Timezone, "error", err)
	} else {
		next = sched.nextRun(now, c.EndTime)
	}
	firing := &driver.CronFiring{CronID: c.CronID, Due: due, Next: next}
	rc := c.Payload
	withCronID(&rc, c.CronID)
	if c.ThreadID == "" {
		rc.OnCompletion = cmp.Or(c.OnRunCompleted, OnCompletionDelete)
	}
	run, _, err := s.createRun(s.cronRunContext(ctx, c), c.ThreadID, &rc, firing)
	if err == nil {
		log.Debug("cron fired", "run_id", run.RunID, "thread_id", run.ThreadID, "next_run_date", next)
		return true, nil
	}
	switch ErrorCode(err) {
	case EUNAVAILABLE, EINTERNAL:
		// Closing, or storage failing: the firing stays due.
		return false, err
	}
	skipped, ferr := s.storage.FireCron(ctx, firing)
	if ferr != nil {
		return false, ferr
	}
	if skipped {
		log.Warn("cron firing skipped: its run could not be created", "due", due, "error", ErrorMessage(err))
	}
	return false, nil
}

// scheduleCrons fires due crons every cronInterval until the server drains.
func (s *Server) scheduleCrons(ctx context.Context) {
	s.every(ctx, s.cronInterval, func(ctx context.Context) {
		if _, err := s.FireDueCrons(ctx); err != nil && ctx.Err() == nil && !s.isClosed() {
			s.logger.Error("fire crons", "error", err)
		}
	})
}
