/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-return -- JSON replies in tests */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { QUOTA_MCP_TOOLS } from '../../../api/quota/mcp';
import { startQuota, type QuotaClient, type QuotaHarness } from './support';
import { MCP_INITIALIZE, postMcp } from '../../support/mcp-raw';

interface Text {
  type: 'text';
  text: string;
}
interface ToolReply {
  content: Text[];
  isError?: boolean;
  _meta?: { httpStatus?: number };
}

const TOOL_NAMES = [
  'consume',
  'check',
  'refund',
  'reserve',
  'commit_reservation',
  'release_reservation',
  'get_reservation',
  'get_subject_usage',
  'get_subject_entitlements',
  'get_subject_assignment',
  'get_subject_overrides',
  'get_ledger',
  'get_usage_summary',
  'list_resources',
  'get_resource',
  'list_policies',
  'get_policy',
  'list_plans',
  'get_plan',
  'list_alert_events',
];

describe('quota: the MCP endpoint at /mcp/', () => {
  let h: QuotaHarness;
  let admin: QuotaClient;
  let adminKey: string;
  let mcp: Client;
  const clients: Client[] = [];
  const catalogue: { resource: any; policy: any; plan: any } = {} as never;
  let seq = 0;

  /** The REST reply of a call, its body as the text the service wrote. */
  async function rest(key: string | null, method: string, path: string, body?: unknown) {
    const headers: Record<string, string> = {};
    if (key !== null) headers.authorization = `Bearer ${key}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${h.service.url}${path}`, {
      method,
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: response.status, text: await response.text(), headers: response.headers };
  }

  async function connect(key: string | null, path = '/mcp/') {
    const client = new Client({ name: 'quota-mcp-test', version: '1.0.0' });
    const headers: Record<string, string> = key === null ? {} : { authorization: `Bearer ${key}` };
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${h.service.url}${path}`), {
        requestInit: { headers },
      }),
    );
    clients.push(client);
    return client;
  }

  const call = async (client: Client, name: string, args: Record<string, unknown>) =>
    (await client.callTool({ name, arguments: args })) as unknown as ToolReply;

  /** A new subject on the plan (a daily strict quota of 100 on the resource). */
  async function newSubject(prefix = 's') {
    const subject = `${prefix}-${++seq}`;
    await admin.put(`/v1/subjects/${encodeURIComponent(subject)}/assignment`, {
      plan_id: catalogue.plan.id,
    });
    return subject;
  }
  const items = (amount: number) => [{ resource: catalogue.resource.name, amount }];

  beforeAll(async () => {
    h = await startQuota();
    const tenant = await h.newTenant();
    admin = tenant.admin;
    adminKey = tenant.adminKey.key;
    catalogue.resource = (await admin.post('/v1/resources', { name: 'tokens' })).body;
    catalogue.policy = (
      await admin.post('/v1/policies', {
        name: 'daily',
        resource_id: catalogue.resource.id,
        kind: 'quota',
        limit_amount: 100,
        window_kind: 'fixed',
        window_unit: 'day',
        enforcement_mode: 'strict',
      })
    ).body;
    catalogue.plan = (
      await admin.post('/v1/plans', { name: 'basic', policy_ids: [catalogue.policy.id] })
    ).body;
    mcp = await connect(adminKey);
  });
  afterAll(async () => {
    for (const client of clients) await client.close();
    await h.close();
  });

  it('lists every tool with the input schema generated from its route', async () => {
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOL_NAMES);
    for (const tool of tools) {
      const declared = QUOTA_MCP_TOOLS.find((t) => t.name === tool.name)!;
      expect(tool.inputSchema).toEqual(declared.inputSchema);
      expect(tool.description).toContain(`REST: ${declared.operation.method.toUpperCase()}`);
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(byName.consume).toMatchObject({
      description: expect.stringContaining('Requires scope `consume`'),
      inputSchema: {
        type: 'object',
        required: ['subject', 'items'],
        properties: { items: { maxItems: 50, items: { $ref: '#/$defs/ConsumeItem' } } },
        $defs: { ConsumeItem: { required: ['resource', 'amount'] } },
      },
      annotations: { readOnlyHint: false, idempotentHint: false, destructiveHint: false },
    });
    expect(byName.commit_reservation).toMatchObject({
      inputSchema: { required: ['reservation_id'] },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    });
    expect(byName.get_ledger).toMatchObject({
      inputSchema: { properties: { limit: { maximum: 500, default: 100 } } },
      annotations: { readOnlyHint: true },
    });
  });

  it('spends as REST does: a keyed REST retry of a tool call answers the same decision', async () => {
    const subject = await newSubject();
    const spend = async (tool: string, path: string, body: Record<string, unknown>) => {
      const result = await call(mcp, tool, body);
      expect(result.isError).toBeUndefined();
      const replay = await rest(adminKey, 'POST', path, body);
      expect(result._meta?.httpStatus).toBe(replay.status);
      expect(JSON.parse(result.content[0]!.text)).toEqual(JSON.parse(replay.text));
      return JSON.parse(result.content[0]!.text);
    };
    const consumed = await spend('consume', '/v1/consume', {
      subject,
      items: items(30),
      idempotency_key: 'mcp-consume-1',
    });
    expect(consumed).toMatchObject({ allowed: true, event_id: expect.stringMatching(/^evt_/) });
    await spend('refund', '/v1/refund', {
      subject,
      items: items(5),
      idempotency_key: 'mcp-refund-1',
    });
    const held = await spend('reserve', '/v1/reserve', {
      subject,
      items: items(20),
      idempotency_key: 'mcp-reserve-1',
    });
    expect(held).toMatchObject({ allowed: true, status: 'held' });
    const id = held.reservation_id as string;
    const committed = await call(mcp, 'commit_reservation', {
      reservation_id: id,
      actuals: items(12),
      idempotency_key: 'mcp-commit-1',
    });
    const commitReplay = await rest(adminKey, 'POST', `/v1/reservations/${id}/commit`, {
      actuals: items(12),
      idempotency_key: 'mcp-commit-1',
    });
    expect(JSON.parse(committed.content[0]!.text)).toEqual(JSON.parse(commitReplay.text));
    expect(JSON.parse(committed.content[0]!.text)).toMatchObject({ status: 'committed' });

    const other = (await admin.post('/v1/reserve', { subject, items: items(1) })).body;
    const released = await call(mcp, 'release_reservation', {
      reservation_id: other.reservation_id,
    });
    // Releasing a released reservation answers it as it is.
    const again = await rest(
      adminKey,
      'POST',
      `/v1/reservations/${other.reservation_id}/release`,
      {},
    );
    expect(released.content[0]!.text).toBe(again.text);
    expect(JSON.parse(released.content[0]!.text)).toMatchObject({ status: 'released' });

    // Usage moved as the calls say: 30 - 5 + 12 (the commit) = 37.
    const usage = (await admin.get(`/v1/subjects/${subject}/usage`)).body;
    expect(usage.usage[0].used).toBe(37);
    // A check spends nothing, so each is decided anew: its retry_after_seconds counts down to the
    // window's end and may have moved by a second between the two calls; the rest is the same.
    const checked = await call(mcp, 'check', { subject, items: items(64) });
    const asRest = await rest(adminKey, 'POST', '/v1/check', { subject, items: items(64) });
    const retryAfter = /"retry_after_seconds":(\d+)/g;
    const seconds = (text: string) => [...text.matchAll(retryAfter)].map((m) => Number(m[1]));
    const [mcpSeconds, restSeconds] = [seconds(checked.content[0]!.text), seconds(asRest.text)];
    expect(mcpSeconds.length).toBeGreaterThan(0);
    mcpSeconds.forEach((value, i) => expect(restSeconds[i]! - value).toBeGreaterThanOrEqual(-1));
    mcpSeconds.forEach((value, i) => expect(restSeconds[i]! - value).toBeLessThanOrEqual(0));
    const sameBut = (text: string) => text.replace(retryAfter, '"retry_after_seconds":0');
    expect(sameBut(checked.content[0]!.text)).toBe(sameBut(asRest.text));
    expect(JSON.parse(checked.content[0]!.text)).toMatchObject({ allowed: false });
  });

  it('reads exactly what REST answers', async () => {
    const subject = await newSubject();
    await admin.put(`/v1/subjects/${subject}/overrides`, {
      overrides: [{ policy_id: catalogue.policy.id, limit_amount: 50 }],
    });
    await admin.post('/v1/consume', { subject, items: items(7) });
    const reservation = (await admin.post('/v1/reserve', { subject, items: items(3) })).body;
    const reads: [string, Record<string, unknown>, string][] = [
      [
        'get_reservation',
        { reservation_id: reservation.reservation_id },
        `/v1/reservations/${reservation.reservation_id}`,
      ],
      ['get_subject_usage', { subject }, `/v1/subjects/${subject}/usage`],
      ['get_subject_entitlements', { subject }, `/v1/subjects/${subject}/entitlements`],
      ['get_subject_assignment', { subject }, `/v1/subjects/${subject}/assignment`],
      ['get_subject_overrides', { subject }, `/v1/subjects/${subject}/overrides`],
      ['get_ledger', { subject, limit: 1 }, `/v1/ledger?subject=${subject}&limit=1`],
      [
        'get_usage_summary',
        { subject, granularity: 'hour' },
        `/v1/usage/summary?subject=${subject}&granularity=hour`,
      ],
      ['list_resources', {}, '/v1/resources'],
      [
        'get_resource',
        { resource_id: catalogue.resource.id },
        `/v1/resources/${catalogue.resource.id}`,
      ],
      ['list_policies', {}, '/v1/policies'],
      ['get_policy', { policy_id: catalogue.policy.id }, `/v1/policies/${catalogue.policy.id}`],
      ['list_plans', {}, '/v1/plans'],
      ['get_plan', { plan_id: catalogue.plan.id }, `/v1/plans/${catalogue.plan.id}`],
      ['list_alert_events', { subject, limit: 5 }, `/v1/alert-events?subject=${subject}&limit=5`],
    ];
    for (const [tool, args, path] of reads) {
      const result = await call(mcp, tool, args);
      const expected = await rest(adminKey, 'GET', path);
      expect({ tool, status: expected.status }).toEqual({ tool, status: 200 });
      expect({ tool, result }).toEqual({
        tool,
        result: { content: [{ type: 'text', text: expected.text }], _meta: { httpStatus: 200 } },
      });
    }
    const page = JSON.parse(
      (await call(mcp, 'get_ledger', { subject, limit: 1 })).content[0]!.text,
    );
    expect(page).toMatchObject({
      entries: [{ subject, amount: 7 }],
      next_cursor: expect.any(String),
    });
    // A subject with a slash travels percent-encoded in the path.
    const slashed = await newSubject('team/x');
    expect((await call(mcp, 'get_subject_assignment', { subject: slashed })).content[0]!.text).toBe(
      (await rest(adminKey, 'GET', `/v1/subjects/${encodeURIComponent(slashed)}/assignment`)).text,
    );
  });

  /** The tool error of a call and the REST refusal of the same call, side by side. */
  async function refusedAlike(
    client: Client,
    key: string,
    tool: string,
    args: Record<string, unknown>,
    request: [string, string, unknown?],
  ) {
    const result = await call(client, tool, args);
    const expected = await rest(key, ...request);
    expect(expected.status).toBeGreaterThanOrEqual(400);
    expect(result.isError).toBe(true);
    expect(result._meta?.httpStatus).toBe(expected.status);
    expect(result.content[0]!.text).toBe(expected.text);
    expect(result.content[1]!.text).toContain(`HTTP ${expected.status}`);
    return {
      body: JSON.parse(expected.text),
      status: result.content[1]!.text,
      headers: expected.headers,
    };
  }

  it("refuses a call outside the key's scope as REST does, naming the scope", async () => {
    const subject = await newSubject();
    const key = (await admin.post('/v1/api-keys', { scopes: ['check'], actor: 'checker' })).body
      .key as string;
    const client = await connect(key);
    const body = { subject, items: items(1) };
    const refused = await refusedAlike(client, key, 'consume', body, ['POST', '/v1/consume', body]);
    expect(refused.body).toEqual({ detail: 'insufficient_scope' });
    expect(refused.status).toMatch(/^HTTP 403 Forbidden/);
    // The headers a client acts on travel in the status line (none here today but the status).
    const challenge = refused.headers.get('www-authenticate');
    if (challenge) expect(refused.status).toContain(challenge);
    // What the scope allows goes through.
    expect((await call(client, 'check', body)).isError).toBeUndefined();
  });

  it("refuses a subject outside the key's subject_prefix as REST does", async () => {
    const inside = await newSubject('team-a/');
    const outside = await newSubject('team-b/');
    const key = (
      await admin.post('/v1/api-keys', {
        scopes: ['consume', 'usage:read'],
        actor: 'team-a',
        constraints: { subject_prefix: 'team-a/' },
      })
    ).body.key as string;
    const client = await connect(key);
    const body = { subject: outside, items: items(1) };
    const refused = await refusedAlike(client, key, 'consume', body, ['POST', '/v1/consume', body]);
    expect(refused.body).toEqual({ detail: 'constraint_violation' });
    await refusedAlike(client, key, 'get_subject_usage', { subject: outside }, [
      'GET',
      `/v1/subjects/${encodeURIComponent(outside)}/usage`,
    ]);
    expect((await call(client, 'consume', { subject: inside, items: items(1) })).isError).toBe(
      undefined,
    );
  });

  it("does not find another tenant's reservation, as REST does not", async () => {
    const subject = await newSubject();
    const reservation = (await admin.post('/v1/reserve', { subject, items: items(1) })).body;
    const other = await h.newTenant();
    const client = await connect(other.adminKey.key);
    const id = reservation.reservation_id as string;
    const refused = await refusedAlike(
      client,
      other.adminKey.key,
      'get_reservation',
      {
        reservation_id: id,
      },
      ['GET', `/v1/reservations/${id}`],
    );
    expect(refused.body).toEqual({ detail: 'reservation_not_found' });
    await refusedAlike(client, other.adminKey.key, 'release_reservation', { reservation_id: id }, [
      'POST',
      `/v1/reservations/${id}/release`,
      {},
    ]);
    // Still held for its own tenant.
    expect((await admin.get(`/v1/reservations/${id}`)).body.status).toBe('held');
  });

  it('answers bad arguments with the REST 422 and its validation detail', async () => {
    const subject = await newSubject();
    const body = { subject, items: [], unknown_field: 1 };
    const refused = await refusedAlike(mcp, adminKey, 'consume', body, [
      'POST',
      '/v1/consume',
      body,
    ]);
    expect(refused.body.detail).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ loc: ['body', 'items'], type: 'array.min' }),
        expect.objectContaining({ loc: ['body', 'unknown_field'], type: 'object.unknown' }),
      ]),
    );
    const query = await refusedAlike(mcp, adminKey, 'get_ledger', { limit: 0 }, [
      'GET',
      '/v1/ledger?limit=0',
    ]);
    expect(query.body.detail).toEqual([expect.objectContaining({ loc: ['query', 'limit'] })]);
    const missing = await call(mcp, 'get_reservation', {});
    expect(missing).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: expect.stringContaining('reservation_id') }],
    });
  });

  it('needs a valid key before any MCP handling: 401 in the service envelope', async () => {
    for (const authorization of [null, 'Bearer qk_nope_nope']) {
      const response = await postMcp(`${h.service.url}/mcp/`, authorization, MCP_INITIALIZE);
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      expect(await response.json()).toEqual({ detail: 'unauthorized' });
    }
    await expect(connect(null)).rejects.toMatchObject({ code: 401 });
    // An operator key has no tenant: none of the tools is its.
    const operator = await rest(h.operatorKey, 'POST', '/mcp/', MCP_INITIALIZE);
    expect({ status: operator.status, body: JSON.parse(operator.text) }).toEqual({
      status: 403,
      body: { detail: 'tenant_key_required' },
    });
  });

  it('is stateless streamable HTTP: JSON answers, no session, GET 405, /mcp too', async () => {
    const raw = await postMcp(`${h.service.url}/mcp`, `Bearer ${adminKey}`, {
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/list',
    });
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-type')).toContain('application/json');
    expect(raw.headers.get('mcp-session-id')).toBeNull();
    const listed = (await raw.json()) as { id: number; result: { tools: unknown[] } };
    expect(listed.id).toBe(7);
    expect(listed.result.tools).toHaveLength(TOOL_NAMES.length);
    const slashless = await connect(adminKey, '/mcp');
    expect((await slashless.listTools()).tools).toHaveLength(TOOL_NAMES.length);
    for (const method of ['GET', 'DELETE']) {
      const answer = await rest(adminKey, method, '/mcp/');
      expect({ status: answer.status, allow: answer.headers.get('allow') }).toEqual({
        status: 405,
        allow: 'POST',
      });
    }
  });
});
