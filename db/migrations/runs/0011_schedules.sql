-- Up Migration
-- Schedules: a cron (5 fields) in an IANA time zone that delivers `schedule.fired` webhook
-- notices, one Temporal Schedule schedule/<schedule_id> each (the scheduler decides the
-- occurrences; each action starts schedule-fire/<schedule_id>/<occurrence>). The fire ledger is
-- keyed by (schedule_id, occurrence): a retried or duplicated action records once.
CREATE TABLE schedules (
  schedule_id  text PRIMARY KEY,
  tenant_id    text NOT NULL REFERENCES tenants ON DELETE CASCADE,
  cron         text NOT NULL,
  timezone     text NOT NULL,
  -- Any JSON value, opaque (the API bounds its serialized size).
  payload      jsonb NOT NULL,
  labels       jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(labels) = 'object'),
  enabled      boolean NOT NULL DEFAULT true,
  created_at   timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  updated_at   timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now())
);
CREATE INDEX schedules_tenant ON schedules (tenant_id, schedule_id DESC);
CREATE INDEX schedules_labels ON schedules USING gin (labels jsonb_path_ops);
-- max_schedules counts these.
CREATE INDEX schedules_enabled ON schedules (tenant_id) WHERE enabled;

CREATE TABLE schedule_fires (
  schedule_id          text NOT NULL REFERENCES schedules ON DELETE CASCADE,
  -- The occurrence the scheduler fired for (TemporalScheduledStartTime).
  occurrence           timestamptz NOT NULL,
  fired_at             timestamptz NOT NULL,
  -- fired_at − occurrence in seconds (millisecond precision), never below 0.
  fire_delay_seconds   numeric(16, 3) NOT NULL CHECK (fire_delay_seconds >= 0),
  outcome              text NOT NULL CHECK (outcome IN ('enqueued', 'skipped_disabled')),
  -- Subscriptions the notice matched when it was written (0 unless enqueued).
  deliveries_enqueued  integer NOT NULL CHECK (deliveries_enqueued >= 0),
  -- The schedule.fired notice (null unless enqueued).
  event_id             text,
  PRIMARY KEY (schedule_id, occurrence)
);
CREATE INDEX schedule_fires_newest ON schedule_fires (schedule_id, occurrence DESC);

ALTER TABLE tenant_quotas
  ADD COLUMN max_schedules integer NOT NULL DEFAULT 100 CHECK (max_schedules >= 0);

-- Down Migration
ALTER TABLE tenant_quotas DROP COLUMN max_schedules;
DROP TABLE schedule_fires;
DROP TABLE schedules;
