-- A mutating request's key lookup and idempotency claim in one statement (one round trip instead
-- of two). The credential row is returned as find_credential returns it, and the API judges it
-- (401/403). The key is claimed only when that judgement
-- can only be "authenticated with the required role": the secret's hash matches, the key is not
-- revoked or expired, its tenant (and the tenant's parent) is active, and its role is the one the
-- route needs; otherwise claimed is null and nothing is written.
CREATE OR REPLACE FUNCTION ledger.authenticate_and_claim(p_key_id uuid, p_secret_sha256 bytea, p_role text, p_endpoint text, p_key text, p_request_sha256 bytea, p_lock_ms integer)
 RETURNS TABLE(key_id uuid, tenant_id uuid, role text, secret_sha256 bytea, expired boolean, revoked boolean, tenant_status text, parent_id uuid, parent_status text, claimed boolean, request_sha256 bytea, state text, response_status smallint, response_body jsonb)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
  c record;
  v_claimed boolean;
  v_request_sha256 bytea;
  v_state text;
  v_status smallint;
  v_body jsonb;
BEGIN
  SELECT * INTO c FROM ledger.find_credential(p_key_id);
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF p_key IS NOT NULL AND c.secret_sha256 = p_secret_sha256 AND NOT c.revoked AND NOT c.expired
     AND c.tenant_status = 'active' AND (c.parent_id IS NULL OR c.parent_status = 'active')
     AND c.role = p_role THEN
    SELECT x.claimed, x.request_sha256, x.state, x.response_status, x.response_body
    INTO v_claimed, v_request_sha256, v_state, v_status, v_body
    FROM ledger.claim_idempotency_key(c.tenant_id, p_endpoint, p_key, p_request_sha256, p_lock_ms) x;
  END IF;
  RETURN QUERY SELECT c.key_id, c.tenant_id, c.role, c.secret_sha256, c.expired, c.revoked,
                      c.tenant_status, c.parent_id, c.parent_status,
                      v_claimed, v_request_sha256, v_state, v_status, v_body;
END $function$;
