import { proxyActivities } from '@temporalio/workflow';
import type { QuotaJobActivities } from '../../activities/quota/jobs';
import type { JobName } from '../../services/quota/job-catalogue';
import { postgresProfile } from '../shared/activity-profiles';

const jobs = proxyActivities<QuotaJobActivities>({
  ...postgresProfile,
  startToCloseTimeout: '5 minutes',
});

/** One run of a quota background job (services/quota/job-catalogue.ts), from its schedule or on demand. */
export async function quotaJobWorkflow(input: { job: JobName; trigger: 'schedule' | 'manual' }) {
  return jobs.runQuotaJob(input);
}
