-- A balance row with an as-of that says what it includes, read in one snapshot with the queue:
-- no queued delta for the account means the row holds every change committed before this
-- statement (as_of = now); otherwise it holds every change acknowledged before the later of
-- its last drain and its oldest queued delta's start. Sync accounts never have queued deltas.
CREATE OR REPLACE FUNCTION ledger.account_balance(p_account uuid)
 RETURNS TABLE(account_id uuid, posted_debits numeric, posted_credits numeric, pending_debits numeric, pending_credits numeric, version bigint, rolled_up_at timestamp with time zone, as_of timestamp with time zone, queued_deltas bigint)
 LANGUAGE sql
 STABLE
AS $function$
  SELECT b.account_id, b.posted_debits, b.posted_credits, b.pending_debits, b.pending_credits, b.version,
         b.rolled_up_at,
         CASE WHEN q.n = 0 THEN ledger.now_ms() ELSE greatest(b.rolled_up_at, q.oldest) END,
         q.n
  FROM ledger.balances b
  CROSS JOIN LATERAL (SELECT count(*) AS n, min(d.created_at) AS oldest
                      FROM ledger.async_balance_deltas d WHERE d.account_id = b.account_id) q
  WHERE b.account_id = p_account
$function$;
