-- Returns 'claimed', or the existing record's state with its hash and response for the caller to judge.
CREATE OR REPLACE FUNCTION ledger.claim_idempotency_key(p_tenant uuid, p_endpoint text, p_key text, p_sha256 bytea, p_lock_ms integer)
 RETURNS TABLE(claimed boolean, request_sha256 bytea, state text, response_status smallint, response_body jsonb)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
  v_claimed boolean;
BEGIN
  PERFORM set_config('ledger.tenant_id', p_tenant::text, true);
  INSERT INTO ledger.idempotency_keys AS k (tenant_id, endpoint, key, request_sha256, state, locked_until)
  VALUES (p_tenant, p_endpoint, p_key, p_sha256, 'in_flight', now() + make_interval(secs => p_lock_ms / 1000.0))
  ON CONFLICT ON CONSTRAINT idempotency_keys_pkey DO UPDATE SET locked_until = EXCLUDED.locked_until
    WHERE k.state = 'in_flight' AND k.locked_until < now() AND k.request_sha256 = EXCLUDED.request_sha256
  RETURNING true INTO v_claimed;
  IF v_claimed THEN
    RETURN QUERY SELECT true, p_sha256, 'in_flight'::text, NULL::smallint, NULL::jsonb;
  ELSE
    RETURN QUERY SELECT false, i.request_sha256, i.state, i.response_status, i.response_body
      FROM ledger.idempotency_keys i WHERE i.tenant_id = p_tenant AND i.endpoint = p_endpoint AND i.key = p_key;
  END IF;
  PERFORM set_config('ledger.tenant_id', '', true);
END $function$;
