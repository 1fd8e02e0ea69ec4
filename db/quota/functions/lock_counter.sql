-- A strict quota policy's usage in a window, with the (tenant, subject, policy) serialized until
-- the transaction ends (services/quota/consumption/strict-verdicts.ts): quota.lock_subject_policy, the current window's
-- counter row made at 0 if missing, and the sum over the window's rows (a rolling window's
-- buckets), in one round trip. Each statement reads after the lock (plpgsql takes a new snapshot
-- per statement), so a writer that held it is seen. Returns the sum as text (exact).
CREATE OR REPLACE FUNCTION quota.lock_counter(
  p_tenant_id text, p_subject text, p_policy_id text, p_window_key text,
  p_expires_at timestamptz, p_window_keys text[])
 RETURNS text
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM quota.lock_subject_policy(p_tenant_id, p_subject, p_policy_id);
  INSERT INTO quota.counters (tenant_id, subject, policy_id, window_key, expires_at)
  VALUES (p_tenant_id, p_subject, p_policy_id, p_window_key, p_expires_at)
  ON CONFLICT DO NOTHING;
  RETURN (SELECT coalesce(sum(used), 0)::text FROM quota.counters
          WHERE tenant_id = p_tenant_id AND subject = p_subject AND policy_id = p_policy_id
            AND window_key = ANY(p_window_keys));
END $function$
