-- The sync accounts among p_account_ids and their balance rows, locked in account_id order
-- (duplicates and unknown ids are harmless); held until the transaction ends.
CREATE OR REPLACE FUNCTION ledger.posting_lock(p_account_ids uuid[])
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM 1 FROM ledger.accounts a JOIN ledger.balances b USING (account_id)
  WHERE a.account_id = ANY (p_account_ids) AND a.balance_tracking = 'sync'
  ORDER BY a.account_id
  FOR UPDATE OF a, b;
END $function$;
