/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-call -- JSON replies in tests */
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Client as TemporalClient } from '@temporalio/client';
import { createTemporalClient } from '../../../platform/temporal';
import { LLMS_TXT } from '../../../api/runs/llms';
import { permissionsOf, RUNS_MCP_TOOLS } from '../../../api/runs/mcp';
import { dagWorkflowId } from '../../../contracts/runs/dag';
import { runWorkflowId } from '../../../contracts/runs/run';
import { eventually } from '../../support/services';
import { runsConformance } from './conformance';
import { IMAGE, config, newTenant, startHarness, type Harness } from './support';
import { MCP_INITIALIZE, postMcp } from '../../support/mcp-raw';
import { PERMISSIONS } from '../../../db/runs/permissions';

interface Text {
  type: 'text';
  text: string;
}
interface ToolReply {
  content: Text[];
  isError?: boolean;
  _meta?: { httpStatus?: number };
}
interface RestReply {
  status: number;
  text: string;
  headers: Headers;
}
type Args = Record<string, unknown>;

// The permissions of every tool (timers and webhooks have none).
const ALL_PERMISSIONS = PERMISSIONS.filter((p) => !/^svc_(timer|webhook)_/.test(p)).join(',');
const R = '/api/v1/runs';
const W = '/api/v1/workflows';
const T = '/api/v1/templates';
const TERMINAL_RUN = ['exited', 'failed', 'timeout', 'killed'];
const TERMINAL_WORKFLOW = ['succeeded', 'failed', 'cancelled'];
/** Prints a line, then stops cleanly on SIGTERM (sh as PID 1 handles a trapped signal). */
const LOOP = 'echo hello; echo oops >&2; trap "echo bye; exit 0" TERM; while :; do sleep 1; done';

/**
 * The runs service's MCP endpoint against the running service, with the SDK's own client: every
 * tool's result is the REST answer of the same call (reads compared exactly on the same resource;
 * creations and changes on a twin made by REST, then read back), refusals included.
 */
describe('runs: the MCP endpoint at /mcp', () => {
  let h: Harness;
  let temporal: TemporalClient;
  let key: string;
  let mcp: Client;
  const clients: Client[] = [];
  const workflows: string[] = [];
  const runs: string[] = [];
  const tag = `mcp-${randomBytes(4).toString('hex')}`;
  const { conforms } = runsConformance();

  async function rest(who: string | null, method: string, path: string, body?: unknown) {
    const headers: Record<string, string> = {};
    if (who !== null) headers.authorization = `Bearer ${who}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${h.service.url}${path}`, {
      method,
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: response.status, text: await response.text(), headers: response.headers };
  }
  const json = (reply: RestReply) => (reply.text === '' ? null : JSON.parse(reply.text));

  async function connect(who: string | null, path = '/mcp') {
    const client = new Client({ name: 'runs-mcp-test', version: '1.0.0' });
    const headers: Record<string, string> = who === null ? {} : { authorization: `Bearer ${who}` };
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${h.service.url}${path}`), {
        requestInit: { headers },
      }),
    );
    clients.push(client);
    return client;
  }
  const call = async (client: Client, name: string, args: Args) =>
    (await client.callTool({ name, arguments: args })) as unknown as ToolReply;

  /** The tool result of a REST reply, as the endpoint must answer it. */
  const resultOf = (reply: RestReply) => {
    const refused = reply.status >= 400;
    return {
      ...(reply.text !== '' ? { body: reply.text } : {}),
      status: reply.status,
      isError: refused || undefined,
    };
  };
  const seen = (result: ToolReply) => ({
    ...(result._meta?.httpStatus === 204 ? {} : { body: result.content[0]!.text }),
    status: result._meta?.httpStatus,
    isError: result.isError,
  });

  /** A read: the tool's result is the REST reply of the same call, exactly. */
  async function sameAsRest(
    tool: string,
    args: Args,
    request: [string, string, unknown?],
    who: { client: Client; key: string } = { client: mcp, key },
  ) {
    const result = await call(who.client, tool, args);
    const expected = await rest(who.key, ...request);
    expect({ tool, result: seen(result) }).toEqual({ tool, result: resultOf(expected) });
    if (expected.status >= 400)
      expect(result.content[1]!.text).toContain(`HTTP ${expected.status}`);
    return expected;
  }

  /** A change: the tool on one resource, REST on its twin; the same answer, ids masked. */
  async function twinned(
    tool: string,
    args: Args,
    request: [string, string, unknown?],
    mask: (body: any) => any = (body) => body,
  ) {
    const result = await call(mcp, tool, args);
    const expected = await rest(key, ...request);
    const parse = (text: string | undefined) => (text ? mask(JSON.parse(text)) : null);
    expect({
      tool,
      status: result._meta?.httpStatus,
      isError: result.isError,
      body: result._meta?.httpStatus === 204 ? null : parse(result.content[0]!.text),
    }).toEqual({
      tool,
      status: expected.status,
      isError: expected.status >= 400 || undefined,
      body: parse(expected.text),
    });
    // A 204 has no body: the tool's one content item is its status line.
    if (expected.status === 204)
      expect(result.content).toEqual([{ type: 'text', text: 'HTTP 204 No Content' }]);
    const raw = result._meta?.httpStatus === 204 ? null : JSON.parse(result.content[0]!.text);
    return { mcp: raw, rest: json(expected) };
  }

  const runState = async (id: string) => json(await rest(key, 'GET', `${R}/${id}`)).state;
  const waitRun = (id: string, states: string[]) =>
    eventually(
      async () => ((s) => (states.includes(s) ? s : undefined))(await runState(id)),
      60_000,
      200,
    );
  const workflow = async (id: string) => json(await rest(key, 'GET', `${W}/${id}`));
  const waitNode = (id: string, ref: string, state: string) =>
    eventually(
      async () =>
        (await workflow(id)).nodes.find((n: any) => n.ref === ref)?.state === state
          ? true
          : undefined,
      30_000,
      200,
    );
  const waitWorkflow = (id: string, states: string[]) =>
    eventually(
      async () => ((s) => (states.includes(s) ? s : undefined))((await workflow(id)).state),
      30_000,
      200,
    );

  beforeAll(async () => {
    h = await startHarness();
    temporal = createTemporalClient(config);
    key = (await newTenant(h.pool, { permissions: ALL_PERMISSIONS })).key;
    mcp = await connect(key);
  });
  afterAll(async () => {
    for (const client of clients) await client.close();
    await h?.close();
    await Promise.all(
      [...workflows.map(dagWorkflowId), ...runs.map(runWorkflowId)].map((id) =>
        temporal.workflow
          .getHandle(id)
          .terminate('the MCP test is over')
          .catch(() => undefined),
      ),
    );
    await temporal?.connection.close();
  });

  it('lists every tool with the input schema generated from its route', async () => {
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name)).toEqual(RUNS_MCP_TOOLS.map((t) => t.name));
    expect(tools.length).toBeGreaterThanOrEqual(25);
    for (const tool of tools) {
      const declared = RUNS_MCP_TOOLS.find((t) => t.name === tool.name)!;
      const { operation } = declared;
      expect({ name: tool.name, schema: tool.inputSchema }).toEqual({
        name: tool.name,
        schema: declared.inputSchema,
      });
      expect(tool.annotations).toEqual(declared.annotations);
      expect(tool.description).toContain(
        `REST: ${operation.method.toUpperCase()} ${operation.path}.`,
      );
      for (const permission of permissionsOf(operation))
        expect(tool.description).toContain(`\`${permission}\``);
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(byName.submit_run).toMatchObject({
      inputSchema: { required: ['image'], additionalProperties: false },
      annotations: { readOnlyHint: false, idempotentHint: false },
    });
    expect(byName.get_run_logs).toMatchObject({
      inputSchema: {
        required: ['track_id'],
        properties: { stream: { enum: ['stdout', 'stderr', 'both'] }, limit: { maximum: 1000 } },
      },
      annotations: { readOnlyHint: true },
    });
    expect(byName.run_template!.description).toContain(
      'Requires permissions `svc_template_run` and `svc_workflow_submit`.',
    );
  });

  it('runs: submit, controls and reads answer as REST does', async () => {
    const body = { image: IMAGE, command: ['sh', '-c', LOOP], name: 'looper', tags: [tag] };
    const maskRun = (b: any) => ({ ...b, track_id: 'ID', eligible_start: 'T' });
    // Submit through MCP and a twin through REST: the same answer but the id and instant.
    const submitted = await twinned('submit_run', body, ['POST', R, body], maskRun);
    const [viaMcp, twin] = [submitted.mcp.track_id as string, submitted.rest.track_id as string];
    // Two runs killed: one by the tool, one by REST.
    const sleeper = { image: IMAGE, command: ['sleep', '60'], tags: [tag] };
    const killed = await twinned('submit_run', sleeper, ['POST', R, sleeper], maskRun);
    runs.push(viaMcp, twin, killed.mcp.track_id, killed.rest.track_id);
    await Promise.all(runs.map((id) => waitRun(id, ['running'])));

    // Controls: the tool on the MCP run, REST on its twin, the same answers and states.
    for (const action of ['pause', 'resume'] as const) {
      await twinned(`${action}_run`, { track_id: viaMcp }, ['POST', `${R}/${twin}/${action}`]);
      expect([await runState(viaMcp), await runState(twin)]).toEqual(
        action === 'pause' ? ['paused', 'paused'] : ['running', 'running'],
      );
      // A repeat is refused alike: 409 with the REST detail.
      const again = await sameAsRest(`${action}_run`, { track_id: viaMcp }, [
        'POST',
        `${R}/${viaMcp}/${action}`,
      ]);
      expect([again.status, json(again)]).toEqual([
        409,
        { detail: action === 'pause' ? 'not_running' : 'not_paused' },
      ]);
    }
    await twinned('kill_run', { track_id: killed.mcp.track_id }, [
      'POST',
      `${R}/${killed.rest.track_id}/kill`,
    ]);
    await twinned('stop_run', { track_id: viaMcp }, ['POST', `${R}/${twin}/stop`]);
    expect(
      await Promise.all([
        waitRun(viaMcp, TERMINAL_RUN),
        waitRun(twin, TERMINAL_RUN),
        waitRun(killed.mcp.track_id, TERMINAL_RUN),
        waitRun(killed.rest.track_id, TERMINAL_RUN),
      ]),
    ).toEqual(['exited', 'exited', 'killed', 'killed']);

    // Reads of the same run: exactly the REST body.
    const reads: [string, Args, string][] = [
      ['get_run', { track_id: viaMcp }, `${R}/${viaMcp}`],
      ['get_run_result', { track_id: viaMcp }, `${R}/${viaMcp}/result`],
      ['get_run_logs', { track_id: viaMcp }, `${R}/${viaMcp}/logs`],
      [
        'get_run_logs',
        { track_id: viaMcp, stream: 'stdout', since: 0, limit: 1 },
        `${R}/${viaMcp}/logs?stream=stdout&since=0&limit=1`,
      ],
      ['get_run_utilization', { track_id: viaMcp }, `${R}/${viaMcp}/utilization`],
      ['list_runs', { tag, limit: 3 }, `${R}?tag=${tag}&limit=3`],
      ['list_runs', { tag, state_filter: 'killed' }, `${R}?tag=${tag}&state_filter=killed`],
    ];
    for (const [tool, args, path] of reads) {
      const reply = await sameAsRest(tool, args, ['GET', path]);
      expect({ tool, status: reply.status }).toEqual({ tool, status: 200 });
    }
    const logs = JSON.parse(
      (await call(mcp, 'get_run_logs', { track_id: viaMcp, stream: 'stdout' })).content[0]!.text,
    );
    expect(logs.lines).toEqual(expect.arrayContaining(['hello', 'bye']));
    // A terminal run's controls are refused alike.
    await sameAsRest('kill_run', { track_id: viaMcp }, ['POST', `${R}/${viaMcp}/kill`]);

    // Delete: the tool on one run, REST on its twin; then both are gone alike.
    await twinned('delete_run', { track_id: viaMcp }, ['DELETE', `${R}/${twin}`]);
    const gone = await sameAsRest('get_run', { track_id: viaMcp }, ['GET', `${R}/${viaMcp}`]);
    expect([gone.status, json(gone)]).toEqual([404, { detail: 'run_not_found' }]);
    expect((await rest(key, 'GET', `${R}/${twin}`)).status).toBe(404);
  });

  it('workflows: submit, gates, controls, retry and reads answer as REST does', async () => {
    // Approval gates only: nothing runs a container.
    const body = {
      name: 'gates',
      tags: [tag],
      nodes: [
        { ref: 'g1', type: 'approval' },
        { ref: 'g2', type: 'approval' },
      ],
      edges: [{ from: 'g1', to: 'g2' }],
    };
    const submitted = await twinned('submit_workflow', body, ['POST', W, body], (b) => ({
      ...b,
      workflow_id: 'ID',
    }));
    const [viaMcp, twin] = [
      submitted.mcp.workflow_id as string,
      submitted.rest.workflow_id as string,
    ];
    workflows.push(viaMcp, twin);
    const both = async (check: (id: string) => Promise<unknown>) =>
      Promise.all([check(viaMcp), check(twin)]);

    await both((id) => waitNode(id, 'g1', 'waiting_approval'));
    // The result of an active workflow is refused alike (409 not_terminal).
    const early = await sameAsRest('get_workflow_result', { workflow_id: viaMcp }, [
      'GET',
      `${W}/${viaMcp}/result`,
    ]);
    expect([early.status, json(early)]).toEqual([409, { detail: 'not_terminal' }]);

    const control = (tool: string, action: string, extra: Args = {}, ref?: string) =>
      twinned(tool, { workflow_id: viaMcp, ...extra }, [
        'POST',
        `${W}/${twin}${ref ? `/nodes/${ref}` : ''}/${action}`,
      ]);
    expect((await control('pause_workflow', 'pause')).mcp).toMatchObject({ status: 'paused' });
    await control('pause_workflow', 'pause'); // 409 not_pausable, alike
    expect((await control('resume_workflow', 'resume')).mcp).toMatchObject({ status: 'running' });
    expect((await control('approve_workflow_node', 'approve', { ref: 'g1' }, 'g1')).mcp).toEqual({
      status: 'succeeded',
      message: expect.any(String),
    });
    await both((id) => waitNode(id, 'g2', 'waiting_approval'));
    expect(
      (await control('reject_workflow_node', 'reject', { ref: 'g2' }, 'g2')).mcp,
    ).toMatchObject({ status: 'failed' });
    expect(await both((id) => waitWorkflow(id, TERMINAL_WORKFLOW))).toEqual(['failed', 'failed']);

    const reads: [string, Args, string][] = [
      ['get_workflow', { workflow_id: viaMcp }, `${W}/${viaMcp}`],
      ['get_workflow_node', { workflow_id: viaMcp, ref: 'g2' }, `${W}/${viaMcp}/nodes/g2`],
      ['get_workflow_result', { workflow_id: viaMcp }, `${W}/${viaMcp}/result`],
      ['list_workflow_events', { workflow_id: viaMcp }, `${W}/${viaMcp}/events`],
      [
        'list_workflow_events',
        { workflow_id: viaMcp, since: 1, limit: 2 },
        `${W}/${viaMcp}/events?since=1&limit=2`,
      ],
      ['list_workflows', { tag, limit: 5 }, `${W}?tag=${tag}&limit=5`],
      [
        'list_workflows',
        { tag, state_filter: 'failed,cancelled' },
        `${W}?tag=${tag}&state_filter=failed,cancelled`,
      ],
    ];
    for (const [tool, args, path] of reads) {
      const reply = await sameAsRest(tool, args, ['GET', path]);
      expect({ tool, status: reply.status }).toEqual({ tool, status: 200 });
    }
    const node = await sameAsRest('get_workflow_node', { workflow_id: viaMcp, ref: 'nope' }, [
      'GET',
      `${W}/${viaMcp}/nodes/nope`,
    ]);
    expect(json(node)).toEqual({ detail: 'node_not_found' });

    // Retry the rejected gate: the workflow runs again; then cancel it.
    expect((await control('retry_workflow_node', 'retry', { ref: 'g2' }, 'g2')).mcp).toEqual({
      status: 'running',
      message: expect.stringContaining('g2'),
    });
    await both((id) => waitNode(id, 'g2', 'waiting_approval'));
    await control('approve_workflow_node', 'approve', { ref: 'g1' }, 'g1'); // 409 not_awaiting_approval, alike
    expect((await control('cancel_workflow', 'cancel')).mcp).toMatchObject({ status: 'cancelled' });
    await control('cancel_workflow', 'cancel'); // 409 already_terminal, alike
  });

  it('templates: register, list, get and run answer as REST does', async () => {
    const name = `tpl-${randomBytes(4).toString('hex')}`;
    const template = (n: string) => ({
      name: n,
      params: [{ name: 'who', type: 'string', required: true }],
      definition: {
        tags: [tag],
        nodes: [
          { ref: 'gate', type: 'approval' },
          { ref: 'hi', image: IMAGE, command: ['echo', '${{ who }}'] },
        ],
        edges: [{ from: 'gate', to: 'hi' }],
      },
    });
    const maskTemplate = (b: any) => ({
      ...b,
      template_id: 'ID',
      name: 'NAME',
      created_at: 'T',
      updated_at: 'T',
    });
    const made = await twinned(
      'create_template',
      template(name),
      ['POST', T, template(`${name}-twin`)],
      maskTemplate,
    );
    expect(made.mcp).toMatchObject({ version: 1 });
    // A name taken is refused alike (409 template_name_taken).
    const taken = await sameAsRest('create_template', template(name), ['POST', T, template(name)]);
    expect(json(taken)).toEqual({ detail: 'template_name_taken' });

    for (const [tool, args, path] of [
      ['get_template', { ref: name }, `${T}/${name}`],
      [
        'get_template',
        { ref: made.mcp.template_id, version: 1 },
        `${T}/${made.mcp.template_id}?version=1`,
      ],
      ['list_templates', { limit: 5 }, `${T}?limit=5`],
    ] as [string, Args, string][]) {
      const reply = await sameAsRest(tool, args, ['GET', path]);
      expect({ tool, status: reply.status }).toEqual({ tool, status: 200 });
    }
    const launched = await twinned(
      'run_template',
      { ref: name, params: { who: 'mcp' } },
      ['POST', `${T}/${name}-twin/run`, { params: { who: 'mcp' } }],
      (b) => ({ ...b, workflow_id: 'ID', template_id: 'ID' }),
    );
    workflows.push(launched.mcp.workflow_id, launched.rest.workflow_id);
    expect(launched.mcp).toMatchObject({ template_id: made.mcp.template_id, version: 1 });
    // A bad call against the declaration is the REST 422, before anything starts.
    const missing = await sameAsRest('run_template', { ref: name, params: {} }, [
      'POST',
      `${T}/${name}/run`,
      { params: {} },
    ]);
    expect([missing.status, json(missing)]).toEqual([
      422,
      { detail: 'missing_template_param:who' },
    ]);
    for (const id of [launched.mcp.workflow_id, launched.rest.workflow_id])
      expect((await rest(key, 'POST', `${W}/${id}/cancel`)).status).toBe(200);
  });

  it('quotas, usage and audit answer as REST does', async () => {
    const quotas = { max_queue_seconds: 4321, max_concurrent_workflows: 10 };
    // PUT is idempotent: the tool's answer is the answer of the same PUT made again by REST.
    await sameAsRest('put_tenant_quotas', quotas, ['PUT', '/api/v1/tenant/quotas', quotas]);
    const read = await sameAsRest('get_tenant_quotas', {}, ['GET', '/api/v1/tenant/quotas']);
    expect(json(read)).toMatchObject(quotas);
    // Usage: the same but the request rate's window, which each request (this REST one too) moves.
    const usage = await call(mcp, 'get_usage', {});
    const expected = await rest(key, 'GET', '/api/v1/usage');
    const steady = (body: any) => ({
      ...body,
      usage: body.usage.map((u: any) =>
        u.policy === 'request_rate' ? { ...u, remaining: 'N', resets_at: 'T' } : u,
      ),
    });
    expect([usage._meta?.httpStatus, usage.isError]).toEqual([200, undefined]);
    expect(steady(JSON.parse(usage.content[0]!.text))).toEqual(steady(json(expected)));
    const audit = await sameAsRest('list_audit', { limit: 5, offset: 1 }, [
      'GET',
      '/api/v1/audit?limit=5&offset=1',
    ]);
    expect(audit.status).toBe(200);
    // A bad value is the REST 422 with its joi message.
    const bad = await sameAsRest('put_tenant_quotas', { max_queue_seconds: -1 }, [
      'PUT',
      '/api/v1/tenant/quotas',
      { max_queue_seconds: -1 },
    ]);
    expect(bad.status).toBe(422);
  });

  it('refuses a call without the permission as REST does (403 permission_denied)', async () => {
    const reader = (await newTenant(h.pool, { permissions: 'svc_run_read' })).key;
    const client = await connect(reader);
    const who = { client, key: reader };
    // tools/list lists every tool whatever the key's permissions.
    expect((await client.listTools()).tools).toHaveLength(RUNS_MCP_TOOLS.length);
    const body = { image: IMAGE };
    for (const [tool, args, request] of [
      ['submit_run', body, ['POST', R, body]],
      ['list_workflows', {}, ['GET', W]],
      [
        'put_tenant_quotas',
        { retention_days: 3 },
        ['PUT', '/api/v1/tenant/quotas', { retention_days: 3 }],
      ],
      ['run_template', { ref: 'nope', params: {} }, ['POST', `${T}/nope/run`, { params: {} }]],
      ['list_templates', {}, ['GET', T]],
    ] as [string, Args, [string, string, unknown?]][]) {
      const refused = await sameAsRest(tool, args, request, who);
      expect({ tool, status: refused.status, body: json(refused) }).toEqual({
        tool,
        status: 403,
        body: { detail: 'permission_denied' },
      });
    }
    // What the key may do goes through.
    expect((await call(client, 'get_usage', {})).isError).toBeUndefined();
  });

  it("does not find another tenant's runs, workflows and templates, as REST does not", async () => {
    const run = json(await rest(key, 'POST', R, { image: IMAGE, command: ['true'], tags: [tag] }));
    runs.push(run.track_id);
    const flow = json(
      await rest(key, 'POST', W, { tags: [tag], nodes: [{ ref: 'g', type: 'approval' }] }),
    );
    workflows.push(flow.workflow_id);
    const tpl = json(
      await rest(key, 'POST', T, {
        params: [],
        definition: { nodes: [{ ref: 'g', type: 'approval' }] },
      }),
    );
    const other = (await newTenant(h.pool, { permissions: ALL_PERMISSIONS })).key;
    const who = { client: await connect(other), key: other };
    const cases: [string, Args, [string, string, unknown?], string][] = [
      ['get_run', { track_id: run.track_id }, ['GET', `${R}/${run.track_id}`], 'run_not_found'],
      [
        'get_run_logs',
        { track_id: run.track_id },
        ['GET', `${R}/${run.track_id}/logs`],
        'run_not_found',
      ],
      [
        'kill_run',
        { track_id: run.track_id },
        ['POST', `${R}/${run.track_id}/kill`],
        'run_not_found',
      ],
      [
        'delete_run',
        { track_id: run.track_id },
        ['DELETE', `${R}/${run.track_id}`],
        'run_not_found',
      ],
      [
        'get_workflow',
        { workflow_id: flow.workflow_id },
        ['GET', `${W}/${flow.workflow_id}`],
        'workflow_not_found',
      ],
      [
        'cancel_workflow',
        { workflow_id: flow.workflow_id },
        ['POST', `${W}/${flow.workflow_id}/cancel`],
        'workflow_not_found',
      ],
      [
        'approve_workflow_node',
        { workflow_id: flow.workflow_id, ref: 'g' },
        ['POST', `${W}/${flow.workflow_id}/nodes/g/approve`],
        'workflow_not_found',
      ],
      [
        'get_template',
        { ref: tpl.template_id },
        ['GET', `${T}/${tpl.template_id}`],
        'template_not_found',
      ],
      [
        'run_template',
        { ref: tpl.template_id, params: {} },
        ['POST', `${T}/${tpl.template_id}/run`, { params: {} }],
        'template_not_found',
      ],
    ];
    for (const [tool, args, request, detail] of cases) {
      const refused = await sameAsRest(tool, args, request, who);
      expect({ tool, status: refused.status, body: json(refused) }).toEqual({
        tool,
        status: 404,
        body: { detail },
      });
    }
    // Untouched for its own tenant.
    expect((await workflow(flow.workflow_id)).state).not.toBe('cancelled');
    await rest(key, 'POST', `${W}/${flow.workflow_id}/cancel`);
  });

  it('answers bad arguments with the REST refusal and its detail', async () => {
    const extra = { image: IMAGE, extra: 1 };
    const unknown = await sameAsRest('submit_run', extra, ['POST', R, extra]);
    expect(unknown.status).toBe(422);
    const image = await sameAsRest('submit_run', { image: 'nope' }, ['POST', R, { image: 'nope' }]);
    expect([image.status, json(image)]).toEqual([400, { detail: 'invalid_image:nope' }]);
    const limit = await sameAsRest('list_runs', { limit: 0 }, ['GET', `${R}?limit=0`]);
    expect(limit.status).toBe(422);
    // An argument no schema declares goes to the query, refused as REST refuses it.
    const query = await sameAsRest('list_runs', { bogus: 1 }, ['GET', `${R}?bogus=1`]);
    expect(query.status).toBe(400);
    const graph = { nodes: [{ ref: 'a', type: 'approval' }], edges: [{ from: 'a', to: 'b' }] };
    const invalid = await sameAsRest('submit_workflow', graph, ['POST', W, graph]);
    expect([invalid.status, json(invalid)]).toEqual([400, { detail: 'invalid_graph' }]);
    // A path parameter missing: a tool error naming it (no REST request can be made).
    expect(await call(mcp, 'get_run', {})).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: expect.stringContaining('track_id') }],
    });
  });

  it('needs a valid key before any MCP handling: 401 in the service envelope', async () => {
    for (const authorization of [null, 'Bearer nope', `Bearer ${crypto.randomUUID()}`]) {
      const response = await postMcp(`${h.service.url}/mcp`, authorization, MCP_INITIALIZE);
      const reply = {
        status: response.status,
        body: await response.json(),
        headers: response.headers,
      };
      expect({ status: reply.status, body: reply.body }).toEqual({
        status: 401,
        body: json(await rest(null, 'GET', R)),
      });
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      conforms('POST', '/mcp', reply);
    }
    await expect(connect(null)).rejects.toMatchObject({ code: 401 });
  });

  it('is stateless streamable HTTP: JSON answers, no session, GET 405, /mcp/ too', async () => {
    const raw = await postMcp(`${h.service.url}/mcp`, `Bearer ${key}`, {
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/list',
    });
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-type')).toContain('application/json');
    expect(raw.headers.get('mcp-session-id')).toBeNull();
    const listed = (await raw.json()) as { id: number; result: { tools: unknown[] } };
    expect(listed.id).toBe(7);
    expect(listed.result.tools).toHaveLength(RUNS_MCP_TOOLS.length);
    conforms('POST', '/mcp', { status: 200, body: listed, headers: raw.headers });
    const slashed = await connect(key, '/mcp/');
    expect((await slashed.listTools()).tools).toHaveLength(RUNS_MCP_TOOLS.length);
    for (const method of ['GET', 'DELETE']) {
      const answer = await rest(key, method, '/mcp');
      expect({ status: answer.status, allow: answer.headers.get('allow') }).toEqual({
        status: 405,
        allow: 'POST',
      });
    }
    const notAcceptable = await postMcp(
      `${h.service.url}/mcp`,
      `Bearer ${key}`,
      { jsonrpc: '2.0', id: 8, method: 'tools/list' },
      'text/html',
    );
    conforms('POST', '/mcp', {
      status: notAcceptable.status,
      body: await notAcceptable.json(),
      headers: notAcceptable.headers,
    });
    expect(notAcceptable.status).toBe(406);
  });

  it('serves /llms.txt without a key', async () => {
    const response = await fetch(`${h.service.url}/llms.txt`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await response.text()).toBe(LLMS_TXT);
  });
});
