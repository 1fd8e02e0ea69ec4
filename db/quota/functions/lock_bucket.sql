-- A strict token bucket's row, with the (tenant, subject, policy) serialized until the transaction
-- ends (services/quota/consumption/strict-verdicts.ts): quota.lock_subject_policy, then the row as it is after it (no row:
-- a full bucket), in one round trip. Exact: tokens and updated_ms as text.
CREATE OR REPLACE FUNCTION quota.lock_bucket(p_tenant_id text, p_subject text, p_policy_id text)
 RETURNS TABLE (tokens text, updated_ms text)
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM quota.lock_subject_policy(p_tenant_id, p_subject, p_policy_id);
  RETURN QUERY SELECT b.tokens::text, b.updated_ms::text FROM quota.buckets b
    WHERE b.tenant_id = p_tenant_id AND b.subject = p_subject AND b.policy_id = p_policy_id;
END $function$
