-- 0003_runs: the run queue and the webhook outbox.
--
-- A run is claimed by one worker at a time: status running, lease_owner set
-- and lease_expires_at in the future. A worker renews its lease while the run
-- executes; a sweep gives runs whose lease lapsed back to the queue.
-- created_at includes after_seconds: a pending run is not eligible before it.
-- cancel_action records a cancellation (interrupt | rollback) requested for a
-- running run, which its worker observes when it renews the lease.
CREATE TABLE runs (
    run_id             TEXT PRIMARY KEY,
    thread_id          TEXT NOT NULL REFERENCES threads (thread_id) ON DELETE CASCADE,
    assistant_id       TEXT NOT NULL,
    created_at         TEXT NOT NULL,
    updated_at         TEXT NOT NULL,
    status             TEXT NOT NULL,
    metadata           TEXT NOT NULL DEFAULT '{}',
    multitask_strategy TEXT NOT NULL,
    kwargs             TEXT NOT NULL DEFAULT '{}',
    attempt            INTEGER NOT NULL DEFAULT 0,
    lease_owner        TEXT,
    lease_expires_at   TEXT,
    cancel_action      TEXT
);
CREATE INDEX runs_pending ON runs (created_at, run_id) WHERE status = 'pending';
CREATE INDEX runs_active_thread ON runs (thread_id, status) WHERE status IN ('pending', 'running');
CREATE INDEX runs_lease ON runs (lease_expires_at) WHERE status = 'running';
CREATE INDEX runs_thread_created ON runs (thread_id, created_at, run_id);

-- Webhook deliveries waiting to be sent (or retried). Rows do not reference
-- runs: a delivery outlives its run (stateless runs are deleted at once).
CREATE TABLE webhook_outbox (
    id         TEXT PRIMARY KEY,
    run_id     TEXT NOT NULL,
    url        TEXT NOT NULL,
    body       TEXT NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    next_at    TEXT NOT NULL,
    last_error TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX webhook_outbox_next_at ON webhook_outbox (next_at);
