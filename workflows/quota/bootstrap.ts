import { ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { QuotaBootstrapActivities } from '../../activities/quota/bootstrap';
import { postgresProfile } from '../shared/activity-profiles';

/** Tries before the bootstrap is recorded as failed (an operator re-runs it: bootstrap-authz). */
export const BOOTSTRAP_ATTEMPTS = 5;

const grants = proxyActivities<QuotaBootstrapActivities>({
  ...postgresProfile,
  retry: { ...postgresProfile.retry, maximumAttempts: BOOTSTRAP_ATTEMPTS },
});
const record = proxyActivities<QuotaBootstrapActivities>(postgresProfile);

/**
 * Writes a new tenant's initial grants (its first key's scopes) to the access-control store. On
 * failure the tenant records `failed` with the reason, and the execution fails so the Web UI
 * shows it; POST /v1/tenants/{id}/bootstrap-authz runs it again under the same id.
 */
export async function quotaBootstrapWorkflow(input: {
  tenantId: string;
}): Promise<{ keys: number }> {
  try {
    return await grants.writeTenantGrants(input.tenantId);
  } catch (error) {
    // An ActivityFailure's own message is generic; its cause says what the activity threw.
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
    const reason = cause instanceof Error ? cause.message : String(cause);
    await record.markBootstrapFailed(input.tenantId, reason);
    throw ApplicationFailure.nonRetryable(`bootstrap of ${input.tenantId} failed: ${reason}`);
  }
}
