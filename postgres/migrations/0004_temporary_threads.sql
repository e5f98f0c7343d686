-- 0004_temporary_threads: a stateless run's thread stays out of the
-- thread indexes.
--
-- A stateless run (on_completion delete, the default) inserts a thread and
-- deletes it when the run ends. temporary marks that thread (the only one
-- inserted so); the indexes thread search orders by leave it out, and
-- thread search and count skip it (postgres/threads.go), as the sqlite
-- driver does. It is still read by id.
ALTER TABLE threads ADD COLUMN temporary boolean NOT NULL DEFAULT false;
DROP INDEX threads_created_at;
DROP INDEX threads_updated_at;
CREATE INDEX threads_created_at ON threads (created_at, thread_id) WHERE NOT temporary;
CREATE INDEX threads_updated_at ON threads (updated_at, thread_id) WHERE NOT temporary;
