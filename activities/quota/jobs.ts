import type { DatabasePool } from '../../db/pool';
import {
  recordJobRun,
  sweepCounters,
  sweepIdempotency,
  sweepJobRuns,
  type JobRunRow,
} from '../../db/quota/jobs';
import {
  IDEMPOTENCY_WINDOW_HOURS,
  JOB_RUN_RETENTION_DAYS,
  type JobName,
  type QuotaJobInput,
} from '../../contracts/quota/jobs';
import { expireDueReservations } from '../../services/quota/consumption/reservations';
import { flushLedgerStream } from '../../services/quota/consumption/ledger-flush';
import type { Redis } from '../../db/redis';

type JobDeps = { pool: DatabasePool; redis: Redis; taskQueuePrefix: string };
type JobWork = (deps: JobDeps) => Promise<Record<string, unknown>>;

const WORK: Record<JobName, JobWork> = {
  'ledger-flush': (deps) => flushLedgerStream(deps),
  'reservation-expiry': (deps) => expireDueReservations(deps),
  'counter-sweep': ({ pool }) => sweepCounters(pool),
  'idempotency-sweep': ({ pool }) => sweepIdempotency(pool, IDEMPOTENCY_WINDOW_HOURS),
  'job-run-sweep': ({ pool }) => sweepJobRuns(pool, JOB_RUN_RETENTION_DAYS),
};

/**
 * Runs one job and records the run, failed ones too (their error in the report). Each job is
 * idempotent (deletes of what is past its time), so a retried activity does no harm.
 */
export function createQuotaJobActivities(deps: JobDeps) {
  return {
    async runQuotaJob(input: QuotaJobInput): Promise<JobRunRow> {
      const started = new Date().toISOString();
      let ok = true;
      let report: Record<string, unknown>;
      try {
        report = await WORK[input.job](deps);
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
