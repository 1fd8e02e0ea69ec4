/**
 * The quota service's background jobs, by name: what each does, how often its Temporal schedule
 * runs it, and its budget (the oldest its last success may be before /healthz/jobs answers 503).
 * Pure data: the workflow (workflows/quota/jobs.ts), its activity and the API read it.
 */
export const JOBS = {
  'ledger-flush': {
    description:
      "Moves fast mode's ledger entries from the write-ahead Redis stream into the consumption ledger in Postgres (/healthz/worker answers 503 once one has waited QUOTA_FLUSH_BUDGET_SECONDS, default 300).",
    everySeconds: 10,
    budgetSeconds: 300,
  },
  'reservation-expiry': {
    description:
      'Releases the hold of every reservation past its expires_at that was neither committed nor released (status expired, an expire entry in the ledger).',
    everySeconds: 60,
    budgetSeconds: 600,
  },
  'counter-sweep': {
    description:
      'Deletes strict-mode counters of windows that ended over a day ago and token buckets that have refilled since their last use (a missing bucket is a full one).',
    everySeconds: 3_600,
    budgetSeconds: 3 * 3_600,
  },
  'job-run-sweep': {
    description:
      "Deletes the records of job runs older than 7 days (each job's latest success is kept: its health is read from it).",
    everySeconds: 3_600,
    budgetSeconds: 3 * 3_600,
  },
  'idempotency-sweep': {
    description: 'Deletes idempotency records older than the 24-hour replay window.',
    everySeconds: 3_600,
    budgetSeconds: 3 * 3_600,
  },
} as const;

export type JobName = keyof typeof JOBS;
export const JOB_NAMES = Object.keys(JOBS) as JobName[];
export const isJobName = (name: string): name is JobName => Object.hasOwn(JOBS, name);

/** One run of a job, as its workflow (workflows/quota/jobs.ts) and its activity take it. */
export interface QuotaJobInput {
  job: JobName;
  trigger: 'schedule' | 'manual';
}

/** Job runs are listed for this long (ledger-flush alone runs 8,640 times a day). */
export const JOB_RUN_RETENTION_DAYS = 7;

/** Idempotency keys replay their first answer for this long. */
export const IDEMPOTENCY_WINDOW_HOURS = 24;

/** `schedule/<prefix>quota-job-<name>`: the schedule an operator sees in the Web UI. */
export const jobScheduleId = (prefix: string, job: JobName) => `schedule/${prefix}quota-job-${job}`;
/** `quota-job/<name>/<run>`: one execution per run, from the schedule or on demand. */
export const jobWorkflowId = (job: JobName, run: string) => `quota-job/${job}/${run}`;
