-- 0006_lease_holder: which open database (process) holds a run's lease.
--
-- lease_holder is the holder id of the DB that claimed the run (see
-- sqlite/holder.go): that DB keeps an OS lock on the file
-- <database>-holders/<holder> while it is open, and the kernel drops the lock
-- when its process dies. A run whose holder's lock is free is recovered at
-- once (RecoverRuns) instead of after its lease expires. NULL for runs
-- claimed before this migration: lease expiry recovers those.
ALTER TABLE runs ADD COLUMN lease_holder TEXT;
CREATE INDEX runs_lease_holder ON runs (lease_holder) WHERE status = 'running';
