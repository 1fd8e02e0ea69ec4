-- Up Migration
-- Template triggers: a cron in an IANA time zone that launches a template unattended, one
-- Temporal Schedule trigger/<trigger_id> each (the daylight-saving rule of schedules). A fire
-- launches the template as the key that made the trigger; the fire ledger names the workflow
-- each occurrence produced, or why it could not launch (the trigger is then disabled).
CREATE TABLE triggers (
  trigger_id       text PRIMARY KEY,
  tenant_id        text NOT NULL REFERENCES tenants ON DELETE CASCADE,
  -- No foreign key: a template is soft-deleted, and a trigger outlives it (disabled at its fire).
  template_id      text NOT NULL,
  -- The key a fire launches as (its tier, allowlist and quotas).
  key_id           text NOT NULL,
  cron             text NOT NULL,
  timezone         text NOT NULL,
  -- Null: the template's latest version at each fire.
  version          integer CHECK (version >= 1),
  -- The parameter values that are not secret; the secret ones sealed (AES-256-GCM).
  params           jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(params) = 'object'),
  sealed_params    text,
  -- The names of the secret parameters sealed (a read shows them, never their values).
  secret_params    text[] NOT NULL DEFAULT '{}',
  enabled          boolean NOT NULL DEFAULT true,
  disabled_reason  text CHECK (disabled_reason IN
                     ('template_deleted', 'invalid_params', 'quota_exceeded', 'key_revoked',
                      'launch_refused')),
  -- The refusal's code (the REST detail the launch got), with disabled_reason.
  disabled_detail  text,
  created_at       timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  updated_at       timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  CHECK (disabled_reason IS NULL OR NOT enabled)
);
CREATE INDEX triggers_tenant ON triggers (tenant_id, trigger_id DESC);
CREATE INDEX triggers_template ON triggers (tenant_id, template_id, trigger_id DESC);
-- max_triggers counts these.
CREATE INDEX triggers_enabled ON triggers (tenant_id) WHERE enabled;

CREATE TABLE trigger_fires (
  trigger_id          text NOT NULL REFERENCES triggers ON DELETE CASCADE,
  occurrence          timestamptz NOT NULL,
  wall_time           timestamp NOT NULL,
  fired_at            timestamptz NOT NULL,
  fire_delay_seconds  numeric(16, 3) NOT NULL CHECK (fire_delay_seconds >= 0),
  outcome             text NOT NULL CHECK (outcome IN ('launched', 'skipped_disabled', 'failed')),
  workflow_id         text,
  -- The refusal's code when failed.
  error               text,
  PRIMARY KEY (trigger_id, occurrence),
  UNIQUE (trigger_id, wall_time),
  CHECK ((outcome = 'launched') = (workflow_id IS NOT NULL))
);
CREATE INDEX trigger_fires_newest ON trigger_fires (trigger_id, occurrence DESC);

-- The occurrence a workflow was launched for: one workflow per occurrence, whatever retries.
ALTER TABLE workflows ADD COLUMN trigger_id text, ADD COLUMN trigger_occurrence timestamptz;
CREATE UNIQUE INDEX workflows_trigger_occurrence ON workflows (trigger_id, trigger_occurrence)
  WHERE trigger_id IS NOT NULL;

ALTER TABLE tenant_quotas
  ADD COLUMN max_triggers integer NOT NULL DEFAULT 100 CHECK (max_triggers >= 0);

-- Down Migration
ALTER TABLE tenant_quotas DROP COLUMN max_triggers;
DROP INDEX workflows_trigger_occurrence;
ALTER TABLE workflows DROP COLUMN trigger_id, DROP COLUMN trigger_occurrence;
DROP TABLE trigger_fires;
DROP TABLE triggers;
