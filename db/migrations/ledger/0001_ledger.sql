-- Up Migration
-- The double-entry ledger. Amounts are integer minor units (numeric(38,0)). Every tenant
-- table has row-level security, FORCEd because the application role owns the tables: the
-- application sets `ledger.tenant_id` per transaction with set_config(..., true). Two narrow
-- contexts exist besides a tenant: `ledger.auth = on` (key lookup before the tenant is known)
-- and `ledger.system = on` (operator CLI, hold dispatcher/sweeper, async rollup).

CREATE FUNCTION ctx_tenant() RETURNS uuid LANGUAGE sql STABLE AS
$$ SELECT NULLIF(current_setting('ledger.tenant_id', true), '')::uuid $$;
CREATE FUNCTION ctx_system() RETURNS boolean LANGUAGE sql STABLE AS
$$ SELECT coalesce(current_setting('ledger.system', true), '') = 'on' $$;
CREATE FUNCTION ctx_auth() RETURNS boolean LANGUAGE sql STABLE AS
$$ SELECT coalesce(current_setting('ledger.auth', true), '') = 'on' $$;

CREATE FUNCTION now_ms() RETURNS timestamptz LANGUAGE sql STABLE AS
$$ SELECT date_trunc('milliseconds', now()) $$;

-- Tenants: roots are provisioned by an operator; sub-tenants by a partner key of their root.
CREATE TABLE tenants (
  tenant_id     uuid PRIMARY KEY,
  parent_id     uuid REFERENCES tenants (tenant_id),
  name          text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
  kind          text NOT NULL DEFAULT 'production' CHECK (kind IN ('production', 'sandbox')),
  contact_email text CHECK (char_length(contact_email) <= 255),
  status        text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
  created_at    timestamptz NOT NULL DEFAULT now_ms(),
  updated_at    timestamptz NOT NULL DEFAULT now_ms(),
  CHECK (parent_id IS DISTINCT FROM tenant_id)
);
CREATE INDEX tenants_parent ON tenants (parent_id, tenant_id DESC) WHERE parent_id IS NOT NULL;

-- Depth is capped at one: a sub-tenant's parent must be a root.
CREATE FUNCTION tenants_depth_one() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.parent_id IS NOT NULL AND EXISTS (
       SELECT 1 FROM ledger.tenants WHERE tenant_id = NEW.parent_id AND parent_id IS NOT NULL) THEN
    RAISE EXCEPTION 'sub-tenant depth is capped at one' USING ERRCODE = 'LD001';
  END IF;
  IF NEW.kind IS DISTINCT FROM OLD.kind AND TG_OP = 'UPDATE' THEN
    RAISE EXCEPTION 'tenant kind is immutable' USING ERRCODE = 'LI001';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER tenants_depth_one BEFORE INSERT OR UPDATE ON tenants
  FOR EACH ROW EXECUTE FUNCTION tenants_depth_one();

CREATE TABLE api_keys (
  key_id        uuid PRIMARY KEY,
  tenant_id     uuid NOT NULL REFERENCES tenants (tenant_id),
  secret_sha256 bytea NOT NULL CHECK (octet_length(secret_sha256) = 32),
  role          text NOT NULL CHECK (role IN ('ledger_admin', 'ledger_poster', 'ledger_reader', 'ledger_partner')),
  label         text CHECK (char_length(label) <= 255),
  created_at    timestamptz NOT NULL DEFAULT now_ms(),
  expires_at    timestamptz,
  revoked_at    timestamptz
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id, key_id DESC);

CREATE TABLE asset_types (
  asset_type_id uuid PRIMARY KEY,
  tenant_id     uuid NOT NULL REFERENCES tenants (tenant_id),
  code          text NOT NULL CHECK (char_length(code) BETWEEN 1 AND 64),
  kind          text NOT NULL CHECK (kind IN ('fiat', 'credit', 'inventory')),
  scale         smallint NOT NULL CHECK (scale BETWEEN 0 AND 12),
  status        text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'superseded')),
  description   text CHECK (char_length(description) <= 1024),
  created_at    timestamptz NOT NULL DEFAULT now_ms(),
  UNIQUE (tenant_id, code),
  UNIQUE (tenant_id, asset_type_id)
);

CREATE TABLE accounts (
  account_id       uuid PRIMARY KEY,
  tenant_id        uuid NOT NULL REFERENCES tenants (tenant_id),
  asset_type_id    uuid NOT NULL,
  name             text NOT NULL DEFAULT '' CHECK (char_length(name) <= 255),
  normal_side      text NOT NULL CHECK (normal_side IN ('debit', 'credit')),
  -- NULL = unbounded (opt-in); 0 = may not go below zero (the default).
  floor_minor      numeric(38, 0),
  balance_tracking text NOT NULL DEFAULT 'sync' CHECK (balance_tracking IN ('sync', 'async')),
  status           text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'frozen', 'closed')),
  metadata         jsonb NOT NULL DEFAULT '{}',
  created_at       timestamptz NOT NULL DEFAULT now_ms(),
  CHECK (balance_tracking = 'sync' OR floor_minor IS NULL),
  FOREIGN KEY (tenant_id, asset_type_id) REFERENCES asset_types (tenant_id, asset_type_id),
  UNIQUE (tenant_id, account_id)
);
CREATE INDEX accounts_tenant_page ON accounts (tenant_id, account_id DESC);

-- One row per account: the counters postings move, under a row lock, in the posting transaction.
-- Async accounts' rows are advanced by the rollup instead (rolled_up_at says how fresh).
CREATE TABLE balances (
  account_id      uuid PRIMARY KEY REFERENCES accounts (account_id),
  tenant_id       uuid NOT NULL,
  posted_debits   numeric(38, 0) NOT NULL DEFAULT 0 CHECK (posted_debits >= 0),
  posted_credits  numeric(38, 0) NOT NULL DEFAULT 0 CHECK (posted_credits >= 0),
  pending_debits  numeric(38, 0) NOT NULL DEFAULT 0 CHECK (pending_debits >= 0),
  pending_credits numeric(38, 0) NOT NULL DEFAULT 0 CHECK (pending_credits >= 0),
  version         bigint NOT NULL DEFAULT 0,
  rolled_up_at    timestamptz
);

CREATE TABLE transactions (
  transaction_id uuid PRIMARY KEY,
  tenant_id      uuid NOT NULL REFERENCES tenants (tenant_id),
  state          text NOT NULL CHECK (state IN ('pending', 'committed', 'voided', 'expired')),
  pending        boolean NOT NULL,
  description    text CHECK (char_length(description) <= 1024),
  external_id    text CHECK (char_length(external_id) <= 255),
  metadata       jsonb NOT NULL DEFAULT '{}',
  effective_at   timestamptz NOT NULL,
  expires_at     timestamptz,
  created_at     timestamptz NOT NULL,
  finalized_at   timestamptz,
  CHECK (pending = (expires_at IS NOT NULL)),
  CHECK ((state = 'pending') = (finalized_at IS NULL)),
  UNIQUE (tenant_id, transaction_id)
);
CREATE UNIQUE INDEX transactions_external_id ON transactions (tenant_id, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX transactions_pending_expiry ON transactions (expires_at) WHERE state = 'pending';

-- Only `state` and `finalized_at` change, and only pending → final.
CREATE FUNCTION transactions_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'transactions are append-only' USING ERRCODE = 'LA001';
  END IF;
  IF OLD.state <> 'pending' OR NEW.state = 'pending'
     OR (NEW.transaction_id, NEW.tenant_id, NEW.pending, NEW.description, NEW.external_id, NEW.metadata,
         NEW.effective_at, NEW.expires_at, NEW.created_at)
        IS DISTINCT FROM
        (OLD.transaction_id, OLD.tenant_id, OLD.pending, OLD.description, OLD.external_id, OLD.metadata,
         OLD.effective_at, OLD.expires_at, OLD.created_at) THEN
    RAISE EXCEPTION 'a transaction only moves from pending to a final state' USING ERRCODE = 'LA001';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER transactions_guard BEFORE UPDATE OR DELETE ON transactions
  FOR EACH ROW EXECUTE FUNCTION transactions_guard();

-- The journal: one row per leg, never updated or deleted.
CREATE TABLE entries (
  entry_id       uuid PRIMARY KEY,
  tenant_id      uuid NOT NULL,
  transaction_id uuid NOT NULL REFERENCES transactions (transaction_id),
  account_id     uuid NOT NULL REFERENCES accounts (account_id),
  asset_type_id  uuid NOT NULL,
  line_no        smallint NOT NULL CHECK (line_no BETWEEN 1 AND 100),
  direction      text NOT NULL CHECK (direction IN ('debit', 'credit')),
  amount_minor   numeric(38, 0) NOT NULL CHECK (amount_minor > 0),
  created_at     timestamptz NOT NULL,
  UNIQUE (transaction_id, line_no),
  FOREIGN KEY (tenant_id, account_id) REFERENCES accounts (tenant_id, account_id)
);
CREATE INDEX entries_account_page ON entries (account_id, entry_id DESC);

-- Committed legs with their bitemporal instants: what balance-as-of sums. Append-only too;
-- written when a transaction becomes committed (at posting or at commit of a hold).
CREATE TABLE committed_legs (
  entry_id       uuid PRIMARY KEY REFERENCES entries (entry_id),
  tenant_id      uuid NOT NULL,
  account_id     uuid NOT NULL,
  effective_at   timestamptz NOT NULL,
  finalized_at   timestamptz NOT NULL,
  debit_minor    numeric(38, 0) NOT NULL,
  credit_minor   numeric(38, 0) NOT NULL
);
CREATE INDEX committed_legs_effective ON committed_legs (account_id, effective_at) INCLUDE (debit_minor, credit_minor);
CREATE INDEX committed_legs_recorded ON committed_legs (account_id, finalized_at) INCLUDE (debit_minor, credit_minor);

CREATE FUNCTION append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'LA001';
END $$;
CREATE TRIGGER entries_append_only BEFORE UPDATE OR DELETE ON entries
  FOR EACH ROW EXECUTE FUNCTION append_only();
CREATE TRIGGER entries_no_truncate BEFORE TRUNCATE ON entries
  FOR EACH STATEMENT EXECUTE FUNCTION append_only();
CREATE TRIGGER committed_legs_append_only BEFORE UPDATE OR DELETE ON committed_legs
  FOR EACH ROW EXECUTE FUNCTION append_only();
CREATE TRIGGER committed_legs_no_truncate BEFORE TRUNCATE ON committed_legs
  FOR EACH STATEMENT EXECUTE FUNCTION append_only();
CREATE TRIGGER transactions_no_truncate BEFORE TRUNCATE ON transactions
  FOR EACH STATEMENT EXECUTE FUNCTION append_only();

-- Rule 1: debits equal credits per asset type, both sides present; checked at COMMIT.
CREATE FUNCTION transactions_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM ledger.entries WHERE transaction_id = NEW.transaction_id) OR EXISTS (
    SELECT 1 FROM ledger.entries WHERE transaction_id = NEW.transaction_id
    GROUP BY asset_type_id
    HAVING sum(amount_minor) FILTER (WHERE direction = 'debit') IS DISTINCT FROM
           sum(amount_minor) FILTER (WHERE direction = 'credit')) THEN
    RAISE EXCEPTION 'transaction % is unbalanced', NEW.transaction_id USING ERRCODE = 'LB001';
  END IF;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER transactions_balanced AFTER INSERT ON transactions
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION transactions_balanced();

-- Idempotency records, per tenant and endpoint.
CREATE TABLE idempotency_keys (
  tenant_id       uuid NOT NULL,
  endpoint        text NOT NULL,
  key             text NOT NULL CHECK (char_length(key) BETWEEN 1 AND 255),
  request_sha256  bytea NOT NULL,
  state           text NOT NULL CHECK (state IN ('in_flight', 'completed')),
  locked_until    timestamptz NOT NULL,
  response_status smallint,
  response_body   jsonb,
  created_at      timestamptz NOT NULL DEFAULT now_ms(),
  PRIMARY KEY (tenant_id, endpoint, key)
);

-- Holds to hand to Temporal: written in the posting transaction, drained by a dispatcher.
CREATE TABLE hold_outbox (
  transaction_id uuid PRIMARY KEY,
  tenant_id      uuid NOT NULL,
  expires_at     timestamptz NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now_ms(),
  attempts       integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now_ms(),
  dispatched_at  timestamptz
);
CREATE INDEX hold_outbox_due ON hold_outbox (next_attempt_at) WHERE dispatched_at IS NULL;

-- Calls per root tenant and month, for the monthly quota when Redis is unreachable.
CREATE TABLE unmetered_calls (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id  uuid NOT NULL,
  month      text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now_ms()
);

-- Row-level security everywhere a tenant's rows live.
ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenants FORCE ROW LEVEL SECURITY;
CREATE POLICY tenants_scope ON tenants
  USING (tenant_id = ctx_tenant() OR parent_id = ctx_tenant() OR ctx_auth() OR ctx_system())
  WITH CHECK (parent_id = ctx_tenant() OR ctx_system());

ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY api_keys_scope ON api_keys
  USING (ctx_auth() OR ctx_system()
         OR tenant_id IN (SELECT t.tenant_id FROM tenants t WHERE t.parent_id = ctx_tenant()))
  WITH CHECK (ctx_system()
         OR tenant_id IN (SELECT t.tenant_id FROM tenants t WHERE t.parent_id = ctx_tenant()));

DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['asset_types', 'accounts', 'balances', 'transactions', 'entries',
                           'committed_legs', 'idempotency_keys', 'hold_outbox', 'unmetered_calls'] LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY %I ON %I USING (tenant_id = ctx_tenant() OR ctx_system())
                      WITH CHECK (tenant_id = ctx_tenant() OR ctx_system())', t || '_scope', t);
  END LOOP;
END $$;

-- Down Migration
DROP TABLE unmetered_calls, hold_outbox, idempotency_keys, committed_legs, entries, transactions,
  balances, accounts, asset_types, api_keys, tenants;
DROP FUNCTION transactions_balanced(), append_only(), transactions_guard(), tenants_depth_one(),
  now_ms(), ctx_auth(), ctx_system(), ctx_tenant();
