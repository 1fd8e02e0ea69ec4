import type { DatabasePool } from '../../db/pool';
import { activeKeyScopes } from '../../db/quota/keys';
import { setBootstrapState } from '../../db/quota/tenants';
import { grantScopes } from '../../services/quota/authz';

/**
 * The tenant's initial grants: every active key of the tenant gets the tuples of its scopes in the
 * access-control store (services/quota/authz.ts). Idempotent: a tuple already there is left, so a
 * retried or re-run bootstrap resumes where the last one stopped.
 */
export function createQuotaBootstrapActivities(deps: { pool: DatabasePool }) {
  return {
    async writeTenantGrants(tenantId: string): Promise<{ keys: number }> {
      return deps.pool.transaction(async (tx) => {
        await setBootstrapState(tx, tenantId, 'running');
        const keys = await activeKeyScopes(tx, tenantId);
        for (const key of keys) await grantScopes(tx, key);
        await setBootstrapState(tx, tenantId, 'done');
        return { keys: keys.length };
      });
    },
    async markBootstrapFailed(tenantId: string, error: string): Promise<void> {
      await setBootstrapState(deps.pool, tenantId, 'failed', error);
    },
  };
}
export type QuotaBootstrapActivities = ReturnType<typeof createQuotaBootstrapActivities>;
