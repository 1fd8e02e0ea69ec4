-- The 201 body of an accepted posting, as recorded and returned (plpgsql: a SQL function called
-- from plpgsql is not inlined and costs ~0.3 ms per call to set up; this costs microseconds).
CREATE OR REPLACE FUNCTION ledger.posting_body(p_transaction_id uuid, p_pending boolean, p_accounts jsonb, p_created_at text)
 RETURNS jsonb
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
BEGIN
  RETURN jsonb_build_object('transaction_id', p_transaction_id,
                            'state', CASE WHEN p_pending THEN 'pending' ELSE 'committed' END,
                            'created_at', p_created_at, 'accounts', p_accounts);
END $function$;
