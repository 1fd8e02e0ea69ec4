import type { QuotaClient } from './client';
import type { components } from './quota-api';
import { quotaAnswer, type QuotaReply } from './answers';

type PolicyCreate = components['schemas']['PolicyCreate'];

/**
 * A service's own part of the quota service's catalogue, found by name and made when missing:
 * how the platform's services provision what they meter (their key's catalog_name_prefix bounds
 * the names). Each step is idempotent; a policy's limit is brought to the one asked.
 */
export function quotaCatalogue(quota: QuotaClient) {
  const resources = new Map<string, string>();
  return {
    async resource(name: string, description: string, unit: string): Promise<string> {
      const known = resources.get(name);
      if (known) return known;
      const found = await byName('resources', name, () => quota.GET('/v1/resources'));
      const id =
        found?.id ??
        (
          await quotaAnswer('resource', () =>
            quota.POST('/v1/resources', { body: { name, description, unit } }),
          )
        ).id;
      resources.set(name, id);
      return id;
    },

    /** The policy named `spec.name` with `spec.limit_amount`; its shape is set only when made. */
    async policy(spec: PolicyCreate & { limit_amount: number }): Promise<string> {
      const found = await byName('policies', spec.name, () => quota.GET('/v1/policies'));
      if (!found)
        return (await quotaAnswer('policy', () => quota.POST('/v1/policies', { body: spec }))).id;
      if (Number(found.limit_amount) !== spec.limit_amount)
        await quotaAnswer('policy', () =>
          quota.PATCH('/v1/policies/{policy_id}', {
            params: { path: { policy_id: found.id } },
            body: { limit_amount: spec.limit_amount },
          }),
        );
      return found.id;
    },

    /** The plan named `name`, holding at least `policyId`. */
    async plan(name: string, description: string, policyId: string): Promise<string> {
      const found = await byName('plans', name, () => quota.GET('/v1/plans'));
      if (!found)
        return (
          await quotaAnswer('plan', () =>
            quota.POST('/v1/plans', { body: { name, description, policy_ids: [policyId] } }),
          )
        ).id;
      if (!found.policy_ids.includes(policyId))
        await quotaAnswer('plan', () =>
          quota.PUT('/v1/plans/{plan_id}/policies', {
            params: { path: { plan_id: found.id } },
            body: { policy_ids: [...found.policy_ids, policyId] },
          }),
        );
      return found.id;
    },

    /** Puts `subject` on the plan. */
    async assign(subject: string, planId: string): Promise<void> {
      await quotaAnswer('assign', () =>
        quota.PUT('/v1/subjects/{subject}/assignment', {
          params: { path: { subject } },
          body: { plan_id: planId },
        }),
      );
    },
  };
}

/** The entry of a list named `name`, or null. */
async function byName<T extends { name: string }>(
  what: string,
  name: string,
  list: () => Promise<QuotaReply<T[]>>,
): Promise<T | null> {
  return (await quotaAnswer(what, list)).find((entry) => entry.name === name) ?? null;
}
