-- New legs on async accounts: posted (committed transaction) or pending (hold), per account.
CREATE OR REPLACE FUNCTION ledger.async_deltas_on_entries()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  INSERT INTO ledger.async_balance_deltas
    (account_id, tenant_id, transaction_id, posted_debits, posted_credits, pending_debits, pending_credits)
  SELECT n.account_id, n.tenant_id, n.transaction_id,
         coalesce(sum(n.amount_minor) FILTER (WHERE t.state = 'committed' AND n.direction = 'debit'), 0),
         coalesce(sum(n.amount_minor) FILTER (WHERE t.state = 'committed' AND n.direction = 'credit'), 0),
         coalesce(sum(n.amount_minor) FILTER (WHERE t.state = 'pending' AND n.direction = 'debit'), 0),
         coalesce(sum(n.amount_minor) FILTER (WHERE t.state = 'pending' AND n.direction = 'credit'), 0)
  FROM new_entries n
  JOIN ledger.accounts a ON a.account_id = n.account_id AND a.balance_tracking = 'async'
  JOIN ledger.transactions t ON t.transaction_id = n.transaction_id
  WHERE t.state IN ('committed', 'pending')
  GROUP BY n.account_id, n.tenant_id, n.transaction_id
  ORDER BY n.account_id;
  RETURN NULL;
END $function$;
