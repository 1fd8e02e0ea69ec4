import { z } from 'zod';
import { sql } from '../pool';
import type { Queryable } from './queryable';

export const jobRunRow = z.object({
  /** bigint: a decimal string. */
  id: z.string(),
  task_queue_prefix: z.string(),
  job: z.string(),
  trigger: z.enum(['schedule', 'manual']),
  ok: z.boolean(),
  started_at: z.string(),
  finished_at: z.string(),
  report: z.record(z.unknown()),
});
export type JobRunRow = z.infer<typeof jobRunRow>;

const RUN = sql.fragment`id, task_queue_prefix, job, trigger, ok, started_at, finished_at, report`;

export async function recordJobRun(db: Queryable, run: Omit<JobRunRow, 'id'>): Promise<JobRunRow> {
  return db.one(sql.type(jobRunRow)`
    INSERT INTO quota.job_runs (task_queue_prefix, job, trigger, ok, started_at, finished_at, report)
    VALUES (${run.task_queue_prefix}, ${run.job}, ${run.trigger}, ${run.ok}, ${run.started_at},
            ${run.finished_at}, ${sql.jsonb(run.report as never)})
    RETURNING ${RUN}`);
}

/** A deployment's runs, newest first. */
export async function listJobRuns(
  db: Queryable,
  prefix: string,
  limit: number,
): Promise<readonly JobRunRow[]> {
  return db.any(sql.type(jobRunRow)`
    SELECT ${RUN} FROM quota.job_runs WHERE task_queue_prefix = ${prefix}
    ORDER BY id DESC LIMIT ${limit}`);
}

const lastSuccessRow = z.object({ job: z.string(), at: z.string() });

/** Each job's last successful run's end, in a deployment. */
export async function lastSuccesses(db: Queryable, prefix: string): Promise<Map<string, string>> {
  const rows = await db.any(sql.type(lastSuccessRow)`
    SELECT job, max(finished_at) AS at FROM quota.job_runs
    WHERE ok AND task_queue_prefix = ${prefix} GROUP BY job`);
  return new Map(rows.map((r) => [r.job, r.at]));
}

/** Counters of windows that ended a day ago or more, and buckets that have refilled since. */
export async function sweepCounters(db: Queryable): Promise<{ counters: number; buckets: number }> {
  const counters = await db.query(sql.unsafe`
    DELETE FROM quota.counters WHERE expires_at < now() - interval '1 day'`);
  const buckets = await db.query(sql.unsafe`
    DELETE FROM quota.buckets b USING quota.policies p
    WHERE p.id = b.policy_id
      AND b.updated_ms + (p.bucket_capacity / p.refill_rate_per_sec) * 1000
          < extract(epoch FROM now()) * 1000`);
  return { counters: counters.rowCount, buckets: buckets.rowCount };
}

/** Idempotency records past the replay window. */
export async function sweepIdempotency(
  db: Queryable,
  olderThanHours: number,
): Promise<{ records: number }> {
  const result = await db.query(sql.unsafe`
    DELETE FROM quota.idempotency WHERE created_at < now() - make_interval(hours => ${olderThanHours})`);
  return { records: result.rowCount };
}

/** Job runs older than `days`, but each job's latest success (its health is read from it). */
export async function sweepJobRuns(db: Queryable, days: number): Promise<{ runs: number }> {
  const result = await db.query(sql.unsafe`
    DELETE FROM quota.job_runs r
    WHERE finished_at < now() - make_interval(days => ${days})
      AND finished_at < (SELECT max(finished_at) FROM quota.job_runs l
                         WHERE l.task_queue_prefix = r.task_queue_prefix AND l.job = r.job AND l.ok)`);
  return { runs: result.rowCount };
}
