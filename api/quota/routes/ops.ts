import type Router from '@koa/router';
import Joi from 'joi';
import { quotaError } from '../../../services/quota/errors';
import { isJobName, JOB_NAMES, JOBS } from '../../../contracts/quota/jobs';
import { jobsHealth, listJobs, runJobNow } from '../../../services/quota/jobs';
import { JobList, JobReport, JobsHealth } from '../models';
import { LIMITS, listLimit } from '../../../services/quota/schemas';
import { mountOperation, operation, validated, type QuotaRouteDeps } from './operation';

const JOB_TABLE = JOB_NAMES.map((job) => `\`${job}\`: ${JOBS[job].description}`).join(' ');

export const OPS_OPERATIONS = {
  jobsHealth: operation({
    method: 'get',
    path: '/healthz/jobs',
    operationId: 'jobsHealth',
    summary: "Background jobs' freshness: 503 when a job's last success is older than its budget",
    description: `A job that never succeeded counts from the API's start. ${JOB_TABLE}`,
    tags: ['operations'],
    access: 'public',
    responses: {
      '200': { description: 'every job within its budget', schema: JobsHealth },
      '503': { description: 'a job past its budget', schema: JobsHealth },
    },
  }),
  listJobs: operation({
    method: 'get',
    path: '/v1/ops/jobs',
    operationId: 'listJobs',
    summary: 'The background jobs and their latest runs (operator)',
    tags: ['operations'],
    access: 'ops:admin',
    request: { query: Joi.object({ limit: listLimit(LIMITS.jobListLimitDefault) }) },
    responses: { '200': { description: 'jobs and runs', schema: JobList } },
  }),
  runJob: operation({
    method: 'post',
    path: '/v1/ops/jobs/{job_name}',
    operationId: 'runJob',
    summary: 'Run a background job now (operator)',
    description: `Runs it on Temporal as its schedule does (workflow quota-job/<job>/manual-<id>) and answers its report. ${JOB_TABLE}`,
    tags: ['operations'],
    access: 'ops:admin',
    request: { params: Joi.object({ job_name: Joi.string().max(64).required() }) },
    responses: { '200': { description: 'the run', schema: JobReport } },
    refusals: { 404: ['job_not_found'] },
  }),
} as const;

export function mountOpsRoutes(router: Router, deps: QuotaRouteDeps): void {
  mountOperation(router, deps, OPS_OPERATIONS.jobsHealth, async (ctx) => {
    const health = await jobsHealth(deps);
    ctx.status = health.healthy ? 200 : 503;
    ctx.body = health;
  });
  mountOperation(router, deps, OPS_OPERATIONS.listJobs, async (ctx) => {
    ctx.body = await listJobs(deps, validated<{ limit: number }>(ctx, 'query').limit);
  });
  mountOperation(router, deps, OPS_OPERATIONS.runJob, async (ctx) => {
    const { job_name } = validated<{ job_name: string }>(ctx, 'params');
    if (!isJobName(job_name)) throw quotaError('job_not_found');
    ctx.body = await runJobNow(deps, job_name);
  });
}
