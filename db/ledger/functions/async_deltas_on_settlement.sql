-- A hold leaving pending: its pending amounts released, and posted added when it committed.
CREATE OR REPLACE FUNCTION ledger.async_deltas_on_settlement()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  INSERT INTO ledger.async_balance_deltas
    (account_id, tenant_id, transaction_id, posted_debits, posted_credits, pending_debits, pending_credits)
  SELECT e.account_id, e.tenant_id, e.transaction_id,
         CASE WHEN NEW.state = 'committed' THEN coalesce(sum(e.amount_minor) FILTER (WHERE e.direction = 'debit'), 0) ELSE 0 END,
         CASE WHEN NEW.state = 'committed' THEN coalesce(sum(e.amount_minor) FILTER (WHERE e.direction = 'credit'), 0) ELSE 0 END,
         -coalesce(sum(e.amount_minor) FILTER (WHERE e.direction = 'debit'), 0),
         -coalesce(sum(e.amount_minor) FILTER (WHERE e.direction = 'credit'), 0)
  FROM ledger.entries e
  JOIN ledger.accounts a ON a.account_id = e.account_id AND a.balance_tracking = 'async'
  WHERE e.transaction_id = NEW.transaction_id
  GROUP BY e.account_id, e.tenant_id, e.transaction_id
  ORDER BY e.account_id;
  RETURN NULL;
END $function$;
