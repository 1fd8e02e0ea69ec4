import type { DatabasePool } from '../../db/pool';
import { recordJobRun, sweepCounters, sweepIdempotency, type JobRunRow } from '../../db/quota/jobs';
import { IDEMPOTENCY_WINDOW_HOURS, type JobName } from '../../api/quota/job-catalogue';
import { expireDueReservations } from '../../api/quota/consumption/reservations';

type JobWork = (pool: DatabasePool) => Promise<Record<string, unknown>>;

const WORK: Record<JobName, JobWork> = {
  'reservation-expiry': (pool) => expireDueReservations({ pool }),
  'counter-sweep': (pool) => sweepCounters(pool),
  'idempotency-sweep': (pool) => sweepIdempotency(pool, IDEMPOTENCY_WINDOW_HOURS),
};

/**
 * Runs one job and records the run, failed ones too (their error in the report). Each job is
 * idempotent (deletes of what is past its time), so a retried activity does no harm.
 */
export function createQuotaJobActivities(deps: { pool: DatabasePool; taskQueuePrefix: string }) {
  return {
    async runQuotaJob(input: { job: JobName; trigger: 'schedule' | 'manual' }): Promise<JobRunRow> {
      const started = new Date().toISOString();
      let ok = true;
      let report: Record<string, unknown>;
      try {
        report = await WORK[input.job](deps.pool);
      } catch (error) {
        ok = false;
        report = { error: (error as Error).message };
      }
      return recordJobRun(deps.pool, {
        task_queue_prefix: deps.taskQueuePrefix,
        job: input.job,
        trigger: input.trigger,
        ok,
        started_at: started,
        finished_at: new Date().toISOString(),
        report,
      });
    },
  };
}
export type QuotaJobActivities = ReturnType<typeof createQuotaJobActivities>;
