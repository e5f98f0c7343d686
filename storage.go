package graphserver

import (
	"context"
	"time"
)

// Storage is the persistence driver the Server runs on. Package sqlite
// implements it; internal/storagetest holds the behaviour every driver must
// show. Each method is atomic. Methods return *Error values: ENOTFOUND for a
// missing resource or one hidden by the given Filter, ECONFLICT for an id
// already taken, EINVALID for input the driver cannot store.
//
// It is split by concern so that code needing one part takes only that part.
type Storage interface {
	AssistantStorage
	ThreadStorage
	ItemStorage
	RunStorage
	CronStorage
	Checkpointer
	TruncateStorage
	// Ping checks that the storage answers.
	Ping(ctx context.Context) error
}

// AssistantStorage persists assistants and their versions.
type AssistantStorage interface {
	// CreateAssistant inserts a as version 1, with its version row. If the id
	// is taken it returns ECONFLICT (also when filter hides the existing
	// assistant), or with ifExists do_nothing the existing assistant.
	CreateAssistant(ctx context.Context, a *Assistant, ifExists string, filter Filter) (*Assistant, error)
	GetAssistant(ctx context.Context, id string, filter Filter) (*Assistant, error)
	// UpdateAssistant applies patch as a new version (max version + 1) and
	// makes it current.
	UpdateAssistant(ctx context.Context, id string, patch *AssistantPatch, now time.Time, filter Filter) (*Assistant, error)
	// DeleteAssistant deletes the assistant and its versions; with
	// deleteThreads, also the threads whose metadata.assistant_id is id.
	DeleteAssistant(ctx context.Context, id string, deleteThreads bool, filter Filter) error
	// SearchAssistants returns at most s.Limit+1 rows so callers can tell
	// whether more exist.
	SearchAssistants(ctx context.Context, s *AssistantSearch) ([]*Assistant, error)
	CountAssistants(ctx context.Context, s *AssistantSearch) (int, error)
	ListAssistantVersions(ctx context.Context, id string, s *AssistantVersionSearch) ([]*AssistantVersion, error)
	// SetAssistantVersion copies version onto the assistant and makes it current.
	SetAssistantVersion(ctx context.Context, id string, version int, now time.Time, filter Filter) (*Assistant, error)
}

// ThreadStorage persists threads.
type ThreadStorage interface {
	// CreateThread inserts t. If the id exists it returns ECONFLICT, or with
	// ifExists do_nothing the existing thread.
	CreateThread(ctx context.Context, t *Thread, ifExists string, filter Filter) (*Thread, error)
	GetThread(ctx context.Context, id string, filter Filter) (*Thread, error)
	// UpdateThread merges patch.Metadata into the thread's metadata and sets
	// its TTL when given.
	UpdateThread(ctx context.Context, id string, patch *ThreadPatch, now time.Time, filter Filter) (*Thread, error)
	// DeleteThread deletes the thread with its checkpoints (and runs, once
	// runs exist).
	DeleteThread(ctx context.Context, id string, filter Filter) error
	// SearchThreads returns at most s.Limit+1 rows.
	SearchThreads(ctx context.Context, s *ThreadSearch) ([]*Thread, error)
	CountThreads(ctx context.Context, s *ThreadSearch) (int, error)
	// CopyThread creates thread newID with the source's metadata, config,
	// values and every checkpoint (rewritten to the new id). ENOTFOUND when the
	// source is missing or hidden.
	CopyThread(ctx context.Context, sourceID, newID string, now time.Time, filter Filter) (*Thread, error)
	// PruneThreads deletes the threads (strategy delete) or all but their
	// latest root checkpoint (keep_latest) and returns how many threads it
	// pruned; missing ids are not counted.
	PruneThreads(ctx context.Context, ids []string, strategy string, filter Filter) (int, error)
	// SweepExpiredThreads applies the TTL strategy (delete or keep_latest)
	// of up to limit threads whose TTL expired at now and that have no run
	// in flight, and returns how many it swept. A keep_latest thread's TTL is
	// disarmed until the thread is next active.
	SweepExpiredThreads(ctx context.Context, now time.Time, limit int) (int, error)
	// SetThreadSummary records a thread's latest values, interrupts, status and
	// error after a run or a state update, bumping updated_at and
	// state_updated_at. The status stays busy while the thread has a pending
	// or running run.
	SetThreadSummary(ctx context.Context, id string, s *ThreadSummary, now time.Time) error
}

// Optimizer is an optional Storage capability: periodic maintenance such as
// refreshing the query planner's statistics. When the Storage implements it,
// Start's background work calls Optimize every Options.OptimizeInterval.
type Optimizer interface {
	Optimize(ctx context.Context) error
}

// RunCheckpointer is an optional Storage capability, detected with a type
// assertion: the checkpoint writes of a claimed run, tied to the run and its
// lease. When the Storage implements it, a run's graph writes its
// checkpoints through it, so that a rollback deletes everything the run
// wrote and an execution that lost its lease cannot write beside the new
// claim.
type RunCheckpointer interface {
	// PutRunCheckpoint is PutCheckpoint for run runID, in a transaction that
	// first checks that owner holds the run (status running, lease owner):
	// ENOTFOUND when it does not.
	PutRunCheckpoint(ctx context.Context, runID, owner string, cp *CheckpointRecord) error
	// PutRunWrites is PutWrites for run runID held by owner (ENOTFOUND
	// otherwise). The writes are the run's: deleting the run (a rollback,
	// DeleteRun) deletes them, and puts back the writes of the task they
	// replaced.
	PutRunWrites(ctx context.Context, runID, owner, threadID, ns, checkpointID, taskID string, writes []PendingWrite) error
}

// RunStatusReader is an optional RunStorage capability, detected with a type
// assertion: the statuses of many runs in one read. The Server uses it to
// watch the runs its streams follow but do not execute; without it, it
// reads them one GetRun each.
type RunStatusReader interface {
	// RunStatuses returns the status of each run of runIDs that exists;
	// missing runs are absent from the map.
	RunStatuses(ctx context.Context, runIDs []string) (map[string]string, error)
}

// RunRecoverer is an optional RunStorage capability, detected with a type
// assertion: recovering at once the running runs whose worker is known to
// be gone, without waiting for their leases to expire. The sqlite driver
// implements it (an OS lock tells it which processes sharing the file are
// alive). A driver shared by processes that cannot see each other's
// liveness (several machines on one PostgreSQL database) does not: lease
// expiry (SweepRuns) is the rule there, and stays the rule for every driver.
type RunRecoverer interface {
	// RecoverRuns does what SweepRuns does, for the running runs whose
	// worker is known to be gone, whatever their lease expiry, and returns
	// the runs it changed. Runs of workers that may be alive are left alone.
	RecoverRuns(ctx context.Context, now time.Time, maxAttempts int) ([]SweptRun, error)
}
