-- 0002_run_events: the event logs of runs, shared by every process.
--
-- The process executing a run stores its stream events here as they come
-- (seq is the event's position, its SSE id), and streams opened on any
-- process read them, woken by notifications. Rows do not reference runs:
-- the sweep deletes the logs of runs ended long enough ago, and of runs
-- that are gone.
CREATE TABLE run_events (
    run_id     TEXT COLLATE "C" NOT NULL,
    seq        integer NOT NULL,
    event      TEXT NOT NULL,
    data       TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
