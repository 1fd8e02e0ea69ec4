-- A consume governed by strict quota policies only, decided in one statement (one round trip, its
-- own transaction): the catalogue generations the request was judged by are checked; each
-- policy's (tenant, subject, policy) is locked and its window's usage read, in the order given
-- (policy id order, as every strict decision locks); all admitting, the counters move and the
-- ledger entries are written. The arithmetic is decideQuota's (api/quota/consumption/decide.ts),
-- in numeric. An admission that would cross an alert threshold (`thresholds`: the usages at which
-- a watching rule is crossed) writes nothing and answers `crossing`: the caller decides it on the
-- path that records crossings. p_policies: [{policy_id, window_key, window_keys, expires_at,
-- requested, limit, allow_overage, thresholds}], amounts as decimal strings. Answers {status:
-- moved | crossing | decided, allowed, used: [usage before, per policy, as text]}.
CREATE OR REPLACE FUNCTION quota.decide_strict_quotas(
  p_tenant_id text, p_subject text, p_catalogue_generation bigint, p_subject_generation bigint,
  p_policies jsonb, p_ledger jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
  policy jsonb;
  threshold text;
  used numeric;
  after numeric;
  requested numeric;
  before text[] := '{}';
  allowed boolean := true;
  crossing boolean := false;
BEGIN
  IF coalesce((SELECT g.generation FROM quota.catalogue_generations g
               WHERE g.tenant_id = p_tenant_id), 0) <> p_catalogue_generation
     OR coalesce((SELECT g.generation FROM quota.subject_generations g
                  WHERE g.tenant_id = p_tenant_id AND g.subject = p_subject), 0)
        <> p_subject_generation THEN
    RETURN jsonb_build_object('status', 'moved');
  END IF;
  FOR policy IN SELECT * FROM jsonb_array_elements(p_policies) LOOP
    used := quota.lock_counter(p_tenant_id, p_subject, policy->>'policy_id', policy->>'window_key',
              (policy->>'expires_at')::timestamptz,
              ARRAY(SELECT jsonb_array_elements_text(policy->'window_keys')))::numeric;
    requested := (policy->>'requested')::numeric;
    after := used + requested;
    before := before || used::text;
    IF after > (policy->>'limit')::numeric AND NOT (policy->>'allow_overage')::boolean THEN
      allowed := false;
    END IF;
    IF requested > 0 THEN
      FOR threshold IN SELECT jsonb_array_elements_text(policy->'thresholds') LOOP
        IF used < threshold::numeric AND after >= threshold::numeric THEN crossing := true; END IF;
      END LOOP;
    END IF;
  END LOOP;
  IF allowed AND crossing THEN
    RETURN jsonb_build_object('status', 'crossing');
  END IF;
  IF allowed THEN
    FOR policy IN SELECT * FROM jsonb_array_elements(p_policies) LOOP
      UPDATE quota.counters c SET used = greatest(0, c.used + (policy->>'requested')::numeric)
      WHERE c.tenant_id = p_tenant_id AND c.subject = p_subject
        AND c.policy_id = policy->>'policy_id' AND c.window_key = policy->>'window_key';
    END LOOP;
    INSERT INTO quota.ledger_entries
      (tenant_id, event_id, subject, resource, amount, entry_type, idempotency_key, reservation_id,
       strict_deferred, metadata, occurred_at)
    SELECT e.tenant_id, e.event_id, e.subject, e.resource, e.amount::bigint, e.entry_type,
           e.idempotency_key, e.reservation_id, false, e.metadata, e.occurred_at
    FROM jsonb_to_recordset(p_ledger) AS e(tenant_id text, event_id text, subject text,
           resource text, amount text, entry_type text, idempotency_key text,
           reservation_id text, metadata jsonb, occurred_at timestamptz)
    ON CONFLICT (event_id, resource, entry_type) DO NOTHING;
  END IF;
  RETURN jsonb_build_object('status', 'decided', 'allowed', allowed, 'used', to_jsonb(before));
END $function$
