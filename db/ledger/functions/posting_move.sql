-- The counters of the posting's sync accounts (rows locked by posting_lock): posted, or pending.
CREATE OR REPLACE FUNCTION ledger.posting_move(p_pending boolean, p_account_ids uuid[], p_directions text[], p_minors numeric[])
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  UPDATE ledger.balances b
  SET posted_debits = b.posted_debits + d.pd, posted_credits = b.posted_credits + d.pc,
      pending_debits = b.pending_debits + d.hd, pending_credits = b.pending_credits + d.hc,
      version = b.version + 1
  FROM (SELECT l.id,
               coalesce(sum(l.minor) FILTER (WHERE NOT p_pending AND l.direction = 'debit'), 0) AS pd,
               coalesce(sum(l.minor) FILTER (WHERE NOT p_pending AND l.direction = 'credit'), 0) AS pc,
               coalesce(sum(l.minor) FILTER (WHERE p_pending AND l.direction = 'debit'), 0) AS hd,
               coalesce(sum(l.minor) FILTER (WHERE p_pending AND l.direction = 'credit'), 0) AS hc
        FROM unnest(p_account_ids, p_directions, p_minors) AS l(id, direction, minor)
        JOIN ledger.accounts a ON a.account_id = l.id AND a.balance_tracking = 'sync'
        GROUP BY l.id) d
  WHERE b.account_id = d.id;
END $function$;
