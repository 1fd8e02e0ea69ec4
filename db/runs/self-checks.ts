import { sql, type DatabasePool } from '../pool';

export type SelfCheckState = 'scheduled' | 'running' | 'succeeded' | 'failed';

export interface SelfCheckRow {
  check_id: string;
  state: SelfCheckState;
  image: string;
  command: string[];
  worker_id: string | null;
  exit_code: number | null;
  timed_out: boolean;
  stdout: string | null;
  stderr: string | null;
  error: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

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
  return (await pool.maybeOne(
    sql.unsafe`SELECT * FROM runs.self_checks WHERE check_id = ${checkId}`,
  )) as SelfCheckRow | null;
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
