-- Up Migration
-- The bucket trigger finds a leg's day and minute with date_bin on the microsecond count instead
-- of date_trunc(width, at, 'UTC'), which looks the zone up, breaks the instant into calendar
-- fields and rebuilds it, four times per leg. The buckets are the same: UTC has no offset, so a
-- UTC day or minute is a whole number of 86,400 s or 60 s steps from any UTC midnight, and
-- date_bin floors (before its origin too). balance_as_of keeps date_trunc for its two bounds per
-- call; test/integration/ledger/as-of.test.ts checks that both give the same starts.
-- One-connection probe, batches of 16 postings: 0.350 → 0.331 and 0.425 → 0.381 ms of Postgres
-- CPU per posting (best of 8 and of 12 rounds).

CREATE OR REPLACE FUNCTION leg_buckets_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ledger.leg_buckets AS b
    (account_id, basis, width, bucket_start, tenant_id, debit_minor, credit_minor, leg_count)
  SELECT l.account_id, x.basis, w.width, x.bucket_start, l.tenant_id,
         sum(l.debit_minor), sum(l.credit_minor), count(*)
  FROM legs l
  JOIN ledger.accounts a ON a.account_id = l.account_id AND a.balance_tracking = 'sync'
  CROSS JOIN (VALUES ('day', interval '1 day'), ('minute', interval '1 minute')) AS w(width, step)
  CROSS JOIN LATERAL (SELECT date_bin(w.step, l.effective_at, timestamptz '2000-01-01 00:00:00+00') AS e,
                             date_bin(w.step, l.finalized_at, timestamptz '2000-01-01 00:00:00+00') AS r) i
  CROSS JOIN LATERAL (VALUES ('both', i.e, i.e = i.r), ('effective', i.e, i.e <> i.r),
                             ('recorded', i.r, i.e <> i.r)) AS x(basis, bucket_start, used)
  WHERE x.used
  GROUP BY 1, 2, 3, 4, 5
  ORDER BY 1, 2, 3, 4
  ON CONFLICT (account_id, basis, width, bucket_start) DO UPDATE
    SET debit_minor = b.debit_minor + EXCLUDED.debit_minor,
        credit_minor = b.credit_minor + EXCLUDED.credit_minor,
        leg_count = b.leg_count + EXCLUDED.leg_count;
  RETURN NULL;
END $$;

-- Down Migration
CREATE OR REPLACE FUNCTION leg_buckets_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ledger.leg_buckets AS b
    (account_id, basis, width, bucket_start, tenant_id, debit_minor, credit_minor, leg_count)
  SELECT l.account_id, x.basis, w.width, x.bucket_start, l.tenant_id,
         sum(l.debit_minor), sum(l.credit_minor), count(*)
  FROM legs l
  JOIN ledger.accounts a ON a.account_id = l.account_id AND a.balance_tracking = 'sync'
  CROSS JOIN (VALUES ('day'), ('minute')) AS w(width)
  CROSS JOIN LATERAL (SELECT date_trunc(w.width, l.effective_at, 'UTC') AS e,
                             date_trunc(w.width, l.finalized_at, 'UTC') AS r) i
  CROSS JOIN LATERAL (VALUES ('both', i.e, i.e = i.r), ('effective', i.e, i.e <> i.r),
                             ('recorded', i.r, i.e <> i.r)) AS x(basis, bucket_start, used)
  WHERE x.used
  GROUP BY 1, 2, 3, 4, 5
  ORDER BY 1, 2, 3, 4
  ON CONFLICT (account_id, basis, width, bucket_start) DO UPDATE
    SET debit_minor = b.debit_minor + EXCLUDED.debit_minor,
        credit_minor = b.credit_minor + EXCLUDED.credit_minor,
        leg_count = b.leg_count + EXCLUDED.leg_count;
  RETURN NULL;
END $$;
