-- Up Migration
-- Key lookup and idempotency claim as single statements (one round trip each, no explicit
-- transaction): each function sets its row-level-security context with set_config(..., true),
-- which lasts until the end of the statement's own transaction, and clears it before returning.

CREATE FUNCTION find_credential(p_key_id uuid)
RETURNS TABLE (key_id uuid, tenant_id uuid, role text, secret_sha256 bytea, expired boolean, revoked boolean,
               tenant_status text, parent_id uuid, parent_status text)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM set_config('ledger.auth', 'on', true);
  RETURN QUERY
    SELECT k.key_id, k.tenant_id, k.role, k.secret_sha256,
           (k.expires_at IS NOT NULL AND k.expires_at <= now()), (k.revoked_at IS NOT NULL),
           t.status, t.parent_id, p.status
    FROM ledger.api_keys k
    LEFT JOIN ledger.tenants t ON t.tenant_id = k.tenant_id
    LEFT JOIN ledger.tenants p ON p.tenant_id = t.parent_id
    WHERE k.key_id = p_key_id;
  PERFORM set_config('ledger.auth', '', true);
END $$;

-- Returns 'claimed', or the existing record's state with its hash and response for the caller to judge.
CREATE FUNCTION claim_idempotency_key(p_tenant uuid, p_endpoint text, p_key text, p_sha256 bytea, p_lock_ms integer)
RETURNS TABLE (claimed boolean, request_sha256 bytea, state text, response_status smallint, response_body jsonb)
LANGUAGE plpgsql VOLATILE AS $$
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
END $$;

-- Down Migration
DROP FUNCTION claim_idempotency_key(uuid, text, text, bytea, integer);
DROP FUNCTION find_credential(uuid);
