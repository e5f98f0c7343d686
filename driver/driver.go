package driver

import (
	"context"
	"time"

	"github.com/graphserver/graphserver/record"
)

// Storage is the persistence driver the Server runs on. Package sqlite
// implements it; internal/storagetest holds the behaviour every driver must
// show. Each method is atomic. Methods return *record.Error values: ENOTFOUND for a
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
	RunCheckpointer
	TruncateStorage
	// Ping checks that the storage answers.
	Ping(ctx context.Context) error
	// WithTx runs fn in one write transaction and commits it when fn
	// returns nil; an error from fn rolls back everything fn did and is
	// returned. The Server keeps its multi-row rules (a run's creation with
	// its multitask outcome, cancellations, a run's end, the lease sweep)
	// in the root package and runs them through WithTx, so a driver only
	// stores and queries (see Tx).
	//
	// fn may be called more than once (a driver may retry a transaction
	// that failed for a reason outside fn, or share it with other writes
	// and run fn again when one of those fails), so it must set its results
	// anew on each call. fn must be short: the context it gets may not be
	// cancelled with ctx (sqlite shares the transaction with other writes,
	// which a cancelled statement would roll back); WithTx checks ctx
	// before fn starts. fn must use only tx, not the Storage itself.
	WithTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
}

// Tx is one write transaction of a Storage (WithTx): small operations that
// store and query, and no rules. Errors are *Error values as for Storage.
// A Tx is valid only inside the function WithTx runs and is not safe for
// concurrent use.
type Tx interface {
	// CheckThread returns the metadata and config of thread id and its
	// pending and running runs (what a run's creation takes from its
	// thread, read with the check rather than before the transaction, in
	// one statement where the driver can), ENOTFOUND when the thread is
	// missing or hidden by filter (applied to its metadata). A driver whose
	// transactions run concurrently locks the thread's row until the
	// transaction ends (the rules take it first, so that the changes to one
	// thread's runs apply one after the other), and locks the runs that
	// ActiveRuns, SelectRuns and HeldRun return.
	CheckThread(ctx context.Context, id string, filter record.Filter) (*ThreadHead, error)
	// InsertThread inserts t, stored as ThreadStorage.CreateThread stores
	// it. ECONFLICT when the id is taken. A temporary thread (a stateless
	// run's, deleted when the run ends: RunKwargs.Temporary) is read by id
	// as any other, but ThreadStorage.SearchThreads and CountThreads skip
	// it, so that a driver need not index it.
	InsertThread(ctx context.Context, t *record.Thread, temporary bool) error
	// UpdateThread applies w to thread id (see ThreadWrite). ENOTFOUND when
	// the thread is missing.
	UpdateThread(ctx context.Context, id string, w *ThreadWrite) error
	// DeleteThread deletes a thread with its runs and checkpoints. A
	// missing thread is not an error.
	DeleteThread(ctx context.Context, id string) error

	// InsertRun inserts r with r.Status and attempt 0, or, when claim is
	// non-nil, with status running, attempt 1 and a lease held by
	// claim.Owner until claim.LeaseUntil. ECONFLICT when the id is taken.
	InsertRun(ctx context.Context, r *record.Run, claim *RunClaim) error
	// GetRun returns run runID with its Attempt. ENOTFOUND when missing.
	GetRun(ctx context.Context, runID string) (*record.Run, error)
	// ActiveRuns lists the pending and running runs of a thread.
	ActiveRuns(ctx context.Context, threadID string) ([]RunRef, error)
	// SelectRuns lists the runs sel names: by sel.ThreadID and sel.RunIDs
	// (runs of other threads are absent), or every run with status
	// sel.Status (pending or running; "all" means both), whose thread's
	// metadata matches filter.
	SelectRuns(ctx context.Context, sel *record.RunCancelSelect, filter record.Filter) ([]RunRef, error)
	// HeldRun returns run runID when owner holds it (status running, lease
	// owner). ENOTFOUND when it does not.
	HeldRun(ctx context.Context, runID, owner string) (*RunRef, error)
	// ExpiredRuns lists the running runs whose lease expired before now.
	ExpiredRuns(ctx context.Context, now time.Time) ([]RunRef, error)
	// SetRunStatus sets a run's status and updated_at, and clears its lease
	// and its recorded cancellation. ENOTFOUND when missing.
	SetRunStatus(ctx context.Context, runID, status string, now time.Time) error
	// SetRunCancel records a cancellation (CancelInterrupt or
	// CancelRollback) for the worker of a running run to observe
	// (RunStorage.RenewRunLease), and bumps updated_at.
	SetRunCancel(ctx context.Context, runID, action string, now time.Time) error
	// DeleteRun deletes a run with the checkpoints and pending writes it
	// wrote (see RunCheckpointer). A missing run is not an error.
	DeleteRun(ctx context.Context, threadID, runID string) error

	// InsertWebhook queues d in the outbox; a delivery whose id is queued
	// already is left as it is.
	InsertWebhook(ctx context.Context, d *WebhookDelivery, now time.Time) error
	// FireCron is CronStorage.FireCron inside the transaction.
	FireCron(ctx context.Context, f *CronFiring) (bool, error)

	// PutCheckpoints saves cps in order as Checkpointer.PutCheckpoint
	// saves each (ENOTFOUND likewise), recording each as written by its
	// RunID (see RunCheckpointer). cps are checked already: the caller
	// runs CheckCheckpoints before the transaction (a pass over every
	// blob, which would otherwise run on SQLite's single writer), and
	// PutCheckpoints does not check them again. It checks no lease: the
	// caller checks it in the same transaction (HeldRun, EndHeldRun), as
	// the end of a run does for the checkpoints it saves
	// (RunFinish.Checkpoints).
	PutCheckpoints(ctx context.Context, cps []*CheckpointRecord) error
	// GetCheckpoint is Checkpointer.GetCheckpoint inside the transaction:
	// it sees the transaction's own writes (ENOTFOUND likewise). The
	// record is the caller's. A run's creation reads its thread's latest
	// root checkpoint with it (RunInsert.Preload), where SQLite's writer
	// connection has the thread's pages cached and PostgreSQL holds the
	// thread's lock already.
	GetCheckpoint(ctx context.Context, threadID, ns, checkpointID string) (*CheckpointRecord, error)
	// EndHeldRun is HeldRun then SetRunStatus, in as few statements as the
	// driver can (the end of a run): when owner holds run runID (status
	// running, lease owner), its status becomes status as SetRunStatus
	// sets it, and its thread id is returned, with whether the thread has
	// another pending or running run (active: what ActiveRuns would list
	// then). ENOTFOUND, changing nothing, when owner does not hold it.
	EndHeldRun(ctx context.Context, runID, owner, status string, now time.Time) (threadID string, active bool, err error)
	// DeleteHeldRunThread is HeldRun then DeleteThread of the run's
	// thread, in as few statements as the driver can (the end of a
	// stateless run, whose thread is temporary): when owner holds run
	// runID (status running, lease owner), the run's thread is deleted
	// with its runs and checkpoints, and its id is returned. ENOTFOUND,
	// changing nothing, when owner does not hold it.
	DeleteHeldRunThread(ctx context.Context, runID, owner string) (threadID string, err error)
}

// ThreadWrite is a change Tx.UpdateThread applies to a thread. UpdatedAt is
// set to Now; zero fields leave their column as it is.
type ThreadWrite struct {
	Now time.Time
	// Status, when set, becomes the thread's status; with IfStatus set,
	// only when the status is IfStatus (the rest of the write applies
	// either way).
	Status   string
	IfStatus string
	// MergeMetadata's keys are set in the thread's metadata, each replacing
	// the key's value as a whole.
	MergeMetadata record.Metadata
	// Config, when non-nil, replaces the thread's config.
	Config record.Object
	// Summary, when non-nil, sets the thread's error (and, unless
	// KeepValues, its values and interrupts), sets state_updated_at to Now
	// and moves a TTL expiry to Now plus the thread's TTL. Summary.Status is
	// ignored: Status says the status.
	Summary    *ThreadSummary
	KeepValues bool
}

// ThreadHead is what Tx.CheckThread reads of a thread: its metadata and
// config, never nil (empty objects when the columns are), and its active
// runs.
type ThreadHead struct {
	Metadata record.Metadata
	Config   record.Object
	// Active lists the thread's pending and running runs, as
	// Tx.ActiveRuns lists (and locks) them.
	Active []RunRef
}

// RunClaim is the lease of a run inserted already claimed (Tx.InsertRun).
type RunClaim struct {
	Owner      string
	LeaseUntil time.Time
}

// RunRef is a run as the queue's rules see it inside a Tx.
type RunRef struct {
	RunID        string
	ThreadID     string
	Status       string
	Attempt      int
	CancelAction string // recorded cancellation ("" when none)
}

// AssistantStorage persists assistants and their versions.
type AssistantStorage interface {
	// CreateAssistant inserts a as version 1, with its version row. If the id
	// is taken it returns ECONFLICT (also when filter hides the existing
	// assistant), or with ifExists do_nothing the existing assistant.
	CreateAssistant(ctx context.Context, a *record.Assistant, ifExists string, filter record.Filter) (*record.Assistant, error)
	GetAssistant(ctx context.Context, id string, filter record.Filter) (*record.Assistant, error)
	// UpdateAssistant applies patch as a new version (max version + 1) and
	// makes it current.
	UpdateAssistant(ctx context.Context, id string, patch *record.AssistantPatch, now time.Time, filter record.Filter) (*record.Assistant, error)
	// DeleteAssistant deletes the assistant and its versions; with
	// deleteThreads, also the threads whose metadata.assistant_id is id.
	DeleteAssistant(ctx context.Context, id string, deleteThreads bool, filter record.Filter) error
	// SearchAssistants returns at most s.Limit+1 rows so callers can tell
	// whether more exist.
	SearchAssistants(ctx context.Context, s *record.AssistantSearch) ([]*record.Assistant, error)
	CountAssistants(ctx context.Context, s *record.AssistantSearch) (int, error)
	ListAssistantVersions(ctx context.Context, id string, s *record.AssistantVersionSearch) ([]*record.AssistantVersion, error)
	// SetAssistantVersion copies version onto the assistant and makes it current.
	SetAssistantVersion(ctx context.Context, id string, version int, now time.Time, filter record.Filter) (*record.Assistant, error)
}

// ThreadStorage persists threads.
type ThreadStorage interface {
	// CreateThread inserts t as given: the Server decides every field
	// (status, timestamps, TTL strategy and expiry). If the id exists it
	// returns ECONFLICT, or with ifExists do_nothing the existing thread.
	CreateThread(ctx context.Context, t *record.Thread, ifExists string, filter record.Filter) (*record.Thread, error)
	GetThread(ctx context.Context, id string, filter record.Filter) (*record.Thread, error)
	// UpdateThread merges patch.Metadata into the thread's metadata and sets
	// its TTL when given.
	UpdateThread(ctx context.Context, id string, patch *record.ThreadPatch, now time.Time, filter record.Filter) (*record.Thread, error)
	// DeleteThread deletes the thread with its checkpoints (and runs, once
	// runs exist).
	DeleteThread(ctx context.Context, id string, filter record.Filter) error
	// SearchThreads returns at most s.Limit+1 rows.
	SearchThreads(ctx context.Context, s *record.ThreadSearch) ([]*record.Thread, error)
	CountThreads(ctx context.Context, s *record.ThreadSearch) (int, error)
	// CopyThread creates thread newID with the source's metadata, config,
	// values and every checkpoint (rewritten to the new id). ENOTFOUND when the
	// source is missing or hidden.
	CopyThread(ctx context.Context, sourceID, newID string, now time.Time, filter record.Filter) (*record.Thread, error)
	// PruneThreads deletes the threads (strategy delete) or all but their
	// latest root checkpoint (keep_latest) and returns how many threads it
	// pruned; missing ids are not counted.
	PruneThreads(ctx context.Context, ids []string, strategy string, filter record.Filter) (int, error)
	// SweepExpiredThreads applies the TTL strategy (delete or keep_latest)
	// of up to limit threads whose TTL expired at now and that have no run
	// in flight, and returns how many it swept. A keep_latest thread's TTL is
	// disarmed until the thread is next active.
	SweepExpiredThreads(ctx context.Context, now time.Time, limit int) (int, error)
}

// Optimizer is an optional Storage capability: periodic maintenance such as
// refreshing the query planner's statistics. When the Storage implements it,
// Start's background work calls Optimize every Options.OptimizeInterval.
type Optimizer interface {
	Optimize(ctx context.Context) error
}

// RunCheckpointer is the part of Storage that writes the checkpoints of a
// claimed run, tied to the run and its lease: a run's graph writes its
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
	// PutRunCheckpoints is PutRunCheckpoint for each of cps in order, in
	// one transaction: all or none (ENOTFOUND, nothing saved, when owner
	// does not hold the run). The graph engine saves a run's input
	// checkpoint with the next one this way (CheckpointBatcher).
	//
	// For both, ctx's end only ever stops a save that has not started
	// writing, which then returns ctx.Err() having written nothing; a save
	// that has started completes whatever ctx does, and returns its own
	// result. The Server's run checkpointer, a CheckpointDeferrer, relies
	// on it.
	PutRunCheckpoints(ctx context.Context, runID, owner string, cps []*CheckpointRecord) error
}

// RunRecoverer is an optional RunStorage capability, detected with a type
// assertion: recovering at once the running runs whose worker is known to
// be gone, without waiting for their leases to expire. The sqlite driver
// implements it (an OS lock tells it which processes sharing the file are
// alive). A driver shared by processes that cannot see each other's
// liveness (several machines on one PostgreSQL database) does not: lease
// expiry (Tx.ExpiredRuns) is the rule there, and stays the rule for every driver.
type RunRecoverer interface {
	// RecoverRuns lists, inside a write transaction (as WithTx runs it),
	// the running runs whose worker is known to be gone, whatever their
	// lease expiry, and calls sweep with them when there are any (the
	// Server then applies to them the rules of an expired lease). Runs of
	// workers that may be alive are left alone.
	RecoverRuns(ctx context.Context, sweep func(ctx context.Context, tx Tx, runs []RunRef) error) error
}
