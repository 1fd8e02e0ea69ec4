-- Up Migration
-- The daylight-saving rule (api/runs/README.md): a fire is one occurrence of a local wall time.
-- Where the clocks go back, Temporal may fire both instants of a repeated wall time; this key
-- records the first only. Null for fires recorded before the rule.
ALTER TABLE schedule_fires ADD COLUMN wall_time timestamp;
CREATE UNIQUE INDEX schedule_fires_wall_time ON schedule_fires (schedule_id, wall_time);

-- Down Migration
DROP INDEX schedule_fires_wall_time;
ALTER TABLE schedule_fires DROP COLUMN wall_time;
