-- Under the locks of posting_lock, with posting_prepare's minor units: frozen or closed accounts,
-- then rules 2-4. Returns {error: ...}, or {accounts: [...]} (the response's available_after).
CREATE OR REPLACE FUNCTION ledger.posting_check(p_pending boolean, p_account_ids uuid[], p_directions text[], p_minors numeric[])
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_error jsonb;
  v_accounts jsonb;
BEGIN
  -- Frozen or closed accounts take no posting, in account_id order.
  SELECT jsonb_build_object('code', 'ACCOUNT_NOT_ACTIVE', 'message', format('account %s is %s', a.account_id, a.status),
           'details', jsonb_build_object('account_id', a.account_id, 'status', a.status))
  INTO v_error
  FROM ledger.accounts a WHERE a.account_id = ANY (p_account_ids) AND a.status <> 'active'
  ORDER BY a.account_id LIMIT 1;
  IF v_error IS NOT NULL THEN RETURN jsonb_build_object('error', v_error); END IF;

  -- Rules 2-4 on the locked counters: each sync account once, on the net of the transaction, only
  -- when the transaction lowers its available balance (posted less contra holds).
  WITH deltas AS (
    SELECT l.id,
           coalesce(sum(l.minor) FILTER (WHERE NOT p_pending AND l.direction = 'debit'), 0) AS pd,
           coalesce(sum(l.minor) FILTER (WHERE NOT p_pending AND l.direction = 'credit'), 0) AS pc,
           coalesce(sum(l.minor) FILTER (WHERE p_pending AND l.direction = 'debit'), 0) AS hd,
           coalesce(sum(l.minor) FILTER (WHERE p_pending AND l.direction = 'credit'), 0) AS hc
    FROM unnest(p_account_ids, p_directions, p_minors) AS l(id, direction, minor)
    GROUP BY l.id),
  sync AS (
    SELECT a.account_id, a.floor_minor, t.scale,
           CASE WHEN a.normal_side = 'debit' THEN b.posted_debits - b.posted_credits - b.pending_credits
                ELSE b.posted_credits - b.posted_debits - b.pending_debits END AS before,
           CASE WHEN a.normal_side = 'debit'
                THEN (b.posted_debits + d.pd) - (b.posted_credits + d.pc) - (b.pending_credits + d.hc)
                ELSE (b.posted_credits + d.pc) - (b.posted_debits + d.pd) - (b.pending_debits + d.hd) END AS after
    FROM deltas d
    JOIN ledger.accounts a ON a.account_id = d.id AND a.balance_tracking = 'sync'
    JOIN ledger.balances b ON b.account_id = d.id
    JOIN ledger.asset_types t ON t.asset_type_id = a.asset_type_id)
  SELECT (SELECT jsonb_build_object('code', 'INSUFFICIENT_AVAILABLE',
                   'message', format('account %s would fall below its balance floor', s.account_id),
                   'details', jsonb_build_object('account_id', s.account_id, 'available_minor', s.before::text,
                                                 'available_after_minor', s.after::text,
                                                 'balance_floor_minor', s.floor_minor::text))
          FROM sync s WHERE s.floor_minor IS NOT NULL AND s.after < s.before AND s.after < s.floor_minor
          ORDER BY s.account_id LIMIT 1),
         coalesce((SELECT jsonb_agg(jsonb_build_object('account_id', s.account_id,
                            'available_after_minor', s.after::text,
                            'available_after', ledger.minor_to_decimal(s.after, s.scale)) ORDER BY s.account_id)
                   FROM sync s), '[]'::jsonb)
  INTO v_error, v_accounts;
  IF v_error IS NOT NULL THEN RETURN jsonb_build_object('error', v_error); END IF;
  RETURN jsonb_build_object('accounts', v_accounts);
END $function$;
