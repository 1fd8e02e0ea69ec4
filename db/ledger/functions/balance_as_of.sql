-- Balance-as-of in one statement: the tenant context, the account (row-level security hides
-- another tenant's: no row, 404) and the sum of its committed legs at or before p_at by p_basis.
-- A sync account's sum comes from its buckets (leg_buckets_add): whole UTC days before p_at's day
-- + whole minutes of that day before p_at's minute + the legs of that minute up to p_at, a
-- partition of (-inf, p_at]; a basis sums its own rows and the 'both' rows. An async account has
-- no buckets: the plain sum of committed_legs.
CREATE OR REPLACE FUNCTION ledger.balance_as_of(p_tenant uuid, p_account uuid, p_basis text, p_at timestamp with time zone)
 RETURNS TABLE(normal_side text, scale smallint, balance_tracking text, debits numeric, credits numeric, entry_count numeric)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
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
END $function$;
