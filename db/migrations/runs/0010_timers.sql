-- Up Migration
-- Timers: a payload delivered as a `timer.fired` webhook notice at fire_at, one Temporal
-- workflow timer/<timer_id> each (a durable sleep). The row is the truth: firing is one
-- conditional UPDATE pending → fired with its notice row in the same transaction; DELETE is one
-- conditional UPDATE pending → cancelled; whichever commits first wins.
CREATE TABLE timers (
  timer_id            text PRIMARY KEY,
  tenant_id           text NOT NULL REFERENCES tenants ON DELETE CASCADE,
  -- Kept to the millisecond, as answered and as the workflow sleeps until it.
  fire_at             timestamptz NOT NULL,
  -- Any JSON value, opaque (the API bounds its serialized size).
  payload             jsonb NOT NULL,
  -- An object of string → string (the API bounds its entries, keys and values).
  labels              jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(labels) = 'object'),
  state               text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'fired', 'cancelled')),
  created_at          timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  fired_at            timestamptz,
  cancelled_at        timestamptz,
  -- fired_at − fire_at in seconds (millisecond precision), never below 0.
  fire_delay_seconds  numeric(16, 3) CHECK (fire_delay_seconds >= 0),
  -- The outbox of timer/<timer_id>, as for webhook deliveries: false until Temporal has the
  -- workflow, which starts on the runs queue of the deployment that made the row.
  workflow_started     boolean NOT NULL DEFAULT false,
  workflow_task_queue  text NOT NULL,
  CHECK ((state = 'fired') = (fired_at IS NOT NULL AND fire_delay_seconds IS NOT NULL)),
  CHECK ((state = 'cancelled') = (cancelled_at IS NOT NULL))
);
-- The tenant's timers, newest first (GET /timers; its state and label filters narrow it).
CREATE INDEX timers_tenant ON timers (tenant_id, timer_id DESC);
-- label_filter: labels @> {key: value, ...}.
CREATE INDEX timers_labels ON timers USING gin (labels jsonb_path_ops);
-- max_pending_timers counts these.
CREATE INDEX timers_pending ON timers (tenant_id) WHERE state = 'pending';
-- The starter's sweep: pending timers whose workflow Temporal does not have yet.
CREATE INDEX timers_unstarted ON timers (workflow_task_queue, created_at)
  WHERE NOT workflow_started AND state = 'pending';

ALTER TABLE tenant_quotas
  ADD COLUMN max_pending_timers integer NOT NULL DEFAULT 1000 CHECK (max_pending_timers >= 0);

-- Down Migration
ALTER TABLE tenant_quotas DROP COLUMN max_pending_timers;
DROP TABLE timers;
