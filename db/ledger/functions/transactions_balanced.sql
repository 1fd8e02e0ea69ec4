-- Rule 1: debits equal credits per asset type, both sides present; checked at COMMIT.
CREATE OR REPLACE FUNCTION ledger.transactions_balanced()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM ledger.entries WHERE transaction_id = NEW.transaction_id) OR EXISTS (
    SELECT 1 FROM ledger.entries WHERE transaction_id = NEW.transaction_id
    GROUP BY asset_type_id
    HAVING sum(amount_minor) FILTER (WHERE direction = 'debit') IS DISTINCT FROM
           sum(amount_minor) FILTER (WHERE direction = 'credit')) THEN
    RAISE EXCEPTION 'transaction % is unbalanced', NEW.transaction_id USING ERRCODE = 'LB001';
  END IF;
  RETURN NULL;
END $function$;
