-- Group commit of strict consumes (services/quota/consumption/in-one-statement.ts): the requests that
-- arrived together, each decided as decide_strict_quotas decides it alone, in one statement and
-- one transaction. First the idempotency keys of the batch are claimed, then every lock of the
-- batch is taken, each in one order for every batch and every lone decision (keys by tenant and
-- key, as the transaction path claims its one key before its locks; locks by tenant, subject,
-- policy id: a lone request's policies in policy id order are in it), so two never wait on each
-- other in a circle; then each request in arrival order, seeing the ones before it. A request
-- whose key holds an answer (an earlier request, or one before it in the batch) answers
-- `recorded` with it; a request whose generations moved answers `moved` alone. A decided request
-- with a key records its decision there: `{decision: <its idempotency.record>, used}` (the
-- caller makes the answer again from it). Answers the requests' answers, in order.
CREATE OR REPLACE FUNCTION quota.decide_strict_quota_batch(p_requests jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
  held record;
  request jsonb;
  claim jsonb;
  recorded record;
  answer jsonb;
  answers jsonb := '[]';
BEGIN
  FOR held IN
    SELECT DISTINCT ON (1, 2) r->>'tenant_id' COLLATE "C" AS tenant_id,
           r->'idempotency'->>'key' COLLATE "C" AS key, r->'idempotency'->>'hash' AS hash
    FROM jsonb_array_elements(p_requests) r
    WHERE r->'idempotency' IS NOT NULL
    ORDER BY 1, 2
  LOOP
    INSERT INTO quota.idempotency (tenant_id, endpoint, key, request_hash, status, response)
    VALUES (held.tenant_id, 'consume', held.key, decode(held.hash, 'hex'), 0, 'null')
    ON CONFLICT DO NOTHING;
  END LOOP;
  FOR held IN
    SELECT DISTINCT r->>'tenant_id' COLLATE "C" AS tenant_id, r->>'subject' COLLATE "C" AS subject,
                    p->>'policy_id' COLLATE "C" AS policy_id
    FROM jsonb_array_elements(p_requests) r, jsonb_array_elements(r->'policies') p
    ORDER BY 1, 2, 3
  LOOP
    PERFORM quota.lock_subject_policy(held.tenant_id, held.subject, held.policy_id);
  END LOOP;
  FOR request IN SELECT * FROM jsonb_array_elements(p_requests) LOOP
    claim := request->'idempotency';
    IF claim IS NOT NULL THEN
      SELECT i.status, encode(i.request_hash, 'hex') AS hash, i.response INTO recorded
      FROM quota.idempotency i
      WHERE i.tenant_id = request->>'tenant_id' AND i.endpoint = 'consume' AND i.key = claim->>'key';
      IF recorded.status <> 0 THEN
        answers := answers || jsonb_build_array(jsonb_build_object(
          'status', 'recorded', 'hash', recorded.hash, 'response', recorded.response::text));
        CONTINUE;
      END IF;
    END IF;
    answer := quota.decide_strict_quotas(
      request->>'tenant_id', request->>'subject',
      (request->>'catalogue_generation')::bigint, (request->>'subject_generation')::bigint,
      request->'policies', request->'ledger');
    IF claim IS NOT NULL AND answer->>'status' = 'decided' THEN
      UPDATE quota.idempotency
      SET status = 200, response = jsonb_build_object('decision', claim->'record', 'used', answer->'used')
      WHERE tenant_id = request->>'tenant_id' AND endpoint = 'consume' AND key = claim->>'key';
    END IF;
    answers := answers || jsonb_build_array(answer);
  END LOOP;
  -- A key whose request was not decided here (moved, crossing) is left to its retry, unclaimed.
  DELETE FROM quota.idempotency i
  USING jsonb_array_elements(p_requests) r
  WHERE i.status = 0 AND i.tenant_id = r->>'tenant_id' AND i.endpoint = 'consume'
    AND i.key = r->'idempotency'->>'key';
  RETURN answers;
END $function$
