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
