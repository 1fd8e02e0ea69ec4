import { insertAudit } from '../../db/runs/audit';
import type { KeyPrincipal } from '../../db/runs/tenants';

/**
 * The audit of a key's actions on one kind of thing (`run`, `workflow`, `template`, `schedule`,
 * `timer`, `trigger`, `webhook`): each written as `<kind>.<action>`, outcome ok, in the
 * transaction that makes the change where there is one.
 */
export const auditOf =
  (kind: string) =>
  (
    db: Parameters<typeof insertAudit>[0],
    principal: KeyPrincipal,
    action: string,
    target: string,
    detail = {},
  ) =>
    insertAudit(db, {
      tenantId: principal.tenantId,
      actor: principal.keyId,
      action: `${kind}.${action}`,
      outcome: 'ok',
      target,
      detail,
    });
