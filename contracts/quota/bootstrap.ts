/**
 * What the quota API and the bootstrap workflow share (workflows/quota/bootstrap.ts): its id.
 * Pure, so the sandboxed bundle and the API both import it.
 */

/** `quota-bootstrap/<tenant_id>`: an operator finds a tenant's bootstrap by its id. */
export const bootstrapWorkflowId = (tenantId: string): string => `quota-bootstrap/${tenantId}`;
