-- Up Migration
-- Outbound webhooks of the runs service: subscriptions (tenant endpoints and inline webhooks),
-- one delivery per (subscription, event), each delivery's attempts, and tenant notices.
-- Deliveries are made from committed event rows only (run_events, workflow_events and
-- webhook_notices with published_at NULL): the publisher matches each event against the
-- tenant's subscriptions and inserts its deliveries in the transaction that marks it published.

-- A subscription: an endpoint registered at POST /webhooks, or an inline webhook of one run or
-- workflow (inline_for = its track_id or workflow_id; never listed as an endpoint).
CREATE TABLE webhook_endpoints (
  endpoint_id            text PRIMARY KEY,
  tenant_id              text NOT NULL REFERENCES tenants ON DELETE CASCADE,
  inline_for             text,
  url                    text NOT NULL,
  events                 text[] NOT NULL,
  -- NULL only for an inline webhook without a secret (signature header `none`).
  secret                 text,
  secret_origin          text NOT NULL CHECK (secret_origin IN ('generated', 'supplied', 'unknown', 'none')),
  description            text,
  active                 boolean NOT NULL DEFAULT true,
  disabled_reason        text,
  consecutive_failures   integer NOT NULL DEFAULT 0,
  dead_deliveries_total  bigint NOT NULL DEFAULT 0,
  last_dead_delivery_at  timestamptz,
  created_at             timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  updated_at             timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  -- DELETE keeps the row (its deliveries name it) but it matches and lists no more.
  deleted_at             timestamptz,
  CHECK ((secret IS NULL) = (secret_origin = 'none')),
  CHECK (secret_origin <> 'none' OR inline_for IS NOT NULL)
);
-- The tenant's live endpoints (max_webhook_endpoints counts these) and inline webhooks.
CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (tenant_id, endpoint_id)
  WHERE deleted_at IS NULL AND inline_for IS NULL;
CREATE INDEX webhook_endpoints_inline ON webhook_endpoints (inline_for) WHERE inline_for IS NOT NULL;

-- One delivery of one event to one subscription. `envelope` is the body without its
-- `delivery` block, which each attempt adds (delivery_id, attempt, endpoint_id).
-- States: held (the endpoint is disabled: kept, released in order when it is re-enabled),
-- pending, delivering, retrying (waiting for its next attempt), delivered, dead, cancelled
-- (its endpoint was deleted).
CREATE TABLE webhook_deliveries (
  delivery_id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id         text NOT NULL,
  endpoint_id       text NOT NULL REFERENCES webhook_endpoints,
  event_id          text NOT NULL,
  event_type        text NOT NULL,
  -- The run and the workflow the event concerns, for GET /runs/{id}/deliveries and
  -- GET /workflows/{id}/deliveries (a node run's events name both).
  track_id          text,
  workflow_id       text,
  envelope          jsonb NOT NULL,
  truncated         boolean NOT NULL DEFAULT false,
  test              boolean NOT NULL DEFAULT false,
  state             text NOT NULL CHECK (state IN (
                      'held', 'pending', 'delivering', 'retrying', 'delivered', 'dead', 'cancelled')),
  attempts          integer NOT NULL DEFAULT 0,
  next_attempt_at   timestamptz,
  last_status_code  integer,
  last_error        text,
  redelivery_of     bigint REFERENCES webhook_deliveries,
  -- Held, then released by a re-enable: its first attempt waits for the earlier released ones'.
  released_at       timestamptz,
  created_at        timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  updated_at        timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  finished_at       timestamptz,
  -- The outbox of delivery/runs/<delivery_id>: false until Temporal has the workflow, which
  -- starts on the runs queue of the deployment that made the row (another's is not ours).
  workflow_started     boolean NOT NULL DEFAULT false,
  workflow_task_queue  text NOT NULL
);
-- Exactly one delivery per (subscription, event); a redelivery is a new row on purpose.
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (endpoint_id, event_id)
  WHERE redelivery_of IS NULL;
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, delivery_id);
CREATE INDEX webhook_deliveries_run ON webhook_deliveries (track_id, delivery_id)
  WHERE track_id IS NOT NULL;
CREATE INDEX webhook_deliveries_workflow ON webhook_deliveries (workflow_id, delivery_id)
  WHERE workflow_id IS NOT NULL;
CREATE INDEX webhook_deliveries_unstarted ON webhook_deliveries (workflow_task_queue, delivery_id)
  WHERE NOT workflow_started AND state = 'pending';
-- Auto-disable counts an endpoint's dead deliveries and successes of the last 24 hours.
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (endpoint_id, finished_at)
  WHERE state IN ('delivered', 'dead');

CREATE TABLE webhook_attempts (
  delivery_id  bigint NOT NULL REFERENCES webhook_deliveries ON DELETE CASCADE,
  attempt      integer NOT NULL CHECK (attempt >= 1),
  started_at   timestamptz NOT NULL,
  finished_at  timestamptz NOT NULL,
  status_code  integer,
  error        text,
  outcome      text NOT NULL CHECK (outcome IN ('delivered', 'retry', 'dead')),
  PRIMARY KEY (delivery_id, attempt)
);

-- Tenant notices (webhook.endpoint_degraded, tenant.delivery_dead; later timer.fired and
-- schedule.fired): events of no run or workflow, published like the others.
CREATE TABLE webhook_notices (
  event_id      text PRIMARY KEY,
  tenant_id     text NOT NULL REFERENCES tenants ON DELETE CASCADE,
  event_type    text NOT NULL,
  resource_type text NOT NULL,
  resource_id   text NOT NULL,
  data          jsonb NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  published_at  timestamptz
);
CREATE INDEX webhook_notices_unpublished ON webhook_notices (event_id) WHERE published_at IS NULL;

-- Events committed before webhooks existed had no subscription to match.
UPDATE run_events SET published_at = now() WHERE published_at IS NULL;
UPDATE workflow_events SET published_at = now() WHERE published_at IS NULL;

-- Down Migration
DROP TABLE webhook_notices;
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_endpoints;
