-- Up Migration
-- Balance-as-of without summing the whole journal. Committed legs of sync accounts are
-- pre-aggregated per account, basis (effective_at or finalized_at) and UTC bucket, at two widths:
-- a day and a minute. An as-of at instant T is then
--   whole day buckets before T's day + whole minute buckets of T's day before T's minute
--   + the committed legs inside T's minute up to T (from committed_legs, the journal itself),
-- i.e. at most (days of history + 1,440) bucket rows and one minute of legs, whatever the
-- account's history. Inclusion stays exactly the journal's: a leg counts when its bucket's
-- instant (effective_at or finalized_at) is <= T, and only committed legs are in committed_legs.
--
-- leg_buckets is derived data, not the journal: rows are updated in place and can be rebuilt
-- from committed_legs at any time. They are moved by a statement trigger on committed_legs, so
-- every path that commits legs (posting, commit of a hold, backfill, bench seeding) keeps them
-- current in the same database transaction.
--
-- Only sync accounts have buckets: every writer of a sync account's legs already holds that
-- account's balance row lock (postings and commits lock sync accounts in account_id order), so a
-- bucket row adds no lock wait and no deadlock. Async accounts are never locked by postings;
-- an upserted bucket row would lock them, so their as-of sums committed_legs (index-only, below).

CREATE TABLE leg_buckets (
  account_id   uuid NOT NULL,
  basis        text NOT NULL CHECK (basis IN ('effective', 'recorded')),
  width        text NOT NULL CHECK (width IN ('day', 'minute')),
  bucket_start timestamptz NOT NULL,
  tenant_id    uuid NOT NULL,
  debit_minor  numeric(38, 0) NOT NULL,
  credit_minor numeric(38, 0) NOT NULL,
  leg_count    bigint NOT NULL,
  PRIMARY KEY (account_id, basis, width, bucket_start)
);

ALTER TABLE leg_buckets ENABLE ROW LEVEL SECURITY;
ALTER TABLE leg_buckets FORCE ROW LEVEL SECURITY;
CREATE POLICY leg_buckets_scope ON leg_buckets USING (tenant_id = ctx_tenant() OR ctx_system())
  WITH CHECK (tenant_id = ctx_tenant() OR ctx_system());

-- The rows of `legs` (committed legs) added to their sync accounts' buckets, in primary-key order
-- (a fixed order of row locks among concurrent writers).
CREATE FUNCTION leg_buckets_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ledger.leg_buckets AS b
    (account_id, basis, width, bucket_start, tenant_id, debit_minor, credit_minor, leg_count)
  SELECT l.account_id, x.basis, w.width, date_trunc(w.width, x.at, 'UTC'), l.tenant_id,
         sum(l.debit_minor), sum(l.credit_minor), count(*)
  FROM legs l
  JOIN ledger.accounts a ON a.account_id = l.account_id AND a.balance_tracking = 'sync'
  CROSS JOIN LATERAL (VALUES ('effective', l.effective_at), ('recorded', l.finalized_at)) AS x(basis, at)
  CROSS JOIN (VALUES ('day'), ('minute')) AS w(width)
  GROUP BY 1, 2, 3, 4, 5
  ORDER BY 1, 2, 3, 4
  ON CONFLICT (account_id, basis, width, bucket_start) DO UPDATE
    SET debit_minor = b.debit_minor + EXCLUDED.debit_minor,
        credit_minor = b.credit_minor + EXCLUDED.credit_minor,
        leg_count = b.leg_count + EXCLUDED.leg_count;
  RETURN NULL;
END $$;

-- Created before the backfill: CREATE TRIGGER takes a lock on committed_legs that waits for
-- in-flight writers and holds off new ones until this migration commits, so no leg is missed
-- or counted twice.
CREATE TRIGGER committed_legs_buckets AFTER INSERT ON committed_legs
  REFERENCING NEW TABLE AS legs FOR EACH STATEMENT EXECUTE FUNCTION leg_buckets_add();

SELECT set_config('ledger.system', 'on', true);
INSERT INTO leg_buckets (account_id, basis, width, bucket_start, tenant_id, debit_minor, credit_minor, leg_count)
SELECT l.account_id, x.basis, w.width, date_trunc(w.width, x.at, 'UTC'), l.tenant_id,
       sum(l.debit_minor), sum(l.credit_minor), count(*)
FROM committed_legs l
JOIN accounts a ON a.account_id = l.account_id AND a.balance_tracking = 'sync'
CROSS JOIN LATERAL (VALUES ('effective', l.effective_at), ('recorded', l.finalized_at)) AS x(basis, at)
CROSS JOIN (VALUES ('day'), ('minute')) AS w(width)
GROUP BY 1, 2, 3, 4, 5;
SELECT set_config('ledger.system', '', true);

-- The legs inside one minute (sync) or all of an async account's legs are summed from
-- committed_legs: with tenant_id in the index (the row-level-security qual) that is an
-- index-only scan instead of one heap visit per leg.
CREATE INDEX committed_legs_effective_v2 ON committed_legs (account_id, effective_at)
  INCLUDE (tenant_id, debit_minor, credit_minor);
CREATE INDEX committed_legs_recorded_v2 ON committed_legs (account_id, finalized_at)
  INCLUDE (tenant_id, debit_minor, credit_minor);
DROP INDEX committed_legs_effective;
DROP INDEX committed_legs_recorded;

-- Down Migration
CREATE INDEX committed_legs_effective ON committed_legs (account_id, effective_at) INCLUDE (debit_minor, credit_minor);
CREATE INDEX committed_legs_recorded ON committed_legs (account_id, finalized_at) INCLUDE (debit_minor, credit_minor);
DROP INDEX committed_legs_effective_v2;
DROP INDEX committed_legs_recorded_v2;
DROP TRIGGER committed_legs_buckets ON committed_legs;
DROP FUNCTION leg_buckets_add();
DROP TABLE leg_buckets;
