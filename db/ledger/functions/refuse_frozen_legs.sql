-- Statement-level, over the legs the statement inserted (both tables carry tenant and account).
CREATE OR REPLACE FUNCTION ledger.refuse_frozen_legs()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_freeze record;
BEGIN
  -- The common case, no freeze anywhere in sight, costs one probe of an empty index.
  IF NOT EXISTS (SELECT 1 FROM ledger.posting_freezes) THEN RETURN NULL; END IF;
  SELECT f.asset_type_id, max(f.retry_after_seconds) AS retry_after INTO v_freeze
  FROM (SELECT DISTINCT n.tenant_id, a.asset_type_id
        FROM new_legs n JOIN ledger.accounts a ON a.account_id = n.account_id) l
  JOIN ledger.tenants t ON t.tenant_id = l.tenant_id
  JOIN ledger.posting_freezes f
    ON (f.tenant_id = l.tenant_id AND (f.asset_type_id IS NULL OR f.asset_type_id = l.asset_type_id))
    OR (f.tenant_id = t.parent_id AND f.asset_type_id IS NULL)
  GROUP BY f.asset_type_id
  ORDER BY f.asset_type_id NULLS FIRST
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'posting is frozen'
      USING ERRCODE = 'LF001',
            DETAIL = jsonb_build_object('retry_after_seconds', v_freeze.retry_after,
                                        'asset_type_id', v_freeze.asset_type_id)::text;
  END IF;
  RETURN NULL;
END $function$;
