-- A consume governed by strict quota policies only, decided within decide_strict_quota_batch,
-- which holds every (tenant, subject, policy) lock of the request already: the catalogue
-- generations the request was judged by are checked; each policy's window usage is read; all
-- admitting, the counters move and the ledger entries are written. The arithmetic is decideQuota's (services/quota/consumption/quota-arithmetic.ts),
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
  policy_at integer := 0;
  usages numeric[];
  used numeric;
  after numeric;
  requested numeric;
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
  -- Every policy's row made and its usage read at once.
  INSERT INTO quota.counters (tenant_id, subject, policy_id, window_key, expires_at)
  SELECT p_tenant_id, p_subject, q.p->>'policy_id', q.p->>'window_key',
         (q.p->>'expires_at')::timestamptz
  FROM jsonb_array_elements(p_policies) AS q(p)
  ON CONFLICT DO NOTHING;
  SELECT array_agg((SELECT coalesce(sum(c.used), 0) FROM quota.counters c
                    WHERE c.tenant_id = p_tenant_id AND c.subject = p_subject
                      AND c.policy_id = q.p->>'policy_id'
                      AND c.window_key = ANY(ARRAY(
                        SELECT jsonb_array_elements_text(q.p->'window_keys'))))
                   ORDER BY q.n)
  INTO usages
  FROM jsonb_array_elements(p_policies) WITH ORDINALITY AS q(p, n);
  FOR policy IN SELECT * FROM jsonb_array_elements(p_policies) LOOP
    policy_at := policy_at + 1;
    used := usages[policy_at];
    requested := (policy->>'requested')::numeric;
    after := used + requested;
    IF after > (policy->>'limit')::numeric AND NOT (policy->>'allow_overage')::boolean THEN
      allowed := false;
    END IF;
    IF requested > 0 THEN
      FOR t IN 0 .. jsonb_array_length(policy->'thresholds') - 1 LOOP
        IF used < (policy->'thresholds'->>t)::numeric
           AND after >= (policy->'thresholds'->>t)::numeric THEN
          crossing := true;
        END IF;
      END LOOP;
    END IF;
  END LOOP;
  IF allowed AND crossing THEN
    RETURN jsonb_build_object('status', 'crossing');
  END IF;
  IF allowed THEN
    UPDATE quota.counters c SET used = greatest(0, c.used + (q.p->>'requested')::numeric)
    FROM jsonb_array_elements(p_policies) AS q(p)
    WHERE c.tenant_id = p_tenant_id AND c.subject = p_subject
      AND c.policy_id = q.p->>'policy_id' AND c.window_key = q.p->>'window_key';
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
  RETURN jsonb_build_object('status', 'decided', 'allowed', allowed, 'used', to_jsonb(usages::text[]));
END $function$
