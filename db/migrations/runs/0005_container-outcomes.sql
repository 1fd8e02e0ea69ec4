-- Up Migration
-- What a run's container ended with (exit code, error, byte counts, log files), kept by the
-- follow activity before it removes the container: a retry of that activity (its worker died
-- after the removal, before Temporal heard the result) answers the kept outcome instead of
-- "container lost". It was kept in Redis (24 h), which an unpersisted Redis restart could lose
-- in that window; here it commits before the removal. Needed for minutes; the retention purge
-- deletes rows older than a day.
CREATE TABLE container_outcomes (
  track_id text PRIMARY KEY,
  outcome  jsonb NOT NULL,
  kept_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX container_outcomes_kept_at ON container_outcomes (kept_at);

-- Down Migration
DROP TABLE container_outcomes;
