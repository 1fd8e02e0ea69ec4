-- Only `state` and `finalized_at` change, and only pending → final.
CREATE OR REPLACE FUNCTION ledger.transactions_guard()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'transactions are append-only' USING ERRCODE = 'LA001';
  END IF;
  IF OLD.state <> 'pending' OR NEW.state = 'pending'
     OR (NEW.transaction_id, NEW.tenant_id, NEW.pending, NEW.description, NEW.external_id, NEW.metadata,
         NEW.effective_at, NEW.expires_at, NEW.created_at)
        IS DISTINCT FROM
        (OLD.transaction_id, OLD.tenant_id, OLD.pending, OLD.description, OLD.external_id, OLD.metadata,
         OLD.effective_at, OLD.expires_at, OLD.created_at) THEN
    RAISE EXCEPTION 'a transaction only moves from pending to a final state' USING ERRCODE = 'LA001';
  END IF;
  RETURN NEW;
END $function$;
