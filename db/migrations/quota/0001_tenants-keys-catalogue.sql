-- Up Migration
-- The quota service's administration: tenants and their keys, the embedded access-control store,
-- the catalogue (resources, policies, plans), subjects' assignments and overrides, and the
-- append-only admin audit. Consumption has its own tables (a later migration).

CREATE TABLE tenants (
  id                 text PRIMARY KEY,
  name               text NOT NULL,
  status             text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
  -- The initial grants, written by the quota-bootstrap/<id> workflow (api/quota/tenants.ts).
  bootstrap_state    text NOT NULL DEFAULT 'pending'
                     CHECK (bootstrap_state IN ('pending', 'running', 'done', 'failed')),
  bootstrap_attempts integer NOT NULL DEFAULT 0,
  bootstrap_error    text,
  -- The task queue of the process that asked for the bootstrap (a test run's queues are its own),
  -- and when that workflow was started (the outbox's mark).
  bootstrap_queue    text NOT NULL,
  bootstrap_started_at timestamptz,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  suspended_at       timestamptz
);
CREATE INDEX tenants_bootstrap_due ON tenants (bootstrap_queue, created_at)
  WHERE bootstrap_state IN ('pending', 'running') AND bootstrap_started_at IS NULL;

-- A key: its row id names it in paths and never changes; key_id is the public half of its
-- secret and changes when the secret is rotated. tenant_id null: an operator key.
CREATE TABLE api_keys (
  id               text PRIMARY KEY,
  key_id           text NOT NULL UNIQUE,
  secret_sha256    bytea NOT NULL,
  tenant_id        text REFERENCES tenants (id),
  name             text NOT NULL DEFAULT '',
  scopes           text[] NOT NULL CHECK (cardinality(scopes) >= 1),
  actor            text NOT NULL,
  status           text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'revoked')),
  constraints      jsonb,
  created_by_actor text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  last_used_at     timestamptz,
  rotated_at       timestamptz,
  revoked_at       timestamptz
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id, created_at);

-- The embedded access-control store: relation tuples, Zanzibar's shape (object#relation@subject),
-- read and written only through api/quota/authz.ts so SpiceDB or OpenFGA can replace it.
CREATE TABLE authz_tuples (
  object     text NOT NULL,
  relation   text NOT NULL,
  subject    text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (object, relation, subject)
);
CREATE INDEX authz_tuples_subject ON authz_tuples (subject);

CREATE TABLE resources (
  id          text PRIMARY KEY,
  tenant_id   text NOT NULL REFERENCES tenants (id),
  name        text NOT NULL,
  description text NOT NULL DEFAULT '',
  unit        text NOT NULL DEFAULT 'units',
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  -- Consume items name resources by name.
  UNIQUE (tenant_id, name)
);

CREATE TABLE policies (
  id                  text PRIMARY KEY,
  tenant_id           text NOT NULL REFERENCES tenants (id),
  name                text NOT NULL,
  resource_id         text NOT NULL REFERENCES resources (id),
  kind                text NOT NULL CHECK (kind IN ('quota', 'rate_limit')),
  limit_amount        bigint CHECK (limit_amount BETWEEN 1 AND 9007199254740991),
  window_kind         text CHECK (window_kind IN ('fixed', 'rolling', 'lifetime')),
  window_unit         text CHECK (window_unit IN ('minute', 'hour', 'day', 'week', 'month')),
  window_size         integer CHECK (window_size >= 1),
  tz                  text,
  bucket_capacity     bigint CHECK (bucket_capacity BETWEEN 1 AND 9007199254740991),
  refill_rate_per_sec double precision CHECK (refill_rate_per_sec > 5e-07 AND refill_rate_per_sec < 1e14),
  enforcement_mode    text NOT NULL DEFAULT 'fast' CHECK (enforcement_mode IN ('strict', 'fast')),
  on_exceed           text NOT NULL DEFAULT 'block' CHECK (on_exceed IN ('block', 'allow_overage')),
  on_backend_error    text CHECK (on_backend_error IN ('deny', 'allow')),
  enabled             boolean NOT NULL DEFAULT true,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, name),
  -- Each kind's fields (api/quota/catalogue/policies.ts refuses the rest with a 422 first).
  CHECK (kind <> 'quota' OR (limit_amount IS NOT NULL AND window_kind IS NOT NULL
         AND bucket_capacity IS NULL AND refill_rate_per_sec IS NULL
         AND (window_kind = 'lifetime') = (window_unit IS NULL AND window_size IS NULL))),
  CHECK (kind <> 'rate_limit' OR (bucket_capacity IS NOT NULL AND refill_rate_per_sec IS NOT NULL
         AND limit_amount IS NULL AND window_kind IS NULL AND window_unit IS NULL
         AND window_size IS NULL AND tz IS NULL))
);
CREATE INDEX policies_resource ON policies (resource_id);

CREATE TABLE plans (
  id          text PRIMARY KEY,
  tenant_id   text NOT NULL REFERENCES tenants (id),
  name        text NOT NULL,
  description text NOT NULL DEFAULT '',
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, name)
);

CREATE TABLE plan_policies (
  plan_id   text NOT NULL REFERENCES plans (id) ON DELETE CASCADE,
  policy_id text NOT NULL REFERENCES policies (id),
  position  integer NOT NULL,
  PRIMARY KEY (plan_id, policy_id)
);
CREATE INDEX plan_policies_policy ON plan_policies (policy_id);

CREATE TABLE assignments (
  tenant_id  text NOT NULL REFERENCES tenants (id),
  subject    text NOT NULL,
  plan_id    text NOT NULL REFERENCES plans (id),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, subject)
);
CREATE INDEX assignments_plan ON assignments (plan_id);

CREATE TABLE overrides (
  tenant_id    text NOT NULL REFERENCES tenants (id),
  subject      text NOT NULL,
  policy_id    text NOT NULL REFERENCES policies (id),
  limit_amount bigint CHECK (limit_amount BETWEEN 1 AND 9007199254740991),
  enabled      boolean NOT NULL DEFAULT true,
  PRIMARY KEY (tenant_id, subject, policy_id)
);
CREATE INDEX overrides_policy ON overrides (policy_id);

-- The admin audit: who did what to which entity, before and after; seq orders it. Append-only in
-- the database itself (audit_append_only), and no route writes it.
CREATE TABLE audit (
  id          text PRIMARY KEY,
  seq         bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  tenant_id   text REFERENCES tenants (id),
  actor       text NOT NULL,
  key_row_id  text,
  action      text NOT NULL,
  entity_type text NOT NULL,
  entity_id   text,
  before      jsonb,
  after       jsonb,
  at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_tenant_seq ON audit (tenant_id, seq);

-- The trigger function's definition is db/quota/functions/audit_append_only.sql (applied after
-- the numbered migrations); this one lets the trigger be created on a fresh database.
CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'quota.audit is append-only: % refused', TG_OP USING ERRCODE = 'QA001';
END $$;
CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit
  FOR EACH ROW EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit
  FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();

-- Down Migration
DROP TABLE audit, overrides, assignments, plan_policies, plans, policies, resources,
  authz_tuples, api_keys, tenants;
DROP FUNCTION audit_append_only();
