import { proxyActivities } from '@temporalio/workflow';
import type { QuotaJobActivities } from '../../activities/quota/jobs';
import type { QuotaJobInput } from '../../contracts/quota/jobs';
import { postgresProfile } from '../shared/activity-profiles';

const jobs = proxyActivities<QuotaJobActivities>({
  ...postgresProfile,
  startToCloseTimeout: '5 minutes',
});

/** One run of a quota background job (contracts/quota/jobs.ts), from its schedule or on demand. */
export async function quotaJobWorkflow(input: QuotaJobInput) {
  return jobs.runQuotaJob(input);
}
