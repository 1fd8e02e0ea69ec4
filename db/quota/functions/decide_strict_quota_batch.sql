-- Group commit of strict consumes (api/quota/consumption/strict-statement.ts): the requests that
-- arrived together, each decided as decide_strict_quotas decides it alone, in one statement and
-- one transaction. Every lock of the batch is taken first, in one order for every batch and every
-- lone decision (tenant, subject, policy id: a lone request's policies in policy id order are in
-- it), so two never wait on each other in a circle; then each request in arrival order, seeing
-- the ones before it. A request whose generations moved answers `moved` alone. Answers the
-- requests' answers, in order.
CREATE OR REPLACE FUNCTION quota.decide_strict_quota_batch(p_requests jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
  held record;
  request jsonb;
  answers jsonb := '[]';
BEGIN
  FOR held IN
    SELECT DISTINCT r->>'tenant_id' COLLATE "C" AS tenant_id, r->>'subject' COLLATE "C" AS subject,
                    p->>'policy_id' COLLATE "C" AS policy_id
    FROM jsonb_array_elements(p_requests) r, jsonb_array_elements(r->'policies') p
    ORDER BY 1, 2, 3
  LOOP
    PERFORM quota.lock_subject_policy(held.tenant_id, held.subject, held.policy_id);
  END LOOP;
  FOR request IN SELECT * FROM jsonb_array_elements(p_requests) LOOP
    answers := answers || jsonb_build_array(quota.decide_strict_quotas(
      request->>'tenant_id', request->>'subject',
      (request->>'catalogue_generation')::bigint, (request->>'subject_generation')::bigint,
      request->'policies', request->'ledger'));
  END LOOP;
  RETURN answers;
END $function$
