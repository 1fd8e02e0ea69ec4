import type { DatabasePool } from '../../../db/pool';
import { listAlertRules, type AlertRuleRow } from '../../../db/quota/alert-rules';

/**
 * The enabled alert rules of a tenant, as the consume path reads them: from memory, read again
 * from Postgres at most every RULES_TTL_MS per tenant and process (a change made through this
 * process applies at once; one made through another within RULES_TTL_MS). A tenant without
 * rules costs one cached empty list.
 */
export const RULES_TTL_MS = 5_000;

interface Cached {
  rules: AlertRuleRow[];
  readAtMs: number;
}

export function createAlertRulesCache(pool: DatabasePool) {
  const byTenant = new Map<string, Cached>();
  const loading = new Map<string, Promise<AlertRuleRow[]>>();
  return {
    async enabledRules(tenantId: string): Promise<AlertRuleRow[]> {
      const cached = byTenant.get(tenantId);
      if (cached && Date.now() - cached.readAtMs < RULES_TTL_MS) return cached.rules;
      let pending = loading.get(tenantId);
      if (!pending) {
        pending = listAlertRules(pool, tenantId)
          .then((rules) => {
            const enabled = rules.filter((r) => r.enabled);
            byTenant.set(tenantId, { rules: enabled, readAtMs: Date.now() });
            return enabled;
          })
          .finally(() => loading.delete(tenantId));
        loading.set(tenantId, pending);
      }
      return pending;
    },
    /** A rule of the tenant changed here: the next read goes to Postgres. */
    forget(tenantId: string): void {
      byTenant.delete(tenantId);
    },
  };
}
export type AlertRulesCache = ReturnType<typeof createAlertRulesCache>;
