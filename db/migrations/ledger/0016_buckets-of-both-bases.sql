-- Up Migration
-- One as-of bucket row per leg and width instead of two when the leg's effective and recorded
-- instants fall in the same bucket: basis 'both' counts for either basis. That is the common
-- case (a posting without effective_at is effective when it is recorded), so a posted leg now
-- upserts two bucket rows (a day and a minute) instead of four: the bucket trigger was about a
-- quarter of Postgres's CPU per posting. A backdated leg whose instants fall in different
-- buckets of a width still gets one row per basis in that width.
--
-- Rows of both kinds live side by side and add up (the rows 0003's trigger wrote, one per basis,
-- stay as they are): the as-of of a basis sums its own rows and the 'both' rows, so the three
-- ranges of balance_as_of still partition (-inf, T] for each basis.

-- NOT VALID: every row already satisfies the wider check (the old one was narrower), so the
-- table is not scanned while this migration holds its lock (postings write buckets); new rows
-- are checked all the same.
ALTER TABLE leg_buckets DROP CONSTRAINT leg_buckets_basis_check;
ALTER TABLE leg_buckets ADD CONSTRAINT leg_buckets_basis_check
  CHECK (basis IN ('effective', 'recorded', 'both')) NOT VALID;

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

CREATE OR REPLACE FUNCTION balance_as_of(p_tenant uuid, p_account uuid, p_basis text, p_at timestamptz)
RETURNS TABLE (normal_side text, scale smallint, balance_tracking text, debits numeric, credits numeric,
               entry_count numeric)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  v_side text;
  v_scale smallint;
  v_tracking text;
  v_day timestamptz := date_trunc('day', p_at, 'UTC');
  v_minute timestamptz := date_trunc('minute', p_at, 'UTC');
BEGIN
  PERFORM set_config('ledger.tenant_id', p_tenant::text, true);
  SELECT a.normal_side, t.scale, a.balance_tracking INTO v_side, v_scale, v_tracking
  FROM ledger.accounts a JOIN ledger.asset_types t USING (asset_type_id)
  WHERE a.account_id = p_account;
  IF NOT FOUND THEN
    PERFORM set_config('ledger.tenant_id', '', true);
    RETURN;
  END IF;
  IF v_tracking = 'async' THEN
    IF p_basis = 'effective' THEN
      RETURN QUERY SELECT v_side, v_scale, v_tracking, coalesce(sum(l.debit_minor), 0), coalesce(sum(l.credit_minor), 0),
                          count(*)::numeric
        FROM ledger.committed_legs l WHERE l.account_id = p_account AND l.effective_at <= p_at;
    ELSE
      RETURN QUERY SELECT v_side, v_scale, v_tracking, coalesce(sum(l.debit_minor), 0), coalesce(sum(l.credit_minor), 0),
                          count(*)::numeric
        FROM ledger.committed_legs l WHERE l.account_id = p_account AND l.finalized_at <= p_at;
    END IF;
  ELSE
    RETURN QUERY
      SELECT v_side, v_scale, v_tracking, coalesce(sum(s.d), 0), coalesce(sum(s.c), 0), coalesce(sum(s.n), 0)
      FROM (
        SELECT b.debit_minor AS d, b.credit_minor AS c, b.leg_count AS n FROM ledger.leg_buckets b
        WHERE b.account_id = p_account AND b.basis IN (p_basis, 'both') AND b.width = 'day' AND b.bucket_start < v_day
        UNION ALL
        SELECT b.debit_minor, b.credit_minor, b.leg_count FROM ledger.leg_buckets b
        WHERE b.account_id = p_account AND b.basis IN (p_basis, 'both') AND b.width = 'minute'
          AND b.bucket_start >= v_day AND b.bucket_start < v_minute
        UNION ALL
        SELECT l.debit_minor, l.credit_minor, 1 FROM ledger.committed_legs l
        WHERE p_basis = 'effective' AND l.account_id = p_account AND l.effective_at >= v_minute AND l.effective_at <= p_at
        UNION ALL
        SELECT l.debit_minor, l.credit_minor, 1 FROM ledger.committed_legs l
        WHERE p_basis = 'recorded' AND l.account_id = p_account AND l.finalized_at >= v_minute AND l.finalized_at <= p_at
      ) s;
  END IF;
  PERFORM set_config('ledger.tenant_id', '', true);
END $$;

-- Down Migration
-- Each 'both' row becomes one row per basis (added to any row of that basis already there), and
-- the trigger writes one row per basis again. balance_as_of stays: with no 'both' rows its sums
-- are 0007's.
SELECT set_config('ledger.system', 'on', true);
INSERT INTO leg_buckets AS b (account_id, basis, width, bucket_start, tenant_id, debit_minor, credit_minor, leg_count)
SELECT o.account_id, x.basis, o.width, o.bucket_start, o.tenant_id, o.debit_minor, o.credit_minor, o.leg_count
FROM leg_buckets o CROSS JOIN (VALUES ('effective'), ('recorded')) AS x(basis)
WHERE o.basis = 'both'
ON CONFLICT (account_id, basis, width, bucket_start) DO UPDATE
  SET debit_minor = b.debit_minor + EXCLUDED.debit_minor,
      credit_minor = b.credit_minor + EXCLUDED.credit_minor,
      leg_count = b.leg_count + EXCLUDED.leg_count;
DELETE FROM leg_buckets WHERE basis = 'both';
SELECT set_config('ledger.system', '', true);
ALTER TABLE leg_buckets DROP CONSTRAINT leg_buckets_basis_check;
ALTER TABLE leg_buckets ADD CONSTRAINT leg_buckets_basis_check CHECK (basis IN ('effective', 'recorded'));

CREATE OR REPLACE FUNCTION leg_buckets_add() RETURNS trigger LANGUAGE plpgsql AS $$
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

