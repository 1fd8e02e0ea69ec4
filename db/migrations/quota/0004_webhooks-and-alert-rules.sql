-- Up Migration
-- Webhook endpoints, their deliveries, and alert rules (api/quota/webhooks.ts, alerts.ts).
-- Deliveries are sent by the platform delivery engine (delivery/quota/<id>), signed by the
-- Standard Webhooks scheme with the endpoint's secret.

CREATE TABLE webhook_endpoints (
  id           text PRIMARY KEY,
  tenant_id    text NOT NULL REFERENCES tenants (id),
  url          text NOT NULL,
  description  text NOT NULL DEFAULT '',
  event_types  text[] NOT NULL CHECK (cardinality(event_types) >= 1),
  enabled      boolean NOT NULL DEFAULT true,
  -- The Standard Webhooks secret, whsec_<base64 of 32 random bytes>: shown once, at creation.
  secret       text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  -- Deleted endpoints are kept for their deliveries; they are found and listed no more.
  deleted_at   timestamptz
);
CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (tenant_id, created_at, id)
  WHERE deleted_at IS NULL;

CREATE TABLE webhook_deliveries (
  id                text PRIMARY KEY,
  tenant_id         text NOT NULL REFERENCES tenants (id),
  endpoint_id       text NOT NULL REFERENCES webhook_endpoints (id),
  -- The alert event it notifies (a later migration adds the foreign key); null for a test.
  alert_event_id    text,
  event_type        text NOT NULL,
  -- The Standard Webhooks webhook-id: the same for every attempt of this delivery.
  message_id        text NOT NULL,
  payload           jsonb NOT NULL,
  status            text NOT NULL CHECK (status IN
                      ('pending', 'delivering', 'retrying', 'delivered', 'dead', 'cancelled')),
  attempt_count     integer NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
  last_status_code  integer,
  last_error        text,
  next_attempt_at   timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  finished_at       timestamptz
);
CREATE INDEX webhook_deliveries_tenant ON webhook_deliveries (tenant_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);

CREATE TABLE alert_rules (
  id                 text PRIMARY KEY,
  tenant_id          text NOT NULL REFERENCES tenants (id),
  name               text NOT NULL,
  -- Scope: a policy, a resource (its policies), subjects; null is any.
  policy_id          text REFERENCES policies (id),
  resource_id        text REFERENCES resources (id),
  subject_filter     text,
  threshold_pct      integer NOT NULL CHECK (threshold_pct BETWEEN 1 AND 1000),
  webhook_endpoint_ids text[] NOT NULL DEFAULT '{}',
  emails             text[] NOT NULL DEFAULT '{}' CHECK (cardinality(emails) <= 10),
  cooldown_seconds   integer NOT NULL DEFAULT 0 CHECK (cooldown_seconds BETWEEN 0 AND 604800),
  enabled            boolean NOT NULL DEFAULT true,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX alert_rules_tenant ON alert_rules (tenant_id, created_at, id);

-- Down Migration
DROP TABLE alert_rules;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_endpoints;
