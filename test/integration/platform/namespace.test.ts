import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ulid } from 'ulid';
import { createTemporalClient } from '../../../platform/temporal';
import { runWorkflowId } from '../../../contracts/runs/run';
import { eventually } from '../../support/services';
import { cleanTestNamespace, testNamespace } from '../../support/test-namespace';
import { IMAGE, client, config, newTenant, startHarness, type Harness } from '../runs/support';

const OPERATORS_NAMESPACE = 'default';
/** Above Linux's largest pid_max (2^22): no process has it, so its "run" died long ago. */
const DEAD_PID = 4_194_305;

describe("the tests' own Temporal namespace", () => {
  let h: Harness;
  let tests: Client;
  let operators: Client;
  beforeAll(async () => {
    h = await startHarness();
    tests = createTemporalClient(config);
    operators = createTemporalClient({ ...config, temporalNamespace: OPERATORS_NAMESPACE });
  });
  afterAll(async () => {
    await Promise.all([tests?.connection.close(), operators?.connection.close()]);
    await h?.close();
  });

  it("when a test submits a run, then its workflow is in the tests' namespace and not in the operator's", async () => {
    expect(config.temporalNamespace).toBe(testNamespace());
    expect(config.temporalNamespace).not.toBe(OPERATORS_NAMESPACE);
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    const { track_id } = (await api.submit({ image: IMAGE, command: ['true'] })).body;
    await api.waitFor(track_id, ['exited']);

    const described = await tests.workflow.getHandle(runWorkflowId(track_id)).describe();
    expect(described.status.name).toBe('COMPLETED');
    await expect(
      operators.workflow.getHandle(runWorkflowId(track_id)).describe(),
    ).rejects.toBeInstanceOf(WorkflowNotFoundError);
    const inDefault = await operators.workflow.count(
      `TaskQueue STARTS_WITH "${config.taskQueuePrefix}"`,
    );
    expect(inDefault.count).toBe(0);
  });

  it("when the teardown cleans, then it ends its run's executions and schedules and a dead run's, and leaves a live run's alone", async () => {
    // Three "runs" with no worker, so what they start stays Running: this one (a made-up prefix:
    // the real one's executions belong to tests still going), a dead one, a live other one.
    const tag = ulid().toLowerCase().slice(-8);
    const mine = `test-${process.pid}-${tag}a-`;
    const dead = `test-${DEAD_PID}-${tag}-`;
    const other = `test-${process.pid}-${tag}b-`;
    const start = (prefix: string) =>
      tests.workflow.start('ledgerHoldSweepWorkflow', {
        taskQueue: `${prefix}ledger`,
        workflowId: `test-clean/${prefix}`,
      });
    const mineRun = await start(mine);
    const deadRun = await start(dead);
    const otherRun = await start(other);
    const schedule = await tests.schedule.create({
      scheduleId: `schedule/${mine}ledger-hold-sweep`,
      spec: { intervals: [{ every: '1 hour' }] },
      action: {
        type: 'startWorkflow',
        workflowType: 'ledgerHoldSweepWorkflow',
        taskQueue: `${mine}ledger`,
      },
      state: { paused: true },
    });
    try {
      // The teardown finds executions through visibility, which trails a start by a moment.
      const query = `TaskQueue IN ("${mine}ledger", "${dead}ledger", "${other}ledger")`;
      await eventually(async () =>
        (await tests.workflow.count(query)).count === 3 ? true : undefined,
      );
      const cleaned = await cleanTestNamespace(config, mine);

      expect(cleaned).toMatchObject({ executions: 1, schedules: 1 });
      expect(cleaned.orphanExecutions).toBeGreaterThanOrEqual(1);
      expect((await mineRun.describe()).status.name).toBe('TERMINATED');
      expect((await deadRun.describe()).status.name).toBe('TERMINATED');
      expect((await otherRun.describe()).status.name).toBe('RUNNING');
      await expect(schedule.describe()).rejects.toThrow();
    } finally {
      await otherRun.terminate('test over').catch(() => undefined);
      await schedule.delete().catch(() => undefined);
    }
  });

  it("when asked to clean the operators' namespace, then it refuses", async () => {
    await expect(
      cleanTestNamespace(
        { ...config, temporalNamespace: OPERATORS_NAMESPACE },
        config.taskQueuePrefix,
      ),
    ).rejects.toThrow(/not the tests' own/);
  });
});
