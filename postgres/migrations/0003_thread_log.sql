-- 0003_thread_log: each thread's events in one order, the same on every
-- process.
--
-- A thread stream (GET /threads/{id}/stream, protocol v2) merges the
-- events of the thread's runs, its state updates and the ends of its
-- runs. Each of them gets the next number of its thread's counter
-- (thread_seqs.last) in the transaction that stores it: the counter's row
-- lock is held until that transaction commits, so the entries of one
-- thread become visible in the order of their numbers, and a process
-- reading the log after the last number it read misses none. The numbers
-- are the streams' event ids on every process, so a client resumes on
-- any of them.
CREATE TABLE thread_seqs (
    thread_id TEXT COLLATE "C" PRIMARY KEY,
    last      bigint NOT NULL
);

-- Run events: their thread and number in it (NULL for the events of runs
-- stored before this migration, or whose run was gone).
ALTER TABLE run_events ADD COLUMN thread_id TEXT COLLATE "C", ADD COLUMN tseq bigint;
CREATE INDEX run_events_thread ON run_events (thread_id, tseq) WHERE tseq IS NOT NULL;

-- The thread's own entries: state updates, and the end of each run
-- (event 'run_done', data its final status, '' for a run deleted by a
-- rollback), recorded in the transaction that ends the run.
CREATE TABLE thread_events (
    thread_id  TEXT COLLATE "C" NOT NULL,
    seq        bigint NOT NULL,
    run_id     TEXT COLLATE "C",
    event      TEXT NOT NULL,
    data       TEXT NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (thread_id, seq)
);
CREATE INDEX thread_events_created_at ON thread_events (created_at);
