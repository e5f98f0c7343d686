-- 0012_active_thread_index: the index of a thread's active runs keyed by
-- thread only.
--
-- runs_active_thread was keyed (thread_id, status), so the statements that
-- look for a thread's active runs (a thread run's creation and its end)
-- sought it by the status list too, and SQLite fills an ephemeral table
-- with an IN list's values to seek by them, at every execution. Keyed by
-- thread alone, the index is sought by thread and the list is a plain
-- test of the few rows found; its entries are smaller, and a run going
-- from pending to running no longer moves its entry.
DROP INDEX runs_active_thread;
CREATE INDEX runs_active_thread ON runs (thread_id) WHERE status IN ('pending', 'running');
