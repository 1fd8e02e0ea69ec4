import type { EffectivePolicyRow } from '../../../db/quota/consumption';
import { findAssignment } from '../../../db/quota/subjects';
import { exactIntegerOrNull } from '../../../platform/exact-json';
import { checkSubject } from '../constraints';
import type { Principal } from '../credentials';
import { tenantOf } from '../keys';
import { usageOut, type Deps } from './consume';
import { decideAll } from './in-transaction';
import { governingPolicies } from './governing';

/**
 * What governs a subject and how much of it is used, read as it is (no lock, no write): the
 * subject's plan's enabled policies with its overrides applied, each with its current window.
 */

async function governed(deps: Deps, principal: Principal, subject: string) {
  const tenantId = tenantOf(principal);
  checkSubject(principal, subject);
  const policies = governingPolicies(await deps.catalogues.currentView(tenantId, subject), null);
  const context = { tenantId, subject, nowMs: Date.now(), readOnly: true };
  const stores = { tx: deps.pool, redis: deps.redis };
  const { verdicts } = await decideAll(stores, context, policies, new Map());
  return { tenantId, verdicts };
}

/** SubjectUsageOut: per policy, its limit, usage and what remains in the current window. */
export async function subjectUsage(deps: Deps, principal: Principal, subject: string) {
  const { tenantId, verdicts } = await governed(deps, principal, subject);
  const assignment = await findAssignment(deps.pool, tenantId, subject);
  return {
    subject,
    plan_id: assignment?.plan_id ?? null,
    plan_name: assignment?.plan_name ?? null,
    usage: verdicts.map((verdict) => {
      const {
        requested: _r,
        allowed: _a,
        overage: _o,
        retry_after_seconds: _s,
        ...usage
      } = usageOut(verdict);
      return usage;
    }),
  };
}

/** EffectivePolicyOut: a policy as it governs the subject (an override's limit in place). */
function effectivePolicyOut(policy: EffectivePolicyRow) {
  const overridden = policy.limit_override;
  return {
    policy_id: policy.id,
    name: policy.name,
    resource: policy.resource,
    kind: policy.kind,
    limit_amount: exactIntegerOrNull(
      policy.kind === 'quota' ? (overridden ?? policy.limit_amount) : null,
    ),
    window_kind: policy.window_kind,
    window_unit: policy.window_unit,
    window_size: policy.window_size,
    tz: policy.tz,
    bucket_capacity: exactIntegerOrNull(
      policy.kind === 'rate_limit' ? (overridden ?? policy.bucket_capacity) : null,
    ),
    refill_rate_per_sec: policy.refill_rate_per_sec,
    enforcement_mode: policy.enforcement_mode,
    on_exceed: policy.on_exceed,
    on_backend_error: policy.on_backend_error,
    source: policy.source,
  };
}

export async function subjectEntitlements(deps: Deps, principal: Principal, subject: string) {
  const { verdicts } = await governed(deps, principal, subject);
  return {
    subject,
    policies: verdicts.map((verdict) => ({
      ...effectivePolicyOut(verdict.policy),
      window: usageOut(verdict).window,
    })),
  };
}
