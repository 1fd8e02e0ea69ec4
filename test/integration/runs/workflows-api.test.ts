import { ulid } from 'ulid';
import { runsConformance } from './conformance';
import type { Client } from '@temporalio/client';
import { sql } from '../../../db/pool';
import { submissionsToday } from '../../../db/runs/runs';
import {
  insertSubmittedWorkflow,
  insertWorkflowEvent,
  type NewWorkflow,
  type WorkflowState,
} from '../../../db/runs/workflows';
import { runAdmin } from '../../../cli/runs';
import { CONTROL_CATCH_UP_MS } from '../../../services/runs/control';
import { openApiDocument } from '../../../api/runs/openapi';
import { createTemporalClient } from '../../../platform/temporal';
import { taskQueues } from '../../../contracts/shared/task-queues';
import { DAG_STATE, TENANT_ID } from '../../../contracts/shared/search-attributes';
import { dagWorkflowId } from '../../../contracts/runs/dag';
import type { NodeState } from '../../../contracts/runs/dag-rules';
import { eventually } from '../../support/services';
import {
  ALL_RUN_PERMISSIONS,
  IMAGE,
  client,
  config,
  newTenant,
  startHarness,
  type Harness,
} from './support';
import { payloadValues } from '../../support/payload-keys';

const WORKFLOW_PERMISSIONS =
  'svc_workflow_submit,svc_workflow_read,svc_workflow_control,svc_tenant_admin';
const W = '/api/v1/workflows';

type Api = ReturnType<typeof client>;
type Node = Record<string, unknown>;

/** An approval gate: nobody approves it here, so nothing behind it ever runs a container. */
const gate = (ref: string, extra: Node = {}): Node => ({ ref, type: 'approval', ...extra });
const step = (ref: string, extra: Node = {}): Node => ({
  ref,
  image: IMAGE,
  command: ['true'],
  ...extra,
});
const edge = (from: string, to: string, condition = 'on_success') => ({ from, to, condition });
/** A workflow whose container nodes wait behind a gate: submitted, it stays active. */
const guarded = (...steps: Node[]) => ({
  nodes: [gate('gate'), ...steps],
  edges: steps.map((s) => edge('gate', s.ref as string)),
});

/**
 * The workflow routes: submit, reads, controls. The engine (workflow dagWorkflow) is not what is
 * tested here: a submitted workflow keeps its container nodes behind an approval gate nobody
 * approves, and the states a read or a control needs are written into stored workflows that no
 * execution follows.
 */
describe('runs API: DAG workflows', () => {
  let h: Harness;
  let temporal: Client;
  /** Workflows accepted through the API: their executions are ended after the file. */
  const accepted: string[] = [];
  /** Other executions a test started (a run/<track_id>), ended likewise. */
  const runExecutions: string[] = [];
  const { conforms, checked } = runsConformance();

  beforeAll(async () => {
    h = await startHarness();
    temporal = createTemporalClient(config);
  });
  afterAll(async () => {
    // The service first (its starter stops), then every execution it started.
    await h?.close();
    await Promise.all(
      [...accepted.map(dagWorkflowId), ...runExecutions].map((workflowId) =>
        temporal.workflow
          .getHandle(workflowId)
          .terminate('the workflows API test is over')
          .catch(() => undefined),
      ),
    );
    await temporal?.connection.close();
  });

  const tenant = async (permissions = WORKFLOW_PERMISSIONS, tier?: string) => {
    const made = await newTenant(h.pool, { permissions, tier });
    return { ...made, api: client(h.service.url, made.key) };
  };
  const submit = async (api: Api, body: Record<string, unknown>) => {
    const reply = await api.call<{ workflow_id: string; status: string; clamped: boolean }>(
      'POST',
      W,
      body,
    );
    if (reply.status === 202) accepted.push(reply.body.workflow_id);
    conforms('POST', W, reply);
    return reply;
  };
  const setQuotas = async (api: Api, quotas: Record<string, unknown>) =>
    expect((await api.call('PUT', '/api/v1/tenant/quotas', quotas)).status).toBe(200);
  const workflowsOf = async (tenantId: string): Promise<unknown> =>
    h.pool.oneFirst(
      sql.unsafe`SELECT count(*)::int FROM runs.workflows WHERE tenant_id = ${tenantId}`,
    );

  /**
   * A workflow stored as submit stores it, on a queue no starter serves: no execution follows
   * it, so a test sets its states (setStates) as an execution would have.
   */
  async function stored(tenantId: string, extra: Partial<NewWorkflow> = {}): Promise<string> {
    const workflowId = ulid();
    const spec = { image: IMAGE, command: ['true'], env: {}, inputs_from: [], retries: 0 };
    const outcome = await insertSubmittedWorkflow(
      h.pool,
      {
        workflowId,
        tenantId,
        keyId: null,
        name: 'stored',
        tags: [],
        failurePolicy: 'fail_fast',
        templateId: null,
        nodes: [
          { ref: 'build', type: 'container', spec },
          { ref: 'test', type: 'container', spec },
          { ref: 'gate', type: 'approval', spec: { command: [], env: {}, inputs_from: [] } },
        ],
        edges: [edge('build', 'test', 'always'), edge('test', 'gate')] as NewWorkflow['edges'],
        workflowInput: null,
        workflowTaskQueue: 'never-started',
        eventId: ulid(),
        ...extra,
      },
      { maxConcurrent: 100, dailyLimit: 1000 },
    );
    expect(outcome).toBe('stored');
    return workflowId;
  }

  type NodeFields = { state: NodeState; exit_code?: number; output?: unknown; attempts?: string[] };
  async function setStates(id: string, state: WorkflowState, nodes: Record<string, NodeFields>) {
    const ended = ['succeeded', 'failed', 'cancelled'].includes(state);
    await h.pool.query(sql.unsafe`
      UPDATE runs.workflows SET state = ${state},
        started_at = '2030-01-01T00:00:00Z',
        finished_at = ${ended ? '2030-01-01T00:01:30.500Z' : null}::timestamptz
      WHERE workflow_id = ${id}`);
    for (const [ref, n] of Object.entries(nodes)) {
      const attempts = n.attempts ?? [];
      await h.pool.query(sql.unsafe`
        UPDATE runs.workflow_nodes SET state = ${n.state}, exit_code = ${n.exit_code ?? null},
          output = ${n.output === undefined ? null : JSON.stringify(n.output)}::jsonb,
          attempts = ${sql.array(attempts, 'text')}, attempt = ${attempts.length},
          current_track_id = ${attempts.at(-1) ?? null},
          started_at = ${attempts.length > 0 ? '2030-01-01T00:00:01Z' : null}::timestamptz
        WHERE workflow_id = ${id} AND ref = ${ref}`);
    }
  }

  describe('submit', () => {
    it('when a workflow is accepted, then it is 202 pending, stored with clamped limits and stripped nodes, every node counted, and its execution dag/<id> started with the key’s terms', async () => {
      const { api, tenantId, keyId } = await tenant();
      await setQuotas(api, { max_timeout_seconds: 100, max_queue_seconds: 77 });
      const reply = await submit(api, {
        name: 'etl',
        tags: ['nightly'],
        failure_policy: 'continue',
        nodes: [
          gate('approve-me', { image: 'not even an image', retries: 3 }),
          step('build', { timeout_seconds: 5000, env: { MODE: 'fast' }, colour: 'blue' }),
          step('test', { inputs_from: ['build'], retries: 10, retry_backoff_seconds: 3600 }),
        ],
        edges: [{ from: 'approve-me', to: 'build' }, edge('build', 'test', 'always')],
      });
      expect(reply.status).toBe(202);
      const id = reply.body.workflow_id;
      expect(reply.body).toEqual({ workflow_id: id, status: 'pending', clamped: true });

      const specs = Object.fromEntries(
        (
          (await h.pool.any(sql.unsafe`
            SELECT ref, spec FROM runs.workflow_nodes WHERE workflow_id = ${id}`)) as {
            ref: string;
            spec: unknown;
          }[]
        ).map((r) => [r.ref, r.spec]),
      );
      expect(specs).toEqual({
        'approve-me': {
          command: [],
          env: {},
          inputs_from: [],
          retries: 0,
          retry_backoff_seconds: 10,
        },
        build: {
          image: IMAGE,
          command: ['true'],
          env: { MODE: 'fast' },
          inputs_from: [],
          retries: 0,
          retry_backoff_seconds: 10,
          cpu_limit: 1,
          memory_limit_mb: 256,
          timeout_seconds: 100,
        },
        test: {
          image: IMAGE,
          command: ['true'],
          env: {},
          inputs_from: ['build'],
          retries: 10,
          retry_backoff_seconds: 3600,
          cpu_limit: 1,
          memory_limit_mb: 256,
          timeout_seconds: 100,
        },
      });
      expect(await submissionsToday(h.pool, tenantId)).toBe(3);

      const status = await api.call<Record<string, unknown>>('GET', `${W}/${id}`);
      conforms('GET', `${W}/{workflow_id}`, status);
      expect(status.body).toMatchObject({
        workflow_id: id,
        tenant_id: tenantId,
        name: 'etl',
        tags: ['nightly'],
        failure_policy: 'continue',
        template_id: null,
        finished_at: null,
        edges: [
          { from_ref: 'approve-me', to_ref: 'build', condition: 'on_success' },
          { from_ref: 'build', to_ref: 'test', condition: 'always' },
        ],
      });
      expect((status.body.nodes as Node[]).map((n) => [n.ref, n.type])).toEqual([
        ['approve-me', 'approval'],
        ['build', 'container'],
        ['test', 'container'],
      ]);

      // The starter: dag/<id> on the runs queue, found by tenant; its input is the key's terms
      // (its name and node count for its summary in the Web UI).
      const handle = temporal.workflow.getHandle(dagWorkflowId(id));
      const description = await eventually(() => handle.describe().catch(() => undefined));
      expect(description.type).toBe('dagWorkflow');
      expect(description.taskQueue).toBe(taskQueues(config.taskQueuePrefix).runs);
      expect(description.typedSearchAttributes.get(TENANT_ID)).toBe(tenantId);
      expect(['pending', 'running']).toContain(description.typedSearchAttributes.get(DAG_STATE));
      const history = await handle.fetchHistory();
      const started = history.events![0]!.workflowExecutionStartedEventAttributes!;
      expect((await payloadValues(started.input!.payloads!))[0]).toEqual({
        workflowId: id,
        tenantId,
        keyId,
        name: 'etl',
        nodeCount: 3,
        terms: {
          maxQueueSeconds: 77,
          tierConcurrentRuns: null,
          metered: false,
          workingHoursTjp: null,
          dockerAnyHostQueue: taskQueues(config.taskQueuePrefix).runsDockerAnyHost,
        },
      });
      await eventually(async () =>
        (await h.pool.oneFirst(
          sql.unsafe`SELECT workflow_input IS NULL FROM runs.workflows WHERE workflow_id = ${id}`,
        ))
          ? true
          : undefined,
      );
    });

    it.each([
      ['a cycle', [step('a'), step('b')], [edge('a', 'b'), edge('b', 'a')], 'cycle'],
      ['a node on its own edge', [step('a')], [edge('a', 'a')], 'cycle'],
      ['a duplicate ref', [step('a'), step('a')], [], 'duplicate_ref'],
      ['an edge to a missing ref', [step('a')], [edge('a', 'nope')], 'unknown_edge_ref'],
      [
        'two edges between one pair',
        [step('a'), step('b')],
        [edge('a', 'b'), edge('a', 'b', 'always')],
        'duplicate_edge',
      ],
      [
        'inputs_from naming a missing node',
        [step('a', { inputs_from: ['ghost'] })],
        [],
        'unknown_input_ref',
      ],
    ])(
      'when the graph has %s, then 400 invalid_graph, nothing stored, and the audit says what was found',
      async (_label, nodes, edges, kind) => {
        const { api, tenantId } = await tenant();
        const reply = await submit(api, { nodes, edges });
        expect(reply).toMatchObject({ status: 400, body: { detail: 'invalid_graph' } });
        expect(await workflowsOf(tenantId)).toBe(0);
        expect(await submissionsToday(h.pool, tenantId)).toBe(0);
        const audit: unknown = await h.pool.one(sql.unsafe`
          SELECT action, outcome, detail FROM runs.audit_records
          WHERE tenant_id = ${tenantId} AND outcome = 'refused'`);
        expect(audit).toMatchObject({
          action: 'workflow.submit',
          detail: { reason: 'invalid_graph', problem: { kind } },
        });
      },
    );

    it("when a container node's image is no reference, then 400 invalid_image:<image>; an approval node's image is ignored", async () => {
      const { api, tenantId } = await tenant();
      const bad = await submit(api, guarded(step('a'), step('b', { image: 'busybox' })));
      expect(bad).toMatchObject({ status: 400, body: { detail: 'invalid_image:busybox' } });
      expect(await workflowsOf(tenantId)).toBe(0);
      expect((await submit(api, { nodes: [gate('g', { image: 'busybox' })] })).status).toBe(202);
    });

    it("when a node's image is not on the key's tier allowlist, then 403 image_not_allowed", async () => {
      const tier = `w-${ulid().toLowerCase().slice(-8)}`;
      await runAdmin(
        ['tier', 'set', tier, '--allowed-images', `${config.registryAddress}/`],
        h.pool,
      );
      const { api, tenantId } = await tenant(WORKFLOW_PERMISSIONS, tier);
      const refused = await submit(api, guarded(step('a', { image: 'example.com/other:1' })));
      expect(refused).toMatchObject({ status: 403, body: { detail: 'image_not_allowed' } });
      expect(await workflowsOf(tenantId)).toBe(0);
      expect((await submit(api, guarded(step('a')))).status).toBe(202);
    });

    it('when a workflow has max_nodes_per_workflow nodes it is accepted; one more is 400 too_many_nodes', async () => {
      const { api, tenantId } = await tenant();
      await setQuotas(api, { max_nodes_per_workflow: 3 });
      expect((await submit(api, guarded(step('a'), step('b')))).status).toBe(202);
      const refused = await submit(api, guarded(step('a'), step('b'), step('c')));
      expect(refused).toMatchObject({ status: 400, body: { detail: 'too_many_nodes' } });
      expect(await workflowsOf(tenantId)).toBe(1);
    });

    it("when the key's tier allows fewer nodes than the tenant, then the tier's workflow_nodes binds", async () => {
      const tier = `n-${ulid().toLowerCase().slice(-8)}`;
      await runAdmin(['tier', 'set', tier, '--workflow-nodes', '2'], h.pool);
      const { api } = await tenant(WORKFLOW_PERMISSIONS, tier);
      expect((await submit(api, guarded(step('a')))).status).toBe(202);
      expect((await submit(api, guarded(step('a'), step('b')))).body).toEqual({
        detail: 'too_many_nodes',
      });
    });

    it('when a request carries 1000 nodes its schema takes it (then the quota refuses it); 1001 or none is 422', async () => {
      const { api } = await tenant();
      const gates = (n: number) => Array.from({ length: n }, (_, i) => gate(`g${i}`));
      expect((await submit(api, { nodes: gates(1000) })).body).toEqual({
        detail: 'too_many_nodes',
      });
      expect((await submit(api, { nodes: gates(1001) })).status).toBe(422);
      expect((await submit(api, { nodes: [] })).status).toBe(422);
      expect((await submit(api, { edges: [] })).status).toBe(422);
    });

    it('when the tenant has max_concurrent_workflows active, then the next is 429 workflow_quota_exceeded', async () => {
      const { api, tenantId } = await tenant();
      await setQuotas(api, { max_concurrent_workflows: 2 });
      expect((await submit(api, guarded(step('a')))).status).toBe(202);
      expect((await submit(api, guarded(step('a')))).status).toBe(202);
      const refused = await submit(api, guarded(step('a')));
      expect(refused).toMatchObject({ status: 429, body: { detail: 'workflow_quota_exceeded' } });
      expect(await workflowsOf(tenantId)).toBe(2);
      expect(await submissionsToday(h.pool, tenantId)).toBe(4);
    });

    it("when a workflow's nodes do not fit in the day's remaining runs, then 429 daily_quota_exceeded; exactly fitting is accepted", async () => {
      const { api, tenantId } = await tenant();
      await setQuotas(api, { max_daily_runs: 3 });
      expect((await submit(api, guarded(step('a')))).status).toBe(202);
      const refused = await submit(api, guarded(step('a')));
      expect(refused).toMatchObject({ status: 429, body: { detail: 'daily_quota_exceeded' } });
      expect(await submissionsToday(h.pool, tenantId)).toBe(2);
      expect((await submit(api, { nodes: [gate('last')] })).status).toBe(202);
      expect(await submissionsToday(h.pool, tenantId)).toBe(3);
    });

    it("when a metered key's container nodes would pass its daily seconds cap, then 429 metered_quota_exceeded; at the cap it is accepted", async () => {
      const tier = `m-${ulid().toLowerCase().slice(-8)}`;
      await runAdmin(
        ['tier', 'set', tier, '--metered', 'true', '--metered-seconds-per-day', '100'],
        h.pool,
      );
      const { api, tenantId } = await tenant(WORKFLOW_PERMISSIONS, tier);
      const timed = (ref: string) => step(ref, { timeout_seconds: 50 });
      const refused = await submit(api, guarded(timed('a'), timed('b'), timed('c')));
      expect(refused).toMatchObject({ status: 429, body: { detail: 'metered_quota_exceeded' } });
      expect(await workflowsOf(tenantId)).toBe(0);
      expect((await submit(api, guarded(timed('a'), timed('b')))).status).toBe(202);
    });

    it.each([
      ['a ref of 128 characters', 202, { nodes: [gate('r'.repeat(128))] }],
      ['a ref of 129 characters', 422, { nodes: [gate('r'.repeat(129))] }],
      ['an empty ref', 422, { nodes: [gate('')] }],
      ['retries 10', 202, guarded(step('a', { retries: 10 }))],
      ['retries 11', 422, guarded(step('a', { retries: 11 }))],
      ['retries -1', 422, guarded(step('a', { retries: -1 }))],
      ['retry_backoff_seconds 3600', 202, guarded(step('a', { retry_backoff_seconds: 3600 }))],
      ['retry_backoff_seconds 3601', 422, guarded(step('a', { retry_backoff_seconds: 3601 }))],
      ['a container node without image', 422, guarded({ ref: 'a', command: ['true'] })],
      ['a node of an unknown type', 422, { nodes: [{ ref: 'a', type: 'script', image: IMAGE }] }],
      ['an unknown top-level field', 422, { ...guarded(step('a')), webhook: {} }],
      [
        'an unknown edge field',
        422,
        { nodes: [gate('a'), gate('b')], edges: [{ ...edge('a', 'b'), x: 1 }] },
      ],
      [
        'an unknown edge condition',
        422,
        { nodes: [gate('a'), gate('b')], edges: [edge('a', 'b', 'sometimes')] },
      ],
      ['an env name that is no variable', 422, guarded(step('a', { env: { 'no-dash': 'x' } }))],
      ['a name of 129 characters', 422, { name: 'n'.repeat(129), nodes: [gate('a')] }],
      ['failure_policy stop', 422, { failure_policy: 'stop', nodes: [gate('a')] }],
    ])('when a workflow has %s, then %i', async (_label, status, body) => {
      const { api } = await tenant();
      expect((await submit(api, body)).status).toBe(status);
    });
  });

  describe('permissions and tenants', () => {
    /** Every workflow route, with a body where it takes one. */
    const routes = (id: string): [string, string, unknown?][] => [
      ['POST', W, guarded(step('a'))],
      ['GET', W],
      ['GET', `${W}/${id}`],
      ['GET', `${W}/${id}/nodes/gate`],
      ['GET', `${W}/${id}/result`],
      ['GET', `${W}/${id}/events`],
      ['POST', `${W}/${id}/pause`],
      ['POST', `${W}/${id}/resume`],
      ['POST', `${W}/${id}/cancel`],
      ['POST', `${W}/${id}/nodes/gate/approve`],
      ['POST', `${W}/${id}/nodes/gate/reject`],
      ['POST', `${W}/${id}/nodes/gate/retry`],
    ];

    it('when a key holds every run permission but no workflow one, then every workflow route is 403', async () => {
      const id = await stored((await tenant()).tenantId);
      const { api } = await tenant(ALL_RUN_PERMISSIONS);
      for (const [method, path, body] of routes(id)) {
        const reply = await api.call(method, path, body);
        expect([method, path, reply.status, reply.body]).toEqual([
          method,
          path,
          403,
          { detail: 'permission_denied' },
        ]);
      }
    });

    it('when a key holds only svc_workflow_read, then it reads but neither submits nor controls', async () => {
      const { api, tenantId } = await tenant('svc_workflow_read');
      const id = await stored(tenantId);
      expect((await api.call('GET', `${W}/${id}`)).status).toBe(200);
      expect((await api.call('GET', `${W}/${id}/events`)).status).toBe(200);
      expect((await api.call('POST', W, guarded(step('a')))).status).toBe(403);
      expect((await api.call('POST', `${W}/${id}/cancel`)).status).toBe(403);
      conforms('POST', `${W}/{workflow_id}/cancel`, await api.call('POST', `${W}/${id}/cancel`));
    });

    it("when a tenant names another tenant's workflow, then every route is 404 workflow_not_found and its list omits it", async () => {
      const owner = await tenant();
      const id = await stored(owner.tenantId);
      const { api } = await tenant();
      for (const [method, path, body] of routes(id).slice(2)) {
        const reply = await api.call(method, path, body);
        expect([method, path, reply.status, reply.body]).toEqual([
          method,
          path,
          404,
          { detail: 'workflow_not_found' },
        ]);
      }
      expect((await api.call<{ workflows: unknown[] }>('GET', W)).body.workflows).toEqual([]);
      // Its owner finds it, by its id in either case.
      expect((await owner.api.call('GET', `${W}/${id.toLowerCase()}`)).status).toBe(200);
    });

    it('when the id is no ULID, or no workflow has it, then 404 workflow_not_found on every route', async () => {
      const { api } = await tenant();
      for (const id of ['not-a-ulid', ulid()])
        for (const [method, path, body] of routes(id).slice(2)) {
          const reply = await api.call(method, path, body);
          expect([path, reply.status, reply.body]).toEqual([
            path,
            404,
            { detail: 'workflow_not_found' },
          ]);
          conforms(method, path.replace(id, '{workflow_id}').replace('/gate', '/{ref}'), reply);
        }
    });
  });

  describe('reads', () => {
    it('when a workflow has ended, then its status, node detail and result tell how each node ended', async () => {
      const { api, tenantId } = await tenant();
      const id = await stored(tenantId);
      const [t1, t2, t3] = [ulid(), ulid(), ulid()];
      await setStates(id, 'failed', {
        build: { state: 'succeeded', exit_code: 0, output: { rows: 3 }, attempts: [t1] },
        test: { state: 'failed', exit_code: 3, attempts: [t2, t3] },
        gate: { state: 'skipped' },
      });

      const status = await api.call<Record<string, unknown>>('GET', `${W}/${id}`);
      conforms('GET', `${W}/{workflow_id}`, status);
      expect(status.body).toMatchObject({
        state: 'failed',
        started_at: '2030-01-01T00:00:00.000Z',
        finished_at: '2030-01-01T00:01:30.500Z',
        nodes: [
          {
            ref: 'build',
            type: 'container',
            state: 'succeeded',
            attempt: 1,
            current_track_id: t1,
            exit_code: 0,
          },
          {
            ref: 'test',
            type: 'container',
            state: 'failed',
            attempt: 2,
            current_track_id: t3,
            exit_code: 3,
          },
          {
            ref: 'gate',
            type: 'approval',
            state: 'skipped',
            attempt: 0,
            current_track_id: null,
            exit_code: null,
          },
        ],
      });

      const node = await api.call('GET', `${W}/${id}/nodes/test`);
      conforms('GET', `${W}/{workflow_id}/nodes/{ref}`, node);
      expect(node.body).toEqual({
        ref: 'test',
        type: 'container',
        state: 'failed',
        attempt: 2,
        attempts: [t2, t3],
        current_track_id: t3,
        exit_code: 3,
        output: null,
        started_at: '2030-01-01T00:00:01.000Z',
        finished_at: null,
      });
      const missing = await api.call('GET', `${W}/${id}/nodes/nope`);
      expect(missing).toMatchObject({ status: 404, body: { detail: 'node_not_found' } });
      conforms('GET', `${W}/{workflow_id}/nodes/{ref}`, missing);

      const result = await api.call('GET', `${W}/${id}/result`);
      conforms('GET', `${W}/{workflow_id}/result`, result);
      expect(result.body).toEqual({
        workflow_id: id,
        state: 'failed',
        duration_seconds: 90.5,
        nodes: [
          {
            ref: 'build',
            final_state: 'succeeded',
            exit_code: 0,
            attempts: 1,
            output: { rows: 3 },
          },
          { ref: 'test', final_state: 'failed', exit_code: 3, attempts: 2, output: null },
          { ref: 'gate', final_state: 'skipped', exit_code: null, attempts: 0, output: null },
        ],
        failed_nodes: ['test'],
      });
    });

    it.each(['pending', 'running', 'paused'] as const)(
      'when the workflow is %s, then its result is 409 not_terminal',
      async (state) => {
        const { api, tenantId } = await tenant();
        const id = await stored(tenantId);
        await setStates(id, state, {});
        const reply = await api.call('GET', `${W}/${id}/result`);
        expect(reply).toMatchObject({ status: 409, body: { detail: 'not_terminal' } });
        conforms('GET', `${W}/{workflow_id}/result`, reply);
      },
    );

    it('when the list is filtered by state, tag and template and paged, then it returns the matching workflows newest first', async () => {
      const { api, tenantId } = await tenant();
      const a = await stored(tenantId, { tags: ['x'] });
      const b = await stored(tenantId, { tags: ['x', 'y'], templateId: 'tpl-1' });
      const c = await stored(tenantId, { tags: ['y'] });
      await setStates(a, 'succeeded', {});
      await setStates(b, 'failed', {});
      const ids = async (query: string) => {
        const reply = await api.call<{ workflows: { workflow_id: string }[] }>(
          'GET',
          `${W}${query}`,
        );
        conforms('GET', W, reply);
        return reply.body.workflows.map((w) => w.workflow_id);
      };
      expect(await ids('')).toEqual([c, b, a]);
      expect(await ids('?tag=x')).toEqual([b, a]);
      expect(await ids('?state_filter=pending')).toEqual([c]);
      expect(await ids('?state_filter=succeeded,failed&tag=y')).toEqual([b]);
      expect(await ids('?template_id=tpl-1')).toEqual([b]);
      expect(await ids('?limit=1&offset=1')).toEqual([b]);
      expect(await ids('?limit=1000&offset=3')).toEqual([]);
      const page = await api.call('GET', W);
      expect(page.body).toMatchObject({ limit: 50, offset: 0 });
      expect(Object.keys((page.body.workflows as Node[])[0]!)).not.toContain('nodes');
    });

    it('when the list is asked past its bounds or with an unknown parameter, then 422 and 400 naming the supported set', async () => {
      const { api } = await tenant();
      for (const query of ['limit=1001', 'limit=0', 'offset=-1', 'state_filter=sleeping'])
        conforms('GET', W, await api.call('GET', `${W}?${query}`));
      expect((await api.call('GET', `${W}?limit=1001`)).status).toBe(422);
      expect((await api.call('GET', `${W}?state_filter=pending,sleeping`)).status).toBe(422);
      const unknown = await api.call('GET', `${W}?state=pending`);
      expect(unknown).toMatchObject({
        status: 400,
        body: {
          detail:
            'unknown query parameter(s): state; supported: state_filter, tag, template_id, limit, offset',
        },
      });
      conforms('GET', W, unknown);
    });

    it('when events are read from 0 and again past the highest id seen, then each comes once, oldest first, ids integers', async () => {
      const { api, tenantId } = await tenant();
      const id = await stored(tenantId);
      const change = (nodeRef: string | null, to: WorkflowState | NodeState, detail = {}) =>
        insertWorkflowEvent(h.pool, {
          eventId: ulid(),
          workflowId: id,
          tenantId,
          nodeRef,
          from: null,
          to,
          detail,
        });
      await change(null, 'running');
      await change('build', 'running', { attempt: 1 });
      await change('build', 'succeeded', { has_output: true });
      await change('test', 'running', { attempt: 1 });
      type Events = { id: number; node_ref: string | null; to_state: string }[];
      const feed = async (query = '') => {
        const reply = await api.call<Events>('GET', `${W}/${id}/events${query}`);
        conforms('GET', `${W}/{workflow_id}/events`, reply);
        return reply.body;
      };
      const all = await feed();
      expect(all.map((e) => [e.node_ref, e.to_state])).toEqual([
        [null, 'pending'],
        [null, 'running'],
        ['build', 'running'],
        ['build', 'succeeded'],
        ['test', 'running'],
      ]);
      expect(all.every((e) => Number.isInteger(e.id))).toBe(true);
      expect(all[3]).toMatchObject({ kind: 'node', workflow_id: id, detail: { has_output: true } });
      expect(await feed(`?since=${all[1]!.id}&limit=2`)).toEqual(all.slice(2, 4));
      expect(await feed(`?since=${all[4]!.id}`)).toEqual([]);
      expect(await feed('?limit=1000')).toEqual(all);
      for (const query of ['?limit=1001', '?limit=0', '?since=-1', '?cursor=1'])
        conforms(
          'GET',
          `${W}/{workflow_id}/events`,
          await api.call('GET', `${W}/${id}/events${query}`),
        );
    });

    it("when a run is a workflow node's, then its status names the workflow and the node; a plain run's, null", async () => {
      const { api, tenantId } = await tenant(ALL_RUN_PERMISSIONS);
      const run = await api.submit({ image: IMAGE, scheduled_start: '2999-01-01T00:00:00Z' });
      const trackId = run.body.track_id;
      runExecutions.push(`run/${trackId}`);
      expect((await api.status(trackId)).body).toMatchObject({ workflow_id: null, node_ref: null });
      const workflowId = await stored(tenantId);
      await h.pool.query(sql.unsafe`
        UPDATE runs.runs SET workflow_id = ${workflowId}, node_ref = 'build'
        WHERE track_id = ${trackId}`);
      expect((await api.status(trackId)).body).toMatchObject({
        workflow_id: workflowId,
        node_ref: 'build',
      });
      const listed = await api.call<{ runs: Node[] }>('GET', '/api/v1/runs');
      expect(listed.body.runs[0]).toMatchObject({ workflow_id: workflowId, node_ref: 'build' });
    });
  });

  describe('control', () => {
    it('when approve or reject names a container node, then 409 not_an_approval_node; an unknown ref is 404 node_not_found', async () => {
      const { api, tenantId } = await tenant();
      const id = await stored(tenantId);
      for (const action of ['approve', 'reject']) {
        const refused = await api.call('POST', `${W}/${id}/nodes/build/${action}`);
        expect(refused).toMatchObject({ status: 409, body: { detail: 'not_an_approval_node' } });
        conforms('POST', `${W}/{workflow_id}/nodes/{ref}/${action}`, refused);
        const missing = await api.call('POST', `${W}/${id}/nodes/nope/${action}`);
        expect(missing).toMatchObject({ status: 404, body: { detail: 'node_not_found' } });
      }
      const missing = await api.call('POST', `${W}/${id}/nodes/nope/retry`);
      expect(missing).toMatchObject({ status: 404, body: { detail: 'node_not_found' } });
    });

    it('when a node retry names an active node, then 409 node_not_terminal; a finished node of an active workflow, 409 not_terminal', async () => {
      const { api, tenantId } = await tenant();
      const id = await stored(tenantId);
      await setStates(id, 'running', { build: { state: 'succeeded' }, test: { state: 'running' } });
      const active = await api.call('POST', `${W}/${id}/nodes/test/retry`);
      expect(active).toMatchObject({ status: 409, body: { detail: 'node_not_terminal' } });
      conforms('POST', `${W}/{workflow_id}/nodes/{ref}/retry`, active);
      const running = await api.call('POST', `${W}/${id}/nodes/build/retry`);
      expect(running).toMatchObject({ status: 409, body: { detail: 'not_terminal' } });
      const audit = await h.pool.any(sql.unsafe`
        SELECT action, target, detail->>'reason' AS reason FROM runs.audit_records
        WHERE tenant_id = ${tenantId} AND outcome = 'refused' ORDER BY audit_id`);
      expect(audit).toEqual([
        { action: 'workflow.node.retry', target: id, reason: 'node_not_terminal' },
        { action: 'workflow.node.retry', target: id, reason: 'not_terminal' },
      ]);
    });

    it('when the workflow has ended, then pause, resume, cancel, approve and reject are each refused with their 409', async () => {
      const { api, tenantId } = await tenant();
      const id = await stored(tenantId);
      await setStates(id, 'cancelled', {
        build: { state: 'cancelled' },
        gate: { state: 'cancelled' },
      });
      for (const [path, detail] of [
        ['pause', 'not_pausable'] as const,
        ['resume', 'not_paused'],
        ['cancel', 'already_terminal'],
        ['nodes/gate/approve', 'not_awaiting_approval'],
        ['nodes/gate/reject', 'not_awaiting_approval'],
      ]) {
        const reply = await api.call('POST', `${W}/${id}/${path}`);
        expect([path, reply.status, reply.body]).toEqual([path, 409, { detail }]);
        conforms('POST', `${W}/{workflow_id}/${path.replace('gate', '{ref}')}`, reply);
      }
    });

    it('when a pending workflow still has no execution 3 s after a control, then it is 503 workflow_unavailable with Retry-After', async () => {
      const { api, tenantId } = await tenant();
      const id = await stored(tenantId);
      const sentAt = Date.now();
      const reply = await api.call('POST', `${W}/${id}/pause`);
      expect(reply).toMatchObject({ status: 503, body: { detail: 'workflow_unavailable' } });
      expect(Date.now() - sentAt).toBeGreaterThanOrEqual(CONTROL_CATCH_UP_MS);
      expect(reply.headers.get('retry-after')).toBe('1');
      conforms('POST', `${W}/{workflow_id}/pause`, reply);
    });
  });

  it('checked a real answer of every workflow operation against the document', () => {
    // A workflow's deliveries are a webhook read, checked by webhooks-api.test.ts.
    const documented = Object.entries(openApiDocument.paths)
      .filter(([path]) => path.startsWith(W) && !path.endsWith('/deliveries'))
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    expect(documented.filter((op) => !checked.has(op))).toEqual([]);
  });
});
