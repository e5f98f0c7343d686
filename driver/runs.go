package driver

import (
	"context"
	"encoding/json"
	"time"

	"github.com/graphserver/graphserver/record"
)

// RunStorage persists runs, their queue and the webhook outbox. Every method
// is one transaction. Runs are created, cancelled, finished and swept by the
// Server's rules through Storage.WithTx.
type RunStorage interface {
	// GetRun returns a run; threadID "" matches any thread. ENOTFOUND if
	// missing or hidden by filter (applied to the thread's metadata).
	GetRun(ctx context.Context, threadID, runID string, filter record.Filter) (*record.Run, error)
	// ListRuns lists a thread's runs newest first. ENOTFOUND if the thread is
	// missing or hidden.
	ListRuns(ctx context.Context, threadID string, s *record.RunSearch) ([]*record.Run, error)
	// DeleteRun deletes a finished run with the checkpoints it wrote.
	// ENOTFOUND if missing, ECONFLICT if pending or running.
	DeleteRun(ctx context.Context, threadID, runID string, filter record.Filter) error

	// ClaimRun takes the oldest pending run with created_at <= now whose
	// thread has no running run, marks it running under a lease held by owner
	// until leaseUntil and increments its attempt. It returns nil, nil when no
	// run is eligible.
	ClaimRun(ctx context.Context, owner string, now, leaseUntil time.Time) (*QueuedRun, error)
	// RenewRunLease extends owner's lease and returns the cancel action
	// recorded for the run ("" if none). ENOTFOUND when owner no longer holds
	// the run.
	RenewRunLease(ctx context.Context, runID, owner string, leaseUntil time.Time) (string, error)
	// ReleaseRun gives up owner's lease: the run goes back to pending, so the
	// next claim resumes it. ENOTFOUND when owner no longer holds it.
	ReleaseRun(ctx context.Context, runID, owner string, now time.Time) error

	// LatestCheckpointNotByRun returns the id of the thread's latest root
	// checkpoint (namespace "") that run runID did not write, "" when there
	// is none: the state a rollback of the run returns to.
	LatestCheckpointNotByRun(ctx context.Context, threadID, runID string) (string, error)
	// runStatuses returns the status of each run of runIDs that exists;
	// missing runs are absent from the map.
	RunStatuses(ctx context.Context, runIDs []string) (map[string]string, error)

	// ClaimWebhooks takes up to limit outbox deliveries due at now, holding
	// them until leaseUntil.
	ClaimWebhooks(ctx context.Context, now, leaseUntil time.Time, limit int) ([]*WebhookDelivery, error)
	// EnqueueWebhook adds a delivery to the outbox.
	EnqueueWebhook(ctx context.Context, d *WebhookDelivery) error
	// UpdateWebhook records a delivery attempt: done deletes the delivery,
	// otherwise it is due again at next.
	UpdateWebhook(ctx context.Context, id string, attempts int, done bool, next time.Time, lastError string) error
}

// RunInsert tells the Server's run insertion (runtx.go) how to treat the
// run's thread.
type RunInsert struct {
	CreateThread   *record.Thread  // inserted when the thread is missing; nil = ENOTFOUND
	ThreadMetadata record.Metadata // merged into the thread's metadata
	ThreadConfig   record.Object   // replaces the thread's config when non-nil
	Filter         record.Filter   // access-control filter on the thread's metadata

	// NewThread says CreateThread's id was generated for this run (a
	// stateless run's thread), so no thread has it: it is inserted
	// without looking for it first.
	NewThread bool

	// Owner, when set, claims the run at insertion if it can start at once.
	Owner      string
	LeaseUntil time.Time
	// Preload, with Owner, asks the insertion of a run it claims to read
	// the thread's latest root checkpoint (namespace "") in its
	// transaction, after the multitask strategy applied, for the run's
	// first load of it (RunCreated.Checkpoint). Complete may set it.
	Preload bool

	// Complete, when set, is called in the insertion's transaction before
	// the run is inserted, with what Tx.CheckThread read of the run's
	// thread, or nil when the insertion creates the thread: it completes
	// the run (whose config and metadata take the thread's) and may set
	// ThreadConfig, so that the thread is read once, in the transaction.
	// Like the transaction's function, it may be called more than once.
	Complete func(thread *ThreadHead)

	// Cron, when set, is the cron firing that creates the run: the insertion
	// claims it (as CronStorage.FireCron) in the run's transaction and
	// fails with ECONFLICT, inserting nothing, when it cannot.
	Cron *CronFiring
}

// RunCreated is what a run's insertion did besides inserting the run.
type RunCreated struct {
	// Cancelled lists the in-flight runs the multitask strategy cancelled.
	Cancelled []CancelledRun
	// Claimed is true when the run was inserted running, claimed by
	// RunInsert.Owner with attempt 1.
	Claimed bool
	// Preloaded is true when the insertion claimed the run and read its
	// thread's latest root checkpoint (RunInsert.Preload): Checkpoint, nil
	// when the thread has none. The record is the caller's.
	Preloaded  bool
	Checkpoint *CheckpointRecord
}

// CancelledRun reports a run a cancellation touched. Status is
// RunInterrupted for a pending run now interrupted, "" for a pending run
// deleted (rollback), and RunRunning for a running run whose worker must stop.
type CancelledRun struct {
	RunID    string
	ThreadID string
	Status   string
	Action   string
	// Run is the run as it was, for a pending run that had a webhook.
	Run *record.Run
}

// QueuedRun is a run a worker claimed.
type QueuedRun struct {
	Run     *record.Run
	Attempt int
}

// SweptRun reports a run the lease sweep changed: Status is RunPending (given back
// to the queue) or RunError (out of attempts).
type SweptRun struct {
	RunID    string
	ThreadID string
	Status   string
	// Run is the run as it was, for a run ended (not requeued) that had a
	// webhook.
	Run *record.Run
}

// RunFinish is the end of a run. The Server applies it in one transaction:
//   - Delete: the run and the checkpoints it wrote are deleted (rollback);
//     otherwise the run gets Status.
//   - Summary (when non-nil) is written on the thread as a state update
//     writes it, except that the status is busy while the thread has other pending
//     or running runs.
//   - DeleteThread: the thread is deleted with its runs and checkpoints
//     (stateless runs with on_completion delete).
//   - Webhook (when non-nil) is added to the outbox.
//   - Checkpoints (the run's last ones, which its graph handed over through
//     CheckpointDeferrer) are saved, once the run's lease is checked, unless
//     the run or its thread is deleted; invalid ones (CheckCheckpoints,
//     checked before the transaction) fail the whole end with EINVALID.
type RunFinish struct {
	RunID        string
	ThreadID     string
	Owner        string
	Status       string
	Delete       bool
	Summary      *ThreadSummary
	DeleteThread bool
	Webhook      *WebhookDelivery
	Checkpoints  []*CheckpointRecord
	Now          time.Time
}

// WebhookDelivery is one webhook in the outbox.
type WebhookDelivery struct {
	ID       string
	RunID    string
	URL      string
	Body     json.RawMessage // JSON object; webhook_sent_at is added at each attempt
	Attempts int             // attempts made so far
	NextAt   time.Time
}
