import { z } from 'zod';
import { sql, type DatabasePool } from '../pool';

const selfCheckState = z.enum(['scheduled', 'running', 'succeeded', 'failed']);
export type SelfCheckState = z.infer<typeof selfCheckState>;

/** A row of runs.self_checks as `SELECT *` yields it: every column, in the table's order. */
export const selfCheckRow = z.object({
  check_id: z.string(),
  state: selfCheckState,
  image: z.string(),
  command: z.array(z.string()),
  worker_id: z.string().nullable(),
  exit_code: z.number().nullable(),
  timed_out: z.boolean(),
  stdout: z.string().nullable(),
  stderr: z.string().nullable(),
  error: z.string().nullable(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
});
export type SelfCheckRow = z.infer<typeof selfCheckRow>;

export async function insertSelfCheck(
  pool: DatabasePool,
  check: { checkId: string; image: string; command: string[] },
): Promise<void> {
  await pool.query(sql.unsafe`
    INSERT INTO runs.self_checks (check_id, image, command)
    VALUES (${check.checkId}, ${check.image}, ${sql.jsonb(check.command)})`);
}

export async function deleteSelfCheck(pool: DatabasePool, checkId: string): Promise<void> {
  await pool.query(sql.unsafe`DELETE FROM runs.self_checks WHERE check_id = ${checkId}`);
}

export async function findSelfCheck(
  pool: DatabasePool,
  checkId: string,
): Promise<SelfCheckRow | null> {
  return pool.maybeOne(
    sql.type(selfCheckRow)`SELECT * FROM runs.self_checks WHERE check_id = ${checkId}`,
  );
}

/** Idempotent: only the first call moves a scheduled check to running. */
export async function markSelfCheckRunning(
  pool: DatabasePool,
  checkId: string,
  workerId: string,
): Promise<void> {
  await pool.query(sql.unsafe`
    UPDATE runs.self_checks SET state = 'running', worker_id = ${workerId}, started_at = now()
    WHERE check_id = ${checkId} AND state = 'scheduled'`);
}

/** Idempotent: a finished check is never rewritten by a retried activity. */
export async function finishSelfCheck(
  pool: DatabasePool,
  checkId: string,
  outcome: {
    exitCode: number | null;
    timedOut: boolean;
    stdout: string;
    stderr: string;
    error: string | null;
  },
): Promise<void> {
  const state: SelfCheckState =
    outcome.exitCode === 0 && !outcome.timedOut ? 'succeeded' : 'failed';
  await pool.query(sql.unsafe`
    UPDATE runs.self_checks
    SET state = ${state}, exit_code = ${outcome.exitCode}, timed_out = ${outcome.timedOut},
        stdout = ${outcome.stdout}, stderr = ${outcome.stderr}, error = ${outcome.error},
        finished_at = now()
    WHERE check_id = ${checkId} AND state IN ('scheduled', 'running')`);
}
