-- Up Migration
-- A metered run's seconds are held by the quota service (api/runs/metering.ts): its reservation
-- is kept on the run, and its end commits it. runs.usage_ledger keeps the charges made before;
-- a run charged there is refunded there (activities/runs/run.ts), and nothing writes a new one.
ALTER TABLE runs ADD COLUMN quota_reservation_id text;

-- Down Migration
ALTER TABLE runs DROP COLUMN quota_reservation_id;
