-- Up Migration
-- The reconciler (workflows/runs/reconcile.ts) pages through active runs by track_id every
-- pass; terminal rows are the vast majority of the table, so a partial index keeps a pass
-- proportional to the active runs, not to the history kept for retention.
CREATE INDEX runs_active_track ON runs (track_id)
  WHERE state IN ('scheduled', 'queued', 'pulling', 'running', 'paused');

-- Down Migration
DROP INDEX runs_active_track;
