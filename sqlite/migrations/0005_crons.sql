-- 0005_crons: scheduled runs.
--
-- A cron fires when next_run_date (a timestamp) has come, it is enabled and
-- its end_time (if any) has not passed. Whoever moves next_run_date from
-- the due value to the next one owns that firing (a compare-and-set, done in
-- the transaction that inserts the run), so several processes sharing the
-- file fire each cron once. next_run_date is NULL once the next firing would
-- come after end_time.
--
-- thread_id is NULL for a stateless cron (a new thread per run); a thread
-- cron goes with its thread, and every cron with its assistant.
-- payload is the run-creation body (JSON object) of the runs it creates.
-- timezone is an IANA name, NULL for UTC; on_run_completed (delete | keep)
-- is NULL for thread crons; user_id is NULL without auth.
CREATE TABLE crons (
    cron_id          TEXT PRIMARY KEY,
    assistant_id     TEXT NOT NULL REFERENCES assistants (assistant_id) ON DELETE CASCADE,
    thread_id        TEXT REFERENCES threads (thread_id) ON DELETE CASCADE,
    user_id          TEXT,
    schedule         TEXT NOT NULL,
    timezone         TEXT,
    on_run_completed TEXT,
    end_time         TEXT,
    next_run_date    TEXT,
    enabled          INTEGER NOT NULL DEFAULT 1,
    payload          TEXT NOT NULL DEFAULT '{}',
    metadata         TEXT NOT NULL DEFAULT '{}',
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);
CREATE INDEX crons_due ON crons (next_run_date) WHERE enabled = 1;
CREATE INDEX crons_assistant_id ON crons (assistant_id);
CREATE INDEX crons_thread_id ON crons (thread_id);
CREATE INDEX crons_created_at ON crons (created_at, cron_id);
CREATE INDEX crons_updated_at ON crons (updated_at, cron_id);
