-- 0004_run_writes: pending writes remember the run that made them, so that
-- deleting a run (a rollback, DeleteRun) also deletes the writes it left on
-- checkpoints it did not write (the checkpoint it resumed from: a command's
-- update and resume, its tasks' writes) and the thread returns to its state
-- before the run.
--
-- checkpoint_writes.run_id is stored as checkpoints.run_id is ('' = not
-- written by a run). When a run replaces the writes of a task that another
-- run (or no run) made, the replaced rows move to checkpoint_writes_replaced
-- with replaced_by = the run; deleting that run puts them back.
ALTER TABLE checkpoint_writes ADD COLUMN run_id BLOB NOT NULL DEFAULT '';

CREATE TABLE checkpoint_writes_replaced (
    tid           INTEGER NOT NULL REFERENCES checkpoint_threads (tid) ON DELETE CASCADE,
    replaced_by   BLOB NOT NULL,
    checkpoint_ns TEXT NOT NULL,
    checkpoint_id BLOB NOT NULL,
    task_id       TEXT NOT NULL,
    task_path     TEXT NOT NULL,
    idx           INTEGER NOT NULL,
    channel       TEXT NOT NULL,
    value         TEXT NOT NULL,
    run_id        BLOB NOT NULL,
    PRIMARY KEY (tid, replaced_by, checkpoint_ns, checkpoint_id, task_id, idx)
) WITHOUT ROWID;
