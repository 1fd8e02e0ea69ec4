-- Up Migration
-- The run half of the container-run service: tenants and their keys, tiers and quotas, runs
-- with their event stream (an outbox), daily submission counters, utilization samples, audit
-- records and the metered usage ledger. Instants are stored at millisecond precision because
-- clients compare them at that precision.

CREATE TABLE tenants (
  tenant_id   text PRIMARY KEY CHECK (tenant_id ~ '^[A-Za-z0-9._-]{1,64}$'),
  name        text,
  created_at  timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now())
);

-- A tier restricts the keys issued on it (e.g. "free"); NULL limit = no tier limit on that axis.
CREATE TABLE tiers (
  tier                 text PRIMARY KEY CHECK (tier ~ '^[a-z][a-z0-9_-]{0,31}$'),
  metered              boolean NOT NULL DEFAULT false,
  -- NULL: any image; otherwise exact references or prefixes ending in "/" or ":".
  allowed_images       text[],
  memory_limit_mb      integer CHECK (memory_limit_mb > 0),
  cpu_cores            numeric(8, 3) CHECK (cpu_cores > 0),
  timeout_seconds      integer CHECK (timeout_seconds > 0),
  concurrent_runs      integer CHECK (concurrent_runs > 0),
  daily_runs           integer CHECK (daily_runs > 0),
  workflow_nodes       integer CHECK (workflow_nodes > 0),
  retention_days       integer CHECK (retention_days > 0),
  -- Seconds of run time a metered key may hold charged per UTC day (the usage policy).
  metered_seconds_per_day bigint CHECK (metered_seconds_per_day > 0),
  updated_at           timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now())
);

-- The key itself is never stored: only its SHA-256 (hex), which is what requests are matched on.
CREATE TABLE api_keys (
  key_id      text PRIMARY KEY,
  tenant_id   text NOT NULL REFERENCES tenants ON DELETE CASCADE,
  key_sha256  text NOT NULL UNIQUE CHECK (key_sha256 ~ '^[0-9a-f]{64}$'),
  tier        text REFERENCES tiers ON UPDATE CASCADE,
  label       text,
  created_at  timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  expires_at  timestamptz,
  revoked_at  timestamptz
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id);

CREATE TABLE api_key_permissions (
  key_id      text NOT NULL REFERENCES api_keys ON DELETE CASCADE,
  permission  text NOT NULL CHECK (permission IN (
    'svc_run_submit', 'svc_run_read', 'svc_run_control', 'svc_run_delete', 'svc_tenant_admin',
    'svc_workflow_submit', 'svc_workflow_read', 'svc_workflow_control',
    'svc_template_write', 'svc_template_read', 'svc_template_run',
    'svc_timer_write', 'svc_timer_read', 'svc_webhook_admin', 'svc_webhook_read')),
  PRIMARY KEY (key_id, permission)
);

CREATE TABLE tenant_quotas (
  tenant_id                  text PRIMARY KEY REFERENCES tenants ON DELETE CASCADE,
  max_concurrent_runs        integer NOT NULL DEFAULT 5 CHECK (max_concurrent_runs >= 1),
  max_daily_runs             integer NOT NULL DEFAULT 1000 CHECK (max_daily_runs >= 0),
  max_timeout_seconds        integer NOT NULL DEFAULT 3600 CHECK (max_timeout_seconds >= 1),
  max_cpu_cores              numeric(8, 3) NOT NULL DEFAULT 2 CHECK (max_cpu_cores > 0),
  max_memory_mb              integer NOT NULL DEFAULT 2048 CHECK (max_memory_mb >= 6),
  max_queue_seconds          integer NOT NULL DEFAULT 3600 CHECK (max_queue_seconds >= 1),
  working_hours_tjp          text,
  retention_days             integer NOT NULL DEFAULT 30 CHECK (retention_days >= 1),
  max_nodes_per_workflow     integer NOT NULL DEFAULT 50 CHECK (max_nodes_per_workflow >= 1),
  max_concurrent_workflows   integer NOT NULL DEFAULT 10 CHECK (max_concurrent_workflows >= 1),
  max_webhook_endpoints      integer NOT NULL DEFAULT 10 CHECK (max_webhook_endpoints >= 0),
  max_webhook_payload_bytes  integer NOT NULL DEFAULT 262144 CHECK (max_webhook_payload_bytes >= 1024),
  updated_at                 timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now())
);

CREATE TABLE runs (
  track_id               text PRIMARY KEY,
  tenant_id              text NOT NULL REFERENCES tenants ON DELETE CASCADE,
  key_id                 text REFERENCES api_keys ON DELETE SET NULL,
  state                  text NOT NULL DEFAULT 'scheduled' CHECK (state IN (
                           'scheduled', 'queued', 'pulling', 'running', 'paused',
                           'exited', 'failed', 'timeout', 'killed')),
  -- Why the run reached a terminal state (e.g. expired, queue_timeout, stopped, image_pull_failed).
  reason                 text,
  image                  text NOT NULL,
  command                jsonb NOT NULL DEFAULT '[]',
  env                    jsonb NOT NULL DEFAULT '{}',
  name                   text CHECK (char_length(name) <= 128),
  tags                   text[] NOT NULL DEFAULT '{}',
  submitted_at           timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  scheduled_start        timestamptz,
  eligible_start         timestamptz NOT NULL,
  expires_at             timestamptz,
  working_hours_applied  boolean NOT NULL DEFAULT false,
  max_queue_seconds      integer NOT NULL,
  started_at             timestamptz,
  finished_at            timestamptz,
  exit_code              integer,
  container_id           text,
  worker_id              text,
  cpu_limit              numeric(8, 3) NOT NULL,
  memory_limit_mb        integer NOT NULL,
  timeout_seconds        integer NOT NULL,
  clamped                boolean NOT NULL DEFAULT false,
  metered                boolean NOT NULL DEFAULT false,
  stdout_file            text,
  stderr_file            text,
  stdout_bytes           bigint NOT NULL DEFAULT 0,
  stderr_bytes           bigint NOT NULL DEFAULT 0,
  result_summary         text,
  -- Set by the later DAG engine when the run is a workflow node.
  workflow_id            text,
  node_ref               text,
  updated_at             timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now())
);
CREATE INDEX runs_tenant_track ON runs (tenant_id, track_id DESC);
CREATE INDEX runs_tenant_state ON runs (tenant_id, state, track_id DESC);
CREATE INDEX runs_tags ON runs USING gin (tags);
CREATE INDEX runs_waiting ON runs (tenant_id, eligible_start, track_id) WHERE state = 'scheduled';
CREATE INDEX runs_finished ON runs (finished_at) WHERE finished_at IS NOT NULL;

-- Every state change of a run, written in the same transaction as the change itself: the
-- outbox a webhook dispatcher reads (rows with published_at NULL, in event_id order, then marks
-- them published). event_id is a ULID: sortable, and the envelope's stable event_id.
CREATE TABLE run_events (
  event_id      text PRIMARY KEY,
  track_id      text NOT NULL REFERENCES runs ON DELETE CASCADE,
  tenant_id     text NOT NULL,
  ts            timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  from_state    text,
  to_state      text NOT NULL,
  -- The catalogue's event type, e.g. run.running, run.resumed, run.stopping.
  event_type    text NOT NULL,
  reason        text,
  payload       jsonb NOT NULL DEFAULT '{}',
  published_at  timestamptz
);
CREATE INDEX run_events_track ON run_events (track_id, event_id);
CREATE INDEX run_events_unpublished ON run_events (event_id) WHERE published_at IS NULL;

-- Submissions per tenant per UTC day (max_daily_runs); the row is the counter.
CREATE TABLE daily_submissions (
  tenant_id  text NOT NULL REFERENCES tenants ON DELETE CASCADE,
  day        date NOT NULL,
  count      integer NOT NULL DEFAULT 0 CHECK (count >= 0),
  PRIMARY KEY (tenant_id, day)
);

CREATE TABLE utilization_samples (
  track_id         text NOT NULL REFERENCES runs ON DELETE CASCADE,
  ts               timestamptz NOT NULL,
  cpu_percent      double precision NOT NULL,
  memory_mb        double precision NOT NULL,
  memory_limit_mb  integer NOT NULL,
  net_rx_bytes     bigint NOT NULL,
  net_tx_bytes     bigint NOT NULL,
  PRIMARY KEY (track_id, ts)
);

-- Operator actions and refusals against a tenant (what GET /api/v1/audit returns).
CREATE TABLE audit_records (
  audit_id    text PRIMARY KEY,
  tenant_id   text NOT NULL REFERENCES tenants ON DELETE CASCADE,
  ts          timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  -- 'operator' for the CLI, else the key_id that made the request.
  actor       text NOT NULL,
  action      text NOT NULL,
  outcome     text NOT NULL CHECK (outcome IN ('ok', 'refused')),
  target      text,
  detail      jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_records_tenant ON audit_records (tenant_id, audit_id DESC);

-- Metered keys: a run is charged its full timeout_seconds up front and refunded the unused
-- rest at the end; one row of each kind per run at most, so retried activities cannot double it.
CREATE TABLE usage_ledger (
  entry_id    text PRIMARY KEY,
  tenant_id   text NOT NULL REFERENCES tenants ON DELETE CASCADE,
  key_id      text,
  track_id    text NOT NULL,
  kind        text NOT NULL CHECK (kind IN ('charge', 'refund')),
  seconds     bigint NOT NULL CHECK (seconds >= 0),
  ts          timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  UNIQUE (track_id, kind)
);
CREATE INDEX usage_ledger_tenant_ts ON usage_ledger (tenant_id, ts);

-- Down Migration
DROP TABLE usage_ledger;
DROP TABLE audit_records;
DROP TABLE utilization_samples;
DROP TABLE daily_submissions;
DROP TABLE run_events;
DROP TABLE runs;
DROP TABLE tenant_quotas;
DROP TABLE api_key_permissions;
DROP TABLE api_keys;
DROP TABLE tiers;
DROP TABLE tenants;
