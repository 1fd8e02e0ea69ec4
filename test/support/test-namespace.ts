import type { Client } from '@temporalio/client';
import type { Config } from '../../platform/config';
import { createTemporalClient } from '../../platform/temporal';

/** The namespace of the suite when the stack's env does not name one (scripts/stack's default). */
export const DEFAULT_TEST_NAMESPACE = 'platform-test';

/** The tests' own namespace (`TEMPORAL_TEST_NAMESPACE` from scripts/stack env). */
export const testNamespace = (): string =>
  process.env.TEMPORAL_TEST_NAMESPACE ?? DEFAULT_TEST_NAMESPACE;

/**
 * Every task queue of one jest run starts with `test-<jest pid>-<start time, base 36>-` (set by
 * global-setup; a test with a worker of its own nests its prefix under it), so what a run left
 * behind is told apart from what other runs, benches or engineers have running in the same
 * namespace right now.
 */
export const testRunPrefix = (): string => `test-${process.pid}-${Date.now().toString(36)}-`;
const TEST_RUN_PREFIX = /^test-(\d+)-[0-9a-z]+-/;
const TEST_QUEUES_QUERY = 'ExecutionStatus="Running" AND TaskQueue STARTS_WITH "test-"';
const TERMINATE_REASON = 'the test run that started it is over';

export interface Cleaned {
  /** Of this run. */
  executions: number;
  schedules: number;
  /** Of earlier runs whose jest process is gone (Ctrl-C, a crash): their teardown never ran. */
  orphanExecutions: number;
  orphanSchedules: number;
}

/**
 * Ends what a test run left in the tests' own namespace: its executions still running (waiting
 * runs, holds far from expiry, workflows of a test's stopped worker) are terminated and its
 * schedules deleted, and so are those of earlier runs that died before their teardown. Never
 * touches a queue of a run still alive (another engineer's jest in the same checkout), and
 * refuses any namespace but the tests' own: the operator's holds only real executions.
 */
export async function cleanTestNamespace(config: Config, runPrefix: string): Promise<Cleaned> {
  if (config.temporalNamespace !== testNamespace())
    throw new Error(`refusing to clean namespace ${config.temporalNamespace}: not the tests' own`);
  // An empty or foreign prefix would claim every run's queues as this run's.
  if (!TEST_RUN_PREFIX.test(runPrefix))
    throw new Error(`refusing to clean by prefix '${runPrefix}': not a test run's`);
  const client = createTemporalClient(config);
  try {
    const owner = queueOwner(runPrefix);
    const executions = await terminateRunning(client, owner);
    const schedules = await deleteSchedules(client, owner);
    return {
      executions: executions.thisRun,
      schedules: schedules.thisRun,
      orphanExecutions: executions.orphans,
      orphanSchedules: schedules.orphans,
    };
  } finally {
    await client.connection.close();
  }
}

type Owner = 'this run' | 'orphan' | 'other';

/** Whose a task queue is: this run's, a dead earlier run's, or anyone else's (left alone). */
function queueOwner(runPrefix: string): (taskQueue: string | undefined) => Owner {
  return (taskQueue) => {
    if (taskQueue === undefined) return 'other';
    if (taskQueue.startsWith(runPrefix)) return 'this run';
    const match = TEST_RUN_PREFIX.exec(taskQueue);
    return match && !processAlive(Number(match[1])) ? 'orphan' : 'other';
  };
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

async function terminateRunning(
  client: Client,
  owner: ReturnType<typeof queueOwner>,
): Promise<{ thisRun: number; orphans: number }> {
  const counts = { thisRun: 0, orphans: 0 };
  for await (const execution of client.workflow.list({ query: TEST_QUEUES_QUERY })) {
    const whose = owner(execution.taskQueue);
    if (whose === 'other') continue;
    const ended = await client.workflow
      .getHandle(execution.workflowId, execution.runId)
      .terminate(TERMINATE_REASON)
      .then(
        () => true,
        () => false, // it ended meanwhile
      );
    if (ended) counts[whose === 'this run' ? 'thisRun' : 'orphans']++;
  }
  return counts;
}

async function deleteSchedules(
  client: Client,
  owner: ReturnType<typeof queueOwner>,
): Promise<{ thisRun: number; orphans: number }> {
  const counts = { thisRun: 0, orphans: 0 };
  for await (const summary of client.schedule.list()) {
    const handle = client.schedule.getHandle(summary.scheduleId);
    // The summary does not name the task queue its workflows go to; the description does.
    const action = (await handle.describe().catch(() => undefined))?.action;
    const whose = owner(action?.type === 'startWorkflow' ? action.taskQueue : undefined);
    if (whose === 'other') continue;
    const deleted = await handle.delete().then(
      () => true,
      () => false, // deleted meanwhile
    );
    if (deleted) counts[whose === 'this run' ? 'thisRun' : 'orphans']++;
  }
  return counts;
}
