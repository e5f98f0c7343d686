-- 0010_one_lease_index: one index over running runs' leases instead of two.
--
-- runs_lease (lease_expires_at) and runs_lease_holder (lease_holder) both
-- held every running run, so each run's start and end wrote an entry into
-- and out of each. One index keyed (lease_expires_at, lease_holder) answers
-- both: the sweep's range on lease_expires_at, and the holder queries
-- (sqlite/holder.go), which read every running run's holder from it without
-- touching the table. Running runs are few (the executor's slots, per
-- process), so scanning them all is cheap.
DROP INDEX runs_lease_holder;
DROP INDEX runs_lease;
CREATE INDEX runs_lease ON runs (lease_expires_at, lease_holder) WHERE status = 'running';
