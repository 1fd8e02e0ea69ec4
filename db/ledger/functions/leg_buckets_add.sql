-- The rows of `legs` (committed legs, a statement trigger's transition table) added to their sync
-- accounts' as-of buckets, a day and a minute wide, in primary-key order (a fixed order of row
-- locks among concurrent writers). One row per leg and width when its effective and recorded
-- instants fall in the same bucket (basis 'both', the common case), else one per basis; the
-- as-of of a basis sums its own rows and the 'both' rows. Every writer of a sync account's legs
-- already holds that account's balance row lock, so a bucket row adds no lock wait.
-- The buckets are found with date_bin on the microsecond count rather than date_trunc(width, at,
-- 'UTC'), which looks the zone up and rebuilds the instant from calendar fields: UTC has no
-- offset, so a UTC day or minute is a whole number of 86,400 s or 60 s steps from any UTC
-- midnight, and date_bin floors (before its origin too). test/integration/ledger/transactions.test.ts
-- checks that both give the same starts.
CREATE OR REPLACE FUNCTION ledger.leg_buckets_add()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
END $function$;
