-- A key's credential row for the API to judge (401/403), in one statement with no explicit
-- transaction: it sets its row-level-security context (ledger.auth) with set_config(..., true),
-- which lasts until the end of the statement's own transaction, and clears it before returning.
-- On a generic plan: every statement here looks rows up by key, so the generic plan is the
-- custom plan, without planning again on every call.
CREATE OR REPLACE FUNCTION ledger.find_credential(p_key_id uuid)
 RETURNS TABLE(key_id uuid, tenant_id uuid, role text, secret_sha256 bytea, expired boolean, revoked boolean, tenant_status text, parent_id uuid, parent_status text)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
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
END $function$;
