-- Up Migration
-- A pending delivery is its API process's to attempt first while its lease runs (dispatch_until),
-- which that process renews while the delivery waits in its queue: an endpoint's backlog (a
-- burst, a release, a recover) goes out in order at the receiver's pace from one process however
-- long it takes, and the sweeper takes a row only once no process holds it. NULL: no lease.
ALTER TABLE webhook_deliveries ADD COLUMN dispatch_until timestamptz;

-- Down Migration
ALTER TABLE webhook_deliveries DROP COLUMN dispatch_until;
