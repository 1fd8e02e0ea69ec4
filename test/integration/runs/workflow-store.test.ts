import { ulid } from 'ulid';
import { migrateAll } from '../../../db/migrate';
import { createLogger } from '../../../platform/logger';
import { createDatabasePool, sql, type DatabasePool } from '../../../db/pool';
import {
  findWorkflow,
  insertSubmittedWorkflow,
  insertWorkflowEvent,
  workflowEvents,
  type NewWorkflow,
} from '../../../db/runs/workflows';
import { config, newTenant } from './support';

/** The DAG workflows' tables (migration runs/0007) and their store, against Postgres. */
describe('runs: the workflow store', () => {
  let pool: DatabasePool;
  beforeAll(async () => {
    await migrateAll(config.databaseUrl, createLogger('warn'));
    pool = await createDatabasePool(config, { applicationName: 'runs-test', maximumPoolSize: 4 });
  });
  afterAll(() => pool?.end());

  const workflowOf = (tenantId: string, containers = 2): NewWorkflow => ({
    workflowId: ulid(),
    tenantId,
    keyId: null,
    name: 'etl',
    tags: ['nightly'],
    failurePolicy: 'fail_fast',
    templateId: null,
    nodes: [
      ...Array.from({ length: containers }, (_, i) => ({
        ref: `step-${i}`,
        type: 'container' as const,
        spec: { image: 'registry.example/x:1', command: ['true'] },
      })),
      { ref: 'gate', type: 'approval' as const, spec: {} },
    ],
    edges: [
      { from: 'step-0', to: 'gate', condition: 'on_success' },
      ...(containers > 1 ? [{ from: 'gate', to: 'step-1', condition: 'always' as const }] : []),
    ],
    workflowInput: { any: 'input' },
    workflowTaskQueue: 'test-queue',
    eventId: ulid(),
  });

  it('stores a workflow pending with its nodes and edges in submitted order, and its first event', async () => {
    const { tenantId } = await newTenant(pool);
    const workflow = workflowOf(tenantId);
    expect(
      await insertSubmittedWorkflow(pool, workflow, { maxConcurrent: 5, dailyLimit: 10 }),
    ).toBe('stored');
    const found = await findWorkflow(pool, tenantId, workflow.workflowId);
    expect(found?.workflow).toMatchObject({ state: 'pending', name: 'etl', tags: ['nightly'] });
    expect(found?.nodes.map((n) => [n.ref, n.type, n.state, n.attempt])).toEqual([
      ['step-0', 'container', 'pending', 0],
      ['step-1', 'container', 'pending', 0],
      ['gate', 'approval', 'pending', 0],
    ]);
    expect(found?.edges).toEqual([
      { from_ref: 'step-0', to_ref: 'gate', condition: 'on_success' },
      { from_ref: 'gate', to_ref: 'step-1', condition: 'always' },
    ]);
    expect(await findWorkflow(pool, 'another-tenant', workflow.workflowId)).toBeNull();
    const [first] = await workflowEvents(pool, workflow.workflowId, '0', 10);
    expect(first).toMatchObject({ kind: 'workflow', node_ref: null, to_state: 'pending' });
  });

  it('refuses past max_concurrent_workflows, even to concurrent submits, and counts every node against the day', async () => {
    const { tenantId } = await newTenant(pool);
    const outcomes = await Promise.all(
      Array.from({ length: 5 }, () =>
        insertSubmittedWorkflow(pool, workflowOf(tenantId, 1), {
          maxConcurrent: 3,
          dailyLimit: 100,
        }),
      ),
    );
    expect(outcomes.filter((o) => o === 'stored')).toHaveLength(3);
    expect(outcomes.filter((o) => o === 'workflow_quota_exceeded')).toHaveLength(2);
    // 3 + 1 nodes (a gate counts too) stored today; 3 more fit a limit of 7, 4 do not (and
    // nothing is written).
    const other = await newTenant(pool);
    const limits = { maxConcurrent: 10, dailyLimit: 7 };
    expect(await insertSubmittedWorkflow(pool, workflowOf(other.tenantId, 3), limits)).toBe(
      'stored',
    );
    const refused = workflowOf(other.tenantId, 3);
    expect(await insertSubmittedWorkflow(pool, refused, limits)).toBe('daily_quota_exceeded');
    expect(await findWorkflow(pool, other.tenantId, refused.workflowId)).toBeNull();
    expect(await insertSubmittedWorkflow(pool, workflowOf(other.tenantId, 2), limits)).toBe(
      'stored',
    );
  });

  it('keeps an event feed with increasing ids, written once per event id', async () => {
    const { tenantId } = await newTenant(pool);
    const workflow = workflowOf(tenantId);
    await insertSubmittedWorkflow(pool, workflow, { maxConcurrent: 5, dailyLimit: 10 });
    const event = {
      workflowId: workflow.workflowId,
      tenantId,
      nodeRef: 'step-0',
      from: 'pending' as const,
      to: 'running' as const,
      detail: { attempt: 1 },
    };
    const running = ulid();
    await insertWorkflowEvent(pool, { ...event, eventId: running });
    await insertWorkflowEvent(pool, { ...event, eventId: running });
    await insertWorkflowEvent(pool, {
      ...event,
      from: 'running',
      to: 'succeeded',
      eventId: ulid(),
    });
    const feed = await workflowEvents(pool, workflow.workflowId, '0', 10);
    expect(feed.map((e) => [e.kind, e.node_ref, e.to_state])).toEqual([
      ['workflow', null, 'pending'],
      ['node', 'step-0', 'running'],
      ['node', 'step-0', 'succeeded'],
    ]);
    const ids = feed.map((e) => BigInt(e.id));
    expect([...ids].sort((a, b) => (a < b ? -1 : 1))).toEqual(ids);
    expect(await workflowEvents(pool, workflow.workflowId, feed[1]!.id, 10)).toEqual([feed[2]]);
    // A workflow event names no node, a node event one (the table refuses the mix).
    await expect(
      pool.query(sql.unsafe`
        INSERT INTO runs.workflow_events (event_id, workflow_id, tenant_id, node_ref, kind, to_state)
        VALUES (${ulid()}, ${workflow.workflowId}, ${tenantId}, NULL, 'node', 'running')`),
    ).rejects.toThrow(/check integrity constraint/);
  });
});
