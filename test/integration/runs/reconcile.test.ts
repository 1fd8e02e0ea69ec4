import fs from 'node:fs';
import path from 'node:path';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { ulid } from 'ulid';
import { createDocker } from '../../../platform/docker';
import { OWNER_LABEL } from '../../../activities/docker/containers';
import { createLogger } from '../../../platform/logger';
import { ensureReconcileSchedule } from '../../../services/runs/reconcile';
import { runAdmin } from '../../../cli/runs';
import { sql } from '../../../db/pool';
import { taskQueues } from '../../../contracts/shared/task-queues';
import type { ReconcileInput } from '../../../workflows/runs/reconcile';
import { reconcileScheduleId } from '../../../contracts/runs/reconcile';
import { eventually } from '../../support/services';
import {
  IMAGE,
  client,
  config,
  newTenant,
  quotaRecords,
  reconcilePass,
  startHarness,
  type Harness,
} from './support';
import { createTemporalClient } from '../../../platform/temporal';

/**
 * The reconciler against the real stack: an operator terminates (or deletes) a run's
 * workflow with the Temporal client, as the CLI or the Web UI would, and a reconcile pass
 * repairs the row. `RECORD_RUN_HISTORIES=1` also records the pass's history under
 * test/histories/runs/, which the replay project replays.
 */
const HISTORY_FILE = path.resolve(__dirname, '../../histories/runs/reconcile-terminated.json');

describe('the runs reconciler', () => {
  let h: Harness;
  let temporal: Client;
  const docker = createDocker(config);
  const containers = (trackId: string) =>
    docker.listContainers({ all: true, filters: { label: [`${OWNER_LABEL}=run/${trackId}`] } });

  const reconcile = (input: ReconcileInput) =>
    reconcilePass(temporal, config.taskQueuePrefix, input);

  beforeAll(async () => {
    h = await startHarness();
    temporal = createTemporalClient(config);
  });
  afterAll(async () => {
    await h?.close();
    await temporal?.connection.close();
  });

  it("when an operator terminates a running run's workflow, then one pass fails it with workflow_terminated, removes its container, refunds it and frees its slot", async () => {
    const tier = `tier-${ulid().toLowerCase().slice(-8)}`;
    await runAdmin(['tier', 'set', tier, '--metered', 'true'], h.pool);
    const t = await newTenant(h.pool, { tier });
    const api = client(h.service.url, t.key);
    expect(
      (await api.call('PUT', '/api/v1/tenant/quotas', { max_concurrent_runs: 1 })).status,
    ).toBe(200);
    const stuck = (
      await api.submit({ image: IMAGE, command: ['sleep', '300'], timeout_seconds: 600 })
    ).body.track_id;
    await api.waitFor(stuck, ['running']);
    const waiting = (await api.submit({ image: IMAGE, command: ['true'] })).body.track_id;
    expect((await containers(stuck)).length).toBe(1);

    await temporal.workflow.getHandle(`run/${stuck}`).terminate('operator: stuck');
    // Within the grace after the close, the run is left alone (an activity may still be ending).
    expect(
      (await reconcile({ tenantId: t.tenantId, closedGraceSeconds: 3600 })).result.repaired,
    ).toEqual([]);
    expect((await api.status(stuck)).body.state).toBe('running');

    // Two passes at once: exactly one records the end.
    const passes = await Promise.all([
      reconcile({ tenantId: t.tenantId, closedGraceSeconds: 0 }),
      reconcile({ tenantId: t.tenantId, closedGraceSeconds: 0 }),
    ]);
    expect(passes.flatMap((p) => p.result.repaired)).toEqual([
      { trackId: stuck, reason: 'workflow_terminated', outcome: 'applied', container: 'removed' },
    ]);

    const run = await api.status(stuck);
    expect(run.body).toMatchObject({ state: 'failed', reason: 'workflow_terminated' });
    expect(run.body.finished_at).not.toBeNull();
    const failed = run.body.events.filter((e) => e.to_state === 'failed');
    expect(failed).toEqual([
      expect.objectContaining({
        from_state: 'running',
        to_state: 'failed',
        reason: 'workflow_terminated',
        // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment
        payload: expect.objectContaining({ reconciled: true, workflow_status: 'TERMINATED' }),
      }),
    ]);
    const outbox = (await h.pool.anyFirst(sql.unsafe`
      SELECT event_type FROM runs.run_events WHERE track_id = ${stuck} AND to_state = 'failed'`)) as string[];
    expect(outbox).toEqual(['run.failed']);
    expect(await containers(stuck)).toEqual([]);
    // Its reservation of 600 seconds committed with the few it ran.
    const commit = (await quotaRecords(t).ledger()).find(
      (e) => e.entry_type === 'commit' && e.idempotency_key === `runs:${stuck}:commit`,
    );
    expect(-commit!.amount).toBeGreaterThan(500);
    // The slot is back: the tenant's waiting run (max_concurrent_runs = 1) now runs.
    await api.waitFor(waiting, ['exited'], 60_000);

    // A later pass finds nothing to do.
    const again = await reconcile({ tenantId: t.tenantId, closedGraceSeconds: 0 });
    expect(again.result).toEqual({ scanned: 0, repaired: [], hostLost: [] });

    if (process.env.RECORD_RUN_HISTORIES === '1') {
      const applied = passes.find((p) => p.result.repaired.length === 1)!;
      fs.writeFileSync(
        HISTORY_FILE,
        historyToJSON(await temporal.workflow.getHandle(applied.workflowId).fetchHistory()),
      );
    }
  }, 120_000);

  it("when a run's workflow is running, then the reconciler leaves it alone", async () => {
    const t = await newTenant(h.pool);
    const api = client(h.service.url, t.key);
    const live = (await api.submit({ image: IMAGE, command: ['sleep', '60'] })).body.track_id;
    const deferred = (
      await api.submit({ image: IMAGE, command: ['true'], scheduled_start: '2999-01-01T00:00:00Z' })
    ).body.track_id;
    await api.waitFor(live, ['running']);
    await eventually(async () =>
      (await h.pool.oneFirst(sql.unsafe`
        SELECT workflow_input IS NULL FROM runs.runs WHERE track_id = ${deferred}`))
        ? true
        : undefined,
    );
    const { result } = await reconcile({
      tenantId: t.tenantId,
      closedGraceSeconds: 0,
      missingGraceSeconds: 0,
    });
    expect(result).toEqual({ scanned: 2, repaired: [], hostLost: [] });
    expect((await api.status(live)).body.state).toBe('running');
    expect((await api.status(deferred)).body.state).toBe('scheduled');
    expect((await containers(live)).length).toBe(1);
    await api.call('POST', `/api/v1/runs/${live}/kill`);
    // Cleanup that leaves no stale row behind: end the deferred run the operator's way.
    await temporal.workflow.getHandle(`run/${deferred}`).terminate('test cleanup');
    await reconcile({ tenantId: t.tenantId, closedGraceSeconds: 0 });
    await api.waitFor(live, ['killed']);
    expect((await api.status(deferred)).body.state).toBe('failed');
  }, 60_000);

  it("when a run's workflow no longer exists, then after the grace it is failed with workflow_missing", async () => {
    const t = await newTenant(h.pool);
    const api = client(h.service.url, t.key);
    const gone = (
      await api.submit({ image: IMAGE, command: ['true'], scheduled_start: '2999-01-01T00:00:00Z' })
    ).body.track_id;
    await eventually(async () =>
      (await h.pool.oneFirst(sql.unsafe`
        SELECT workflow_input IS NULL FROM runs.runs WHERE track_id = ${gone}`))
        ? true
        : undefined,
    );
    const handle = temporal.workflow.getHandle(`run/${gone}`);
    await handle.terminate('operator: delete');
    await temporal.workflowService.deleteWorkflowExecution({
      namespace: config.temporalNamespace,
      workflowExecution: { workflowId: `run/${gone}` },
    });
    // The dev server deletes a closed execution in the background (~20 s here).
    await eventually(
      async () =>
        (await handle.describe().then(
          () => false,
          (error: unknown) => error instanceof WorkflowNotFoundError,
        ))
          ? true
          : undefined,
      90_000,
      500,
    );
    // Inside the grace (the row just changed) nothing happens.
    expect(
      (await reconcile({ tenantId: t.tenantId, missingGraceSeconds: 3600 })).result.repaired,
    ).toEqual([]);
    const { result } = await reconcile({ tenantId: t.tenantId, missingGraceSeconds: 0 });
    expect(result.repaired).toEqual([
      { trackId: gone, reason: 'workflow_missing', outcome: 'applied', container: 'none' },
    ]);
    expect((await api.status(gone)).body).toMatchObject({
      state: 'failed',
      reason: 'workflow_missing',
    });
  }, 150_000);

  it('when the API starts its schedules, then schedule/runs-reconcile starts the reconciler on the runs queue', async () => {
    await ensureReconcileSchedule({ config, temporal, logger: createLogger('warn') });
    const schedule = temporal.schedule.getHandle(reconcileScheduleId(config.taskQueuePrefix));
    try {
      const described = await schedule.describe();
      expect(described.action).toMatchObject({
        type: 'startWorkflow',
        workflowType: 'runsReconcileWorkflow',
        workflowId: `${config.taskQueuePrefix}runs-reconcile`,
        taskQueue: taskQueues(config.taskQueuePrefix).runs,
      });
      expect(described.spec.intervals).toMatchObject([{ every: 120_000 }]);
      // Idempotent: a second API start keeps the existing schedule.
      await ensureReconcileSchedule({ config, temporal, logger: createLogger('warn') });
    } finally {
      await schedule.delete().catch(() => undefined);
    }
  });
});
