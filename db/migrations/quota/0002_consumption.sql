-- Up Migration
-- Consumption: strict-mode counters and token buckets (fast mode keeps its own in Redis), the
-- consumption ledger, and the idempotency records of consume, refund and commit.

-- A strict quota policy's usage in one window of one subject. window_key: a fixed window's start
-- (epoch ms), a rolling window's bucket index, or 'lifetime'. numeric: with allow_overage, usage
-- can pass 2^53 (and int8).
CREATE TABLE counters (
  tenant_id  text NOT NULL,
  subject    text NOT NULL,
  policy_id  text NOT NULL,
  window_key text NOT NULL,
  used       numeric NOT NULL DEFAULT 0,
  -- When the row stops counting for any window (the counter sweep deletes it after).
  expires_at timestamptz,
  PRIMARY KEY (tenant_id, subject, policy_id, window_key)
);
CREATE INDEX counters_expired ON counters (expires_at) WHERE expires_at IS NOT NULL;

-- A strict rate-limit policy's token bucket for one subject (a missing row is a full bucket).
CREATE TABLE buckets (
  tenant_id  text NOT NULL,
  subject    text NOT NULL,
  policy_id  text NOT NULL,
  -- Tokens in the representation of api/quota/decisions/token-bucket.ts.
  tokens     numeric NOT NULL,
  updated_ms bigint NOT NULL,
  PRIMARY KEY (tenant_id, subject, policy_id)
);

-- The consumption ledger: one row per resource per event, signed (consume +, refund -, reserve +
-- held, commit actual - held, release and expire - held), so a window's sum of a subject's
-- entries is its usage. id orders pages.
CREATE TABLE ledger_entries (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id       text NOT NULL,
  event_id        text NOT NULL,
  subject         text NOT NULL,
  resource        text,
  amount          bigint NOT NULL,
  entry_type      text NOT NULL
                  CHECK (entry_type IN ('consume', 'refund', 'reserve', 'commit', 'release', 'expire')),
  idempotency_key text,
  reservation_id  text,
  -- Written after the answer (fast mode's flush from the Redis stream) rather than in the
  -- decision's own transaction.
  strict_deferred boolean NOT NULL DEFAULT false,
  metadata        jsonb,
  occurred_at     timestamptz NOT NULL,
  recorded_at     timestamptz NOT NULL DEFAULT now(),
  -- A flushed event is written once, however often the flush retries.
  UNIQUE (event_id, resource, entry_type)
);
CREATE INDEX ledger_entries_tenant ON ledger_entries (tenant_id, id);
CREATE INDEX ledger_entries_subject ON ledger_entries (tenant_id, subject, id);
CREATE INDEX ledger_entries_time ON ledger_entries (tenant_id, occurred_at);

-- An idempotency key's first answer, replayed to every retry of the same request. request_hash:
-- a retry with another body under the same key is refused.
CREATE TABLE idempotency (
  tenant_id    text NOT NULL,
  endpoint     text NOT NULL,
  key          text NOT NULL,
  request_hash bytea NOT NULL,
  status       smallint NOT NULL,
  response     jsonb NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, endpoint, key)
);
CREATE INDEX idempotency_created ON idempotency (created_at);

-- Background jobs' runs (api/quota/jobs.ts): on a Temporal schedule or on demand; /healthz/jobs
-- compares each job's last success with its budget. A deployment's runs are its own (a test run
-- beside a local stack on one database: task_queue_prefix).
CREATE TABLE job_runs (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  task_queue_prefix text NOT NULL,
  job         text NOT NULL,
  trigger     text NOT NULL CHECK (trigger IN ('schedule', 'manual')),
  ok          boolean NOT NULL,
  started_at  timestamptz NOT NULL,
  finished_at timestamptz NOT NULL,
  report      jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX job_runs_job ON job_runs (task_queue_prefix, job, finished_at DESC) WHERE ok;

-- Down Migration
DROP TABLE job_runs, idempotency, ledger_entries, buckets, counters;
