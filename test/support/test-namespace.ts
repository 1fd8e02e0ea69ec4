import type { Config } from '../../api/platform/config';
import { createTemporalClient } from '../../api/platform/temporal';

/** The namespace of the suite when the stack's env does not name one (scripts/stack's default). */
export const DEFAULT_TEST_NAMESPACE = 'platform-test';

/**
 * Ends what tests left in their own Temporal namespace: executions still running (waiting runs,
 * holds far from expiry, workflows of a test's own stopped worker) are terminated and schedules
 * deleted, so each run of the suite starts and ends with it empty. Refuses any other namespace:
 * the operator's must only ever hold real executions.
 */
export async function emptyTestNamespace(
  config: Config,
): Promise<{ terminated: number; schedulesDeleted: number }> {
  const expected = process.env.TEMPORAL_TEST_NAMESPACE ?? DEFAULT_TEST_NAMESPACE;
  if (config.temporalNamespace !== expected)
    throw new Error(`refusing to empty namespace ${config.temporalNamespace}: not the tests' own`);
  const client = createTemporalClient(config);
  try {
    let terminated = 0;
    for await (const execution of client.workflow.list({ query: 'ExecutionStatus="Running"' })) {
      await client.workflow
        .getHandle(execution.workflowId, execution.runId)
        .terminate('the test run is over')
        .then(() => terminated++)
        .catch(() => undefined); // ended meanwhile
    }
    let schedulesDeleted = 0;
    for await (const schedule of client.schedule.list()) {
      await client.schedule
        .getHandle(schedule.scheduleId)
        .delete()
        .then(() => schedulesDeleted++)
        .catch(() => undefined);
    }
    return { terminated, schedulesDeleted };
  } finally {
    await client.connection.close();
  }
}
