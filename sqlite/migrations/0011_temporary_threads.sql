-- 0011_temporary_threads: a stateless run's thread stays out of the
-- thread indexes.
--
-- A stateless run (on_completion delete, the default) inserts a thread and
-- deletes it when the run ends, milliseconds later. Its entries in the four
-- indexes that thread search sorts and filters by were half of the pages
-- such a run wrote. temporary = 1 marks that thread (the only one inserted
-- so); the indexes leave it out, and thread search and count, which read
-- through them, skip it (sqlite/threads.go). It is still read by id.
ALTER TABLE threads ADD COLUMN temporary INTEGER NOT NULL DEFAULT 0;
DROP INDEX threads_status;
DROP INDEX threads_created_at;
DROP INDEX threads_updated_at;
DROP INDEX threads_state_updated_at;
CREATE INDEX threads_status ON threads (status) WHERE temporary = 0;
CREATE INDEX threads_created_at ON threads (created_at, thread_id) WHERE temporary = 0;
CREATE INDEX threads_updated_at ON threads (updated_at, thread_id) WHERE temporary = 0;
CREATE INDEX threads_state_updated_at ON threads (state_updated_at, thread_id) WHERE temporary = 0;
