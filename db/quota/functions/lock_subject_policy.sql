-- Serializes the strict decisions of one subject under one policy until the transaction ends
-- (writers of a rolling window at a bucket boundary write different rows and still must not both
-- miss the other's usage). The one definition of that lock: every strict path takes it here, each
-- transaction in the order (tenant, subject, policy id), so none waits on another in a circle.
CREATE OR REPLACE FUNCTION quota.lock_subject_policy(p_tenant_id text, p_subject text, p_policy_id text)
 RETURNS void
 LANGUAGE sql
AS $function$
  SELECT pg_advisory_xact_lock(hashtext(p_tenant_id || '/' || p_subject || '/' || p_policy_id))
$function$
