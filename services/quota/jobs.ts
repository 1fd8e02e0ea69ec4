import { ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import { ulid } from '../../db/ids';
import { lastSuccesses, listJobRuns, type JobRunRow } from '../../db/quota/jobs';
import { executionSearchAttributes } from '../../contracts/shared/search-attributes';
import { jobSummary } from '../../contracts/quota/summaries';
import type { PlatformDeps } from '../../platform/deps';
import { taskQueues } from '../../contracts/shared/task-queues';
import {
  JOB_NAMES,
  JOBS,
  jobScheduleId,
  jobWorkflowId,
  type JobName,
  type QuotaJobInput,
} from '../../contracts/quota/jobs';

/** The job workflow's signature (workflows/quota/jobs.ts): the API starts it by name. */
type QuotaJobWorkflow = (input: QuotaJobInput) => Promise<JobRunRow>;

type Deps = Pick<PlatformDeps, 'pool' | 'temporal' | 'config' | 'logger'>;

/** Jobs belong to the operator, not to a tenant: their executions carry this TenantId. */
const PLATFORM_TENANT = 'platform';

const jobWorkflow = (deps: Deps, job: JobName, trigger: 'schedule' | 'manual') => ({
  taskQueue: taskQueues(deps.config.taskQueuePrefix).quota,
  args: [{ job, trigger }] as [QuotaJobInput],
  typedSearchAttributes: executionSearchAttributes(PLATFORM_TENANT, 'quota'),
  ...jobSummary(job, trigger),
});

/**
 * Makes sure each job's schedule exists (an existing one is kept). Best effort at start-up: the
 * API serves while Temporal is still coming up, and the next start tries again.
 */
export async function ensureJobSchedules(deps: Deps): Promise<void> {
  const prefix = deps.config.taskQueuePrefix;
  for (const job of JOB_NAMES) {
    try {
      await deps.temporal.schedule.create({
        scheduleId: jobScheduleId(prefix, job),
        spec: { intervals: [{ every: `${JOBS[job].everySeconds} seconds` }] },
        action: {
          type: 'startWorkflow',
          workflowType: 'quotaJobWorkflow',
          workflowId: `${prefix}quota-job/${job}`,
          ...jobWorkflow(deps, job, 'schedule'),
        },
        policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 hour' },
        typedSearchAttributes: executionSearchAttributes(PLATFORM_TENANT, 'quota'),
      });
    } catch (error) {
      if (error instanceof ScheduleAlreadyRunning) continue;
      deps.logger.warn(
        { job, err: (error as Error).message },
        'job schedule not created; retried at next start',
      );
    }
  }
}

/** JobReport: the run as the API shows it (additional properties: the job's own figures). */
export const jobReport = ({ task_queue_prefix: _prefix, ...run }: JobRunRow) => ({
  job: run.job,
  ok: run.ok,
  started_at: run.started_at,
  finished_at: run.finished_at,
  trigger: run.trigger,
  ...run.report,
});

/** Runs a job now, on Temporal like its schedule does, and answers its report. */
export async function runJobNow(deps: Deps, job: JobName) {
  const run = await deps.temporal.workflow.execute<QuotaJobWorkflow>('quotaJobWorkflow', {
    workflowId: jobWorkflowId(job, `manual-${ulid()}`),
    ...jobWorkflow(deps, job, 'manual'),
  });
  return jobReport(run);
}

/** The job catalogue with each job's last success and health, and the latest runs. */
export async function listJobs(deps: Deps & Pick<HealthDeps, 'startedAtMs'>, limit: number) {
  const [runs, health] = await Promise.all([
    listJobRuns(deps.pool, deps.config.taskQueuePrefix, limit),
    jobsHealth(deps),
  ]);
  return { jobs: health.jobs, runs: runs.map(jobReport) };
}

/**
 * Each job's freshness: healthy while its last success is within its budget. A job that never
 * succeeded is measured from the API's start, so a fresh deployment is healthy until a budget
 * has passed without a success.
 */
interface HealthDeps extends Pick<Deps, 'pool' | 'config'> {
  /** When this API started: the age of a job that never succeeded is counted from here. */
  startedAtMs: number;
}

export async function jobsHealth(deps: HealthDeps) {
  const successes = await lastSuccesses(deps.pool, deps.config.taskQueuePrefix);
  const jobs = JOB_NAMES.map((job) => {
    const last = successes.get(job) ?? null;
    const ageSeconds = (Date.now() - (last ? Date.parse(last) : deps.startedAtMs)) / 1000;
    return {
      name: job,
      description: JOBS[job].description,
      every_seconds: JOBS[job].everySeconds,
      budget_seconds: JOBS[job].budgetSeconds,
      last_success_at: last,
      healthy: ageSeconds <= JOBS[job].budgetSeconds,
    };
  });
  return { healthy: jobs.every((j) => j.healthy), jobs };
}
