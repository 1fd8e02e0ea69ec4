import { ulid } from 'ulid';
import type { Client } from '@temporalio/client';
import { sql } from '../../../db/pool';
import type { KeyPrincipal } from '../../../db/runs/tenants';
import { openApiDocument } from '../../../api/runs/openapi';
import { runAdmin } from '../../../cli/runs';
import { createTemporalClient } from '../../../platform/temporal';
import { patchEndpoint } from '../../../services/runs/webhooks/endpoints';
import type { DeliveryStarter } from '../../../services/runs/webhooks/starter';
import { runWorkflowId } from '../../../contracts/runs/run';
import { dagWorkflowId } from '../../../contracts/runs/dag';
import { runsConformance } from './conformance';
import { RECOVER_LIMIT_MAX } from '../../../api/runs/routes/webhooks';
import {
  IMAGE,
  client,
  config,
  newTenant,
  startHarness,
  type Harness,
  type Reply,
} from './support';

const WEBHOOK_PERMISSIONS = [
  'svc_webhook_admin',
  'svc_webhook_read',
  'svc_run_submit',
  'svc_run_read',
  'svc_workflow_submit',
  'svc_workflow_read',
  'svc_tenant_admin',
].join(',');
const W = '/api/v1/webhooks';
/** A host that never resolves (RFC 6761): whatever the delivery engine does, nothing is sent. */
const URL_OK = 'https://receiver.invalid/hook';
const HEX_64 = /^[0-9a-f]{64}$/;
const FAR_FUTURE = '2999-01-01T00:00:00Z';

type Api = ReturnType<typeof client>;
type Body = Record<string, unknown>;
interface Endpoint {
  endpoint_id: string;
  url: string;
  events: string[];
  active: boolean;
  secret?: string;
  secret_origin: string;
  description: string | null;
  disabled_reason: string | null;
  consecutive_failures: number;
  dead_deliveries_total: number;
  last_dead_delivery_at: string | null;
}
interface Delivery {
  delivery_id: number;
  endpoint_id: string | null;
  inline: boolean;
  event_id: string;
  state: string;
  redelivery_of: number | null;
  attempt_log?: Body[];
}

/**
 * The webhook routes: endpoints, deliveries reads, redelivery, and inline webhooks on run and
 * workflow submits. The delivery engine is not what is tested: deliveries a test needs in a
 * given state are written by SQL (marked started, so no workflow follows them), and what the API
 * makes pending is asserted on its row, never on an attempt.
 */
describe('runs API: webhooks', () => {
  let h: Harness;
  let temporal: Client;
  /** Executions a test started (deferred runs, gated workflows), ended after the file. */
  const executions: string[] = [];
  const { conforms, checked } = runsConformance();

  beforeAll(async () => {
    h = await startHarness();
    temporal = createTemporalClient(config);
  });
  afterAll(async () => {
    await h?.close();
    await Promise.all(
      executions.map((id) =>
        temporal.workflow
          .getHandle(id)
          .terminate('the webhooks API test is over')
          .catch(() => undefined),
      ),
    );
    await temporal?.connection.close();
  });

  /** Calls the API and checks the answer against the document of `template`. */
  async function call<T = Body>(
    api: Api,
    method: string,
    path: string,
    template: string,
    body?: unknown,
  ): Promise<Reply<T>> {
    const reply = await api.call<T>(method, path, body);
    conforms(method, template, reply);
    return reply;
  }

  const tenant = async (permissions = WEBHOOK_PERMISSIONS) => {
    const made = await newTenant(h.pool, { permissions });
    return { ...made, api: client(h.service.url, made.key) };
  };
  const create = (api: Api, body: Body) => call<Endpoint>(api, 'POST', W, W, body);
  const endpoint = async (api: Api, body: Body = {}) => {
    const reply = await create(api, { url: URL_OK, events: ['run.*'], ...body });
    expect(reply.status).toBe(201);
    return reply.body;
  };
  const storedEndpoint = async (endpointId: string) =>
    (await h.pool.one(sql.unsafe`
      SELECT secret, secret_origin, url, events, active, disabled_reason, consecutive_failures,
             dead_deliveries_total, deleted_at, inline_for
      FROM runs.webhook_endpoints WHERE endpoint_id = ${endpointId}`)) as Body;
  const endpointsOf = async (tenantId: string) =>
    (await h.pool.oneFirst(sql.unsafe`
      SELECT count(*)::int FROM runs.webhook_endpoints WHERE tenant_id = ${tenantId}`)) as number;

  interface DeliveryRowInput {
    state: string;
    ageMinutes?: number;
    trackId?: string | null;
    workflowId?: string | null;
    eventType?: string;
    /** A redelivery of this stored delivery: its event, redelivery_of it. */
    redeliveryOf?: string;
    test?: boolean;
  }
  /**
   * A delivery as the engine would have left it, marked started (no workflow follows it: the
   * state stays what the test wrote).
   */
  async function storedDelivery(
    tenantId: string,
    endpointId: string,
    d: DeliveryRowInput,
  ): Promise<string> {
    const terminal = ['delivered', 'dead', 'cancelled'].includes(d.state);
    const eventId = d.redeliveryOf
      ? ((await deliveryRow(d.redeliveryOf)).event_id as string)
      : ulid();
    const envelope = { event_id: eventId, event_type: d.eventType ?? 'run.exited', data: {} };
    return (await h.pool.oneFirst(sql.unsafe`
      INSERT INTO runs.webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, track_id,
        workflow_id, envelope, state, created_at, finished_at, workflow_started, workflow_task_queue,
        redelivery_of, test)
      VALUES (${tenantId}, ${endpointId}, ${eventId}, ${d.eventType ?? 'run.exited'},
        ${d.trackId ?? null}, ${d.workflowId ?? null}, ${sql.jsonb(envelope)}, ${d.state},
        date_trunc('milliseconds', now()) - make_interval(mins => ${d.ageMinutes ?? 0}),
        ${terminal ? sql.fragment`date_trunc('milliseconds', now())` : null}, true, 'no-worker-serves-this',
        ${d.redeliveryOf ?? null}::bigint, ${d.test ?? false})
      RETURNING delivery_id::text`)) as string;
  }
  const deliveryRow = async (deliveryId: string | number) =>
    (await h.pool.one(sql.unsafe`
      SELECT delivery_id::text, endpoint_id, event_id, event_type, track_id, workflow_id, envelope,
             state, test, truncated, last_error, finished_at, redelivery_of::text, workflow_started
      FROM runs.webhook_deliveries WHERE delivery_id = ${String(deliveryId)}::bigint`)) as Body;

  /** A run that waits for 2999: it never runs a container. */
  async function deferredRun(api: Api, extra: Body = {}) {
    const reply = await call<{ track_id: string }>(api, 'POST', '/api/v1/runs', '/api/v1/runs', {
      image: IMAGE,
      scheduled_start: FAR_FUTURE,
      ...extra,
    });
    if (reply.status === 202) executions.push(runWorkflowId(reply.body.track_id));
    return reply;
  }
  /** A workflow of one approval gate nobody approves: it stays running and runs nothing. */
  async function gatedWorkflow(api: Api, extra: Body = {}) {
    const reply = await call<{ workflow_id: string }>(
      api,
      'POST',
      '/api/v1/workflows',
      '/api/v1/workflows',
      { nodes: [{ ref: 'gate', type: 'approval' }], ...extra },
    );
    if (reply.status === 202) executions.push(dagWorkflowId(reply.body.workflow_id));
    return reply;
  }
  const inlineOf = async (resourceId: string) =>
    (await h.pool.maybeOne(sql.unsafe`
      SELECT endpoint_id, tenant_id, url, events, secret, secret_origin
      FROM runs.webhook_endpoints WHERE inline_for = ${resourceId}`)) as Body | null;

  describe('POST /webhooks', () => {
    it('when no secret is given, then 201 answers a generated 64-hex secret once, stored as generated, and the audit record does not carry it', async () => {
      const { api, tenantId } = await tenant();
      const reply = await create(api, { url: URL_OK, events: ['run.terminal'] });
      expect(reply.status).toBe(201);
      expect(reply.body).toMatchObject({
        url: URL_OK,
        events: ['run.terminal'],
        active: true,
        secret_origin: 'generated',
        description: null,
        disabled_reason: null,
        consecutive_failures: 0,
        dead_deliveries_total: 0,
        last_dead_delivery_at: null,
      });
      expect(reply.body.secret).toMatch(HEX_64);
      const stored = await storedEndpoint(reply.body.endpoint_id);
      expect(stored).toMatchObject({
        secret: reply.body.secret,
        secret_origin: 'generated',
        inline_for: null,
      });
      const audit = (await h.pool.one(sql.unsafe`
        SELECT action, target, detail FROM runs.audit_records
        WHERE tenant_id = ${tenantId} AND action = 'webhook.create'`)) as Body;
      expect(audit.target).toBe(reply.body.endpoint_id);
      expect(JSON.stringify(audit)).not.toContain(reply.body.secret);
    });

    it('when a secret is supplied, then it is kept verbatim (any characters, 1 to 256) and shown once; 257 or empty is 422', async () => {
      const { api } = await tenant();
      const verbatim = ' not hex: ✓ ünïcode \t ';
      const supplied = await create(api, { url: URL_OK, events: ['*'], secret: verbatim });
      expect(supplied.status).toBe(201);
      expect(supplied.body).toMatchObject({ secret: verbatim, secret_origin: 'supplied' });
      expect(await storedEndpoint(supplied.body.endpoint_id)).toMatchObject({
        secret: verbatim,
        secret_origin: 'supplied',
      });
      const longest = 'é'.repeat(256);
      expect((await create(api, { url: URL_OK, events: ['*'], secret: longest })).status).toBe(201);
      for (const secret of ['é'.repeat(257), ''])
        expect((await create(api, { url: URL_OK, events: ['*'], secret })).status).toBe(422);
    });

    it('when the url is not absolute https, has userinfo or does not parse, then 400 invalid_webhook_url and nothing is stored', async () => {
      const { api, tenantId } = await tenant();
      for (const url of [
        'http://receiver.invalid/hook',
        'https://user@receiver.invalid/hook',
        'https://user:password@receiver.invalid/hook',
        '/relative/hook',
        'receiver.invalid/hook',
        'ftp://receiver.invalid/hook',
        'https:///hook',
        'https://receiver.invalid:99999/hook',
        'https://receiver invalid/hook',
        'https://evil.invalid\\@receiver.invalid/',
      ]) {
        const reply = await create(api, { url, events: ['run.*'] });
        expect([url, reply.status, reply.body]).toEqual([
          url,
          400,
          { detail: 'invalid_webhook_url' },
        ]);
      }
      expect(await endpointsOf(tenantId)).toBe(0);
    });

    it('when the url is https in any case, with a port, an IP literal or "@" past the host, then it is accepted as given; 2048 characters is the longest', async () => {
      const { api } = await tenant();
      for (const url of [
        'HTTPS://Receiver.invalid/Hook',
        'https://receiver.invalid:8443/hook?a=1#frag',
        'https://[::1]:8443/hook',
        'https://receiver.invalid/path@with-at',
      ]) {
        const reply = await create(api, { url, events: ['run.*'] });
        expect([url, reply.status, reply.body.url]).toEqual([url, 201, url]);
      }
      const prefix = 'https://receiver.invalid/';
      const longest = prefix + 'a'.repeat(2048 - prefix.length);
      expect((await create(api, { url: longest, events: ['*'] })).status).toBe(201);
      expect((await create(api, { url: `${longest}a`, events: ['*'] })).status).toBe(422);
    });

    it('when events hold aliases, wildcards and notices, then they are accepted; an unknown entry is 400 unknown_event_type; none, 65 or a repeat is 422', async () => {
      const { api } = await tenant();
      const events = [
        'run.terminal',
        'workflow.*',
        '*',
        'node.failed',
        'webhook.endpoint_degraded',
      ];
      expect((await create(api, { url: URL_OK, events })).body.events).toEqual(events);
      for (const unknown of [['run.exploded'], ['run.*', 'run.'], [''], ['webhook.test']]) {
        const reply = await create(api, { url: URL_OK, events: unknown });
        expect([unknown, reply.status, reply.body]).toEqual([
          unknown,
          400,
          { detail: 'unknown_event_type' },
        ]);
      }
      // 64 distinct entries pass the schema (and are judged: unknown); 65 do not.
      const many = (n: number) => Array.from({ length: n }, (_, i) => `run.x${i}`);
      expect((await create(api, { url: URL_OK, events: many(64) })).status).toBe(400);
      expect((await create(api, { url: URL_OK, events: many(65) })).status).toBe(422);
      expect((await create(api, { url: URL_OK, events: [] })).status).toBe(422);
      expect((await create(api, { url: URL_OK, events: ['*', '*'] })).status).toBe(422);
      expect((await create(api, { url: URL_OK, events: ['*'], extra: 1 })).status).toBe(422);
    });

    it('when the url and the events are both wrong, then the url is reported', async () => {
      const { api } = await tenant();
      const reply = await create(api, { url: 'http://x.invalid', events: ['nope'] });
      expect(reply.body).toEqual({ detail: 'invalid_webhook_url' });
    });

    it('when the tenant has max_webhook_endpoints live endpoints, then the next is 429 webhook_quota_exceeded; inline webhooks and deleted endpoints do not count', async () => {
      const { api, tenantId } = await tenant();
      await call(api, 'PUT', '/api/v1/tenant/quotas', '/api/v1/tenant/quotas', {
        max_webhook_endpoints: 2,
      });
      expect((await deferredRun(api, { webhook: { url: URL_OK, events: ['*'] } })).status).toBe(
        202,
      );
      const first = await endpoint(api);
      await endpoint(api);
      const refused = await create(api, { url: URL_OK, events: ['*'] });
      expect([refused.status, refused.body]).toEqual([429, { detail: 'webhook_quota_exceeded' }]);
      expect(await endpointsOf(tenantId)).toBe(3); // two endpoints and the inline webhook
      expect(
        (await call(api, 'DELETE', `${W}/${first.endpoint_id}`, `${W}/{endpoint_id}`)).status,
      ).toBe(204);
      expect((await create(api, { url: URL_OK, events: ['*'] })).status).toBe(201);
    });

    it('when creations race for the last slots, then exactly max_webhook_endpoints succeed', async () => {
      const { api, tenantId } = await tenant();
      await api.call('PUT', '/api/v1/tenant/quotas', { max_webhook_endpoints: 3 });
      const raced = await Promise.all(
        Array.from({ length: 8 }, () => api.call('POST', W, { url: URL_OK, events: ['*'] })),
      );
      expect(raced.filter((r) => r.status === 201)).toHaveLength(3);
      expect(raced.filter((r) => r.status === 429)).toHaveLength(5);
      expect(await endpointsOf(tenantId)).toBe(3);
    });
  });

  describe('GET /webhooks and /webhooks/{endpoint_id}', () => {
    it('when endpoints are listed or read, then never with their secret; oldest first, with limit and offset at their bounds', async () => {
      const { api } = await tenant();
      const a = await endpoint(api, { description: 'first' });
      const b = await endpoint(api, { secret: 'supplied-secret' });
      const list = await call<{ endpoints: Endpoint[]; limit: number; offset: number }>(
        api,
        'GET',
        W,
        W,
      );
      expect(list.body.endpoints.map((e) => e.endpoint_id)).toEqual([a.endpoint_id, b.endpoint_id]);
      expect(list.body).toMatchObject({ limit: 100, offset: 0 });
      expect(JSON.stringify(list.body)).not.toContain(a.secret);
      expect(JSON.stringify(list.body)).not.toContain('supplied-secret');
      for (const e of list.body.endpoints) expect(e).not.toHaveProperty('secret');
      const page = await call<{ endpoints: Endpoint[] }>(api, 'GET', `${W}?limit=1&offset=1`, W);
      expect(page.body.endpoints.map((e) => e.endpoint_id)).toEqual([b.endpoint_id]);
      expect((await call(api, 'GET', `${W}?limit=1000`, W)).status).toBe(200);
      expect((await call(api, 'GET', `${W}?limit=1001`, W)).status).toBe(422);
      expect((await call(api, 'GET', `${W}?limit=0`, W)).status).toBe(422);
      const unknown = await call(api, 'GET', `${W}?state_filter=active`, W);
      expect([unknown.status, unknown.body]).toEqual([
        400,
        { detail: 'unknown query parameter(s): state_filter; supported: limit, offset' },
      ]);

      const one = await call<Endpoint>(api, 'GET', `${W}/${a.endpoint_id}`, `${W}/{endpoint_id}`);
      expect(one.body).toMatchObject({ endpoint_id: a.endpoint_id, description: 'first' });
      expect(one.body).not.toHaveProperty('secret');
      const lower = await api.call<Endpoint>('GET', `${W}/${a.endpoint_id.toLowerCase()}`);
      expect(lower.body.endpoint_id).toBe(a.endpoint_id);
    });

    it("when the id is unknown, not a ULID, deleted, an inline webhook's or another tenant's, then 404 webhook_not_found", async () => {
      const { api } = await tenant();
      const other = await tenant();
      const theirs = await endpoint(other.api);
      const deleted = await endpoint(api);
      await api.call('DELETE', `${W}/${deleted.endpoint_id}`);
      const run = await deferredRun(api, { webhook: { url: URL_OK, events: ['*'] } });
      const inline = (await inlineOf(run.body.track_id))!.endpoint_id as string;
      for (const id of [ulid(), 'not-a-ulid', deleted.endpoint_id, inline, theirs.endpoint_id]) {
        const reply = await call(api, 'GET', `${W}/${id}`, `${W}/{endpoint_id}`);
        expect([id, reply.status, reply.body]).toEqual([id, 404, { detail: 'webhook_not_found' }]);
      }
      const listed = await api.call<{ endpoints: Endpoint[] }>('GET', W);
      expect(listed.body.endpoints).toEqual([]);
    });
  });

  describe('PATCH /webhooks/{endpoint_id}', () => {
    const P = `${W}/{endpoint_id}`;

    it('when some fields are sent, then only they change; a supplied secret is answered once and kept verbatim', async () => {
      const { api } = await tenant();
      const e = await endpoint(api, { description: 'before' });
      const renamed = await call<Endpoint>(api, 'PATCH', `${W}/${e.endpoint_id}`, P, {
        description: null,
      });
      expect(renamed.body).toMatchObject({ url: URL_OK, events: ['run.*'], description: null });
      expect(renamed.body).not.toHaveProperty('secret');
      const moved = await call<Endpoint>(api, 'PATCH', `${W}/${e.endpoint_id}`, P, {
        url: 'https://other.invalid/x',
        events: ['workflow.terminal'],
        secret: 'my new secret',
      });
      expect(moved.body).toMatchObject({
        url: 'https://other.invalid/x',
        events: ['workflow.terminal'],
        secret: 'my new secret',
        secret_origin: 'supplied',
      });
      expect(await storedEndpoint(e.endpoint_id)).toMatchObject({
        secret: 'my new secret',
        secret_origin: 'supplied',
      });
      const read = await api.call<Endpoint>('GET', `${W}/${e.endpoint_id}`);
      expect(read.body).not.toHaveProperty('secret');
    });

    it('when a field breaks its rule, then 400 or 422 and nothing changes', async () => {
      const { api } = await tenant();
      const e = await endpoint(api);
      const cases: [Body, number, string | null][] = [
        [{ url: 'http://plain.invalid' }, 400, 'invalid_webhook_url'],
        [{ events: ['run.nope'] }, 400, 'unknown_event_type'],
        [{}, 422, null],
        [{ active: true, color: 'red' }, 422, null],
        [{ secret: '' }, 422, null],
        [{ events: [] }, 422, null],
      ];
      for (const [body, status, detail] of cases) {
        const reply = await call(api, 'PATCH', `${W}/${e.endpoint_id}`, P, body);
        expect([body, reply.status]).toEqual([body, status]);
        if (detail) expect(reply.body).toEqual({ detail });
      }
      expect(await storedEndpoint(e.endpoint_id)).toMatchObject({
        url: URL_OK,
        events: ['run.*'],
        secret: e.secret,
      });
      const missing = await call(api, 'PATCH', `${W}/${ulid()}`, P, { active: true });
      expect([missing.status, missing.body]).toEqual([404, { detail: 'webhook_not_found' }]);
    });

    it('when active false, then disabled_by_tenant; when an auto-disabled endpoint is re-enabled, then consecutive_failures and the reason reset but the dead counters stay', async () => {
      const { api } = await tenant();
      const e = await endpoint(api);
      const off = await call<Endpoint>(api, 'PATCH', `${W}/${e.endpoint_id}`, P, {
        active: false,
      });
      expect(off.body).toMatchObject({ active: false, disabled_reason: 'disabled_by_tenant' });

      await h.pool.query(sql.unsafe`
        UPDATE runs.webhook_endpoints SET active = false,
          disabled_reason = 'dead_without_success_24h', consecutive_failures = 7,
          dead_deliveries_total = 21, last_dead_delivery_at = '2030-01-02T03:04:05.678Z'
        WHERE endpoint_id = ${e.endpoint_id}`);
      const again = await call<Endpoint>(api, 'PATCH', `${W}/${e.endpoint_id}`, P, {
        active: false,
      });
      expect(again.body.disabled_reason).toBe('dead_without_success_24h');
      const on = await call<Endpoint>(api, 'PATCH', `${W}/${e.endpoint_id}`, P, { active: true });
      expect(on.body).toMatchObject({
        active: true,
        disabled_reason: null,
        consecutive_failures: 0,
        dead_deliveries_total: 21,
        last_dead_delivery_at: '2030-01-02T03:04:05.678Z',
      });
    });

    it('when a disabled endpoint is re-enabled, then every delivery held for it becomes pending, however old (none is dropped)', async () => {
      const { api, tenantId } = await tenant();
      const e = await endpoint(api);
      await api.call('PATCH', `${W}/${e.endpoint_id}`, { active: false });
      const held = [];
      for (const days of [400, 4, 0])
        held.push(
          await storedDelivery(tenantId, e.endpoint_id, { state: 'held', ageMinutes: days * 1440 }),
        );
      const dead = await storedDelivery(tenantId, e.endpoint_id, { state: 'dead' });

      await call(api, 'PATCH', `${W}/${e.endpoint_id}`, P, { active: true });
      for (const id of held) {
        const row = await deliveryRow(id);
        // Pending and handed to the dispatcher (the engine may already have taken it further).
        expect(['pending', 'delivering', 'retrying', 'delivered', 'dead']).toContain(row.state);
        expect(row.last_error).toBeNull();
      }
      expect(await deliveryRow(dead)).toMatchObject({ state: 'dead', last_error: null });
      const update = (await h.pool.one(sql.unsafe`
        SELECT detail FROM runs.audit_records WHERE tenant_id = ${tenantId}
          AND action = 'webhook.update' ORDER BY audit_id DESC LIMIT 1`)) as Body;
      expect(update.detail).toMatchObject({ released_deliveries: 3 });
    });

    it('when held deliveries are released, then they are handed to the dispatcher in ascending delivery_id order', async () => {
      const { tenantId, keyId, api } = await tenant();
      const e = await endpoint(api);
      await api.call('PATCH', `${W}/${e.endpoint_id}`, { active: false });
      const ids: string[] = [];
      for (let i = 0; i < 5; i++)
        ids.push(await storedDelivery(tenantId, e.endpoint_id, { state: 'held', ageMinutes: i }));
      const started: string[] = [];
      const recorder = {
        dispatch: (d: { deliveryId: string }) => started.push(d.deliveryId),
      } as unknown as DeliveryStarter;
      const principal = { tenantId, keyId } as KeyPrincipal;
      await patchEndpoint({ pool: h.pool, config }, recorder, principal, e.endpoint_id, {
        active: true,
      });
      expect(started).toEqual(ids);
      for (const id of ids) expect(await deliveryRow(id)).toMatchObject({ state: 'pending' });
    });
  });

  describe('DELETE /webhooks/{endpoint_id}', () => {
    it('when an endpoint is deleted, then 204, it is gone, and its held, pending and retrying deliveries are cancelled; others stay', async () => {
      const { api, tenantId } = await tenant();
      const e = await endpoint(api);
      const waiting = await Promise.all(
        ['held', 'pending', 'retrying'].map((state) =>
          storedDelivery(tenantId, e.endpoint_id, { state }),
        ),
      );
      const left = await Promise.all(
        ['delivering', 'delivered', 'dead'].map((state) =>
          storedDelivery(tenantId, e.endpoint_id, { state }),
        ),
      );
      const reply = await call(api, 'DELETE', `${W}/${e.endpoint_id}`, `${W}/{endpoint_id}`);
      expect([reply.status, reply.body]).toEqual([204, null]);
      for (const id of waiting)
        expect(await deliveryRow(id)).toMatchObject({
          state: 'cancelled',
          finished_at: expect.any(String) as unknown,
        });
      expect(await Promise.all(left.map(async (id) => (await deliveryRow(id)).state))).toEqual([
        'delivering',
        'delivered',
        'dead',
      ]);
      expect((await storedEndpoint(e.endpoint_id)).deleted_at).not.toBeNull();
      expect((await api.call('GET', `${W}/${e.endpoint_id}`)).status).toBe(404);
      const twice = await call(api, 'DELETE', `${W}/${e.endpoint_id}`, `${W}/{endpoint_id}`);
      expect([twice.status, twice.body]).toEqual([404, { detail: 'webhook_not_found' }]);
      // Its deliveries stay readable by id.
      expect((await api.call('GET', `${W}/deliveries/${waiting[0]}`)).status).toBe(200);
    });
  });

  describe('POST /webhooks/{endpoint_id}/rotate-secret', () => {
    const R = `${W}/{endpoint_id}/rotate-secret`;

    it('when the secret is rotated, then a new generated one is answered once, also for a supplied-secret endpoint', async () => {
      const { api } = await tenant();
      const e = await endpoint(api, { secret: 'mine' });
      const reply = await call<{ endpoint_id: string; secret: string; secret_origin: string }>(
        api,
        'POST',
        `${W}/${e.endpoint_id}/rotate-secret`,
        R,
      );
      expect(reply.status).toBe(200);
      expect(reply.body).toMatchObject({ endpoint_id: e.endpoint_id, secret_origin: 'generated' });
      expect(reply.body.secret).toMatch(HEX_64);
      expect(await storedEndpoint(e.endpoint_id)).toMatchObject({
        secret: reply.body.secret,
        secret_origin: 'generated',
      });
      const read = await api.call<Endpoint>('GET', `${W}/${e.endpoint_id}`);
      expect(read.body).toMatchObject({ secret_origin: 'generated' });
      expect(read.body).not.toHaveProperty('secret');
      const next = await api.call<{ secret: string }>(
        'POST',
        `${W}/${e.endpoint_id}/rotate-secret`,
      );
      expect(next.body.secret).not.toBe(reply.body.secret);
      expect((await call(api, 'POST', `${W}/${ulid()}/rotate-secret`, R)).status).toBe(404);
    });
  });

  describe('POST /webhooks/{endpoint_id}/test', () => {
    const T = `${W}/{endpoint_id}/test`;

    it('when no body is sent, then 202 with a webhook.test delivery: pending, test, a fresh event and the envelope without a delivery block', async () => {
      const { api, tenantId } = await tenant();
      const e = await endpoint(api, { events: ['run.terminal'] });
      const reply = await call<{ delivery_id: number; event_type: string }>(
        api,
        'POST',
        `${W}/${e.endpoint_id}/test`,
        T,
      );
      expect(reply.status).toBe(202);
      expect(reply.body.event_type).toBe('webhook.test');
      expect(Number.isInteger(reply.body.delivery_id)).toBe(true);
      const row = await deliveryRow(reply.body.delivery_id);
      expect(row).toMatchObject({
        endpoint_id: e.endpoint_id,
        event_type: 'webhook.test',
        test: true,
        truncated: false,
        track_id: null,
        workflow_id: null,
      });
      expect(['pending', 'delivering', 'retrying', 'delivered', 'dead']).toContain(row.state);
      expect(row.envelope).toEqual({
        event_id: row.event_id,
        event_type: 'webhook.test',
        occurred_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) as unknown,
        tenant_id: tenantId,
        resource: { type: 'webhook', id: e.endpoint_id },
        data: {},
        test: true,
        truncated: false,
      });
      expect(row.event_id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
      const empty = await call<{ event_type: string }>(
        api,
        'POST',
        `${W}/${e.endpoint_id}/test`,
        T,
        {},
      );
      expect([empty.status, empty.body.event_type]).toEqual([202, 'webhook.test']);
    });

    it('when the type is one the endpoint subscribes to by alias, then 202; one it does not is 422 event_type_not_subscribed; not a concrete type or an unknown key is 422', async () => {
      const { api } = await tenant();
      const e = await endpoint(api, { events: ['run.terminal', 'node.*'] });
      const path = `${W}/${e.endpoint_id}/test`;
      for (const event_type of ['run.exited', 'node.skipped']) {
        const reply = await call(api, 'POST', path, T, { event_type });
        expect([event_type, reply.status, reply.body.event_type]).toEqual([
          event_type,
          202,
          event_type,
        ]);
      }
      const refused = await call(api, 'POST', path, T, { event_type: 'workflow.failed' });
      expect([refused.status, refused.body]).toEqual([
        422,
        { detail: 'event_type_not_subscribed' },
      ]);
      for (const body of [
        { event_type: 'run.terminal' },
        { event_type: 'run.*' },
        { kind: 'x' },
        'null',
        '[]',
      ])
        expect([body, (await call(api, 'POST', path, T, body)).status]).toEqual([body, 422]);
    });

    it('when the endpoint is disabled, then 409 endpoint_disabled; unknown is 404', async () => {
      const { api } = await tenant();
      const e = await endpoint(api);
      await api.call('PATCH', `${W}/${e.endpoint_id}`, { active: false });
      const reply = await call(api, 'POST', `${W}/${e.endpoint_id}/test`, T);
      expect([reply.status, reply.body]).toEqual([409, { detail: 'endpoint_disabled' }]);
      const missing = await call(api, 'POST', `${W}/${ulid()}/test`, T);
      expect([missing.status, missing.body]).toEqual([404, { detail: 'webhook_not_found' }]);
    });
  });

  describe('deliveries reads', () => {
    const L = `${W}/{endpoint_id}/deliveries`;
    const D = `${W}/deliveries/{delivery_id}`;

    it("when an endpoint's deliveries are listed, then in ascending id, filtered by state_filter, paged by since and limit", async () => {
      const { api, tenantId } = await tenant();
      const e = await endpoint(api);
      const states = ['pending', 'dead', 'delivered', 'retrying', 'dead'];
      const ids: number[] = [];
      for (const state of states)
        ids.push(Number(await storedDelivery(tenantId, e.endpoint_id, { state })));
      const list = async (query = '') =>
        (
          await call<{ deliveries: Delivery[] }>(
            api,
            'GET',
            `${W}/${e.endpoint_id}/deliveries${query}`,
            L,
          )
        ).body.deliveries;
      const all = await list();
      expect(all.map((d) => [d.delivery_id, d.state])).toEqual(ids.map((id, i) => [id, states[i]]));
      expect(all[0]).toMatchObject({ endpoint_id: e.endpoint_id, inline: false, test: false });
      expect((await list('?state_filter=dead,pending')).map((d) => d.delivery_id)).toEqual([
        ids[0],
        ids[1],
        ids[4],
      ]);
      expect((await list(`?since=${ids[1]}&limit=2`)).map((d) => d.delivery_id)).toEqual([
        ids[2],
        ids[3],
      ]);
      expect(await list(`?since=${ids[4]}`)).toEqual([]);
      const path = `${W}/${e.endpoint_id}/deliveries`;
      expect((await call(api, 'GET', `${path}?limit=1000`, L)).status).toBe(200);
      expect((await call(api, 'GET', `${path}?limit=1001`, L)).status).toBe(422);
      expect((await call(api, 'GET', `${path}?state_filter=lost`, L)).status).toBe(422);
      const unknown = await call(api, 'GET', `${path}?state=dead`, L);
      expect([unknown.status, unknown.body]).toEqual([
        400,
        {
          detail: 'unknown query parameter(s): state; supported: state_filter, since, limit',
        },
      ]);
      const missing = await call(api, 'GET', `${W}/${ulid()}/deliveries`, L);
      expect([missing.status, missing.body]).toEqual([404, { detail: 'webhook_not_found' }]);
    });

    it('when one delivery is read, then with its attempt log; another tenant’s or any other id is 404 delivery_not_found', async () => {
      const { api, tenantId } = await tenant();
      const other = await tenant();
      const e = await endpoint(api);
      const id = await storedDelivery(tenantId, e.endpoint_id, { state: 'dead' });
      await h.pool.query(sql.unsafe`
        INSERT INTO runs.webhook_attempts (delivery_id, attempt, started_at, finished_at,
                                           status_code, error, outcome)
        VALUES (${id}::bigint, 1, '2030-01-01T00:00:00Z', '2030-01-01T00:00:01Z', 503, NULL, 'retry'),
               (${id}::bigint, 2, '2030-01-01T00:00:11Z', '2030-01-01T00:00:12Z', 401, NULL, 'dead')`);
      const reply = await call<Delivery>(api, 'GET', `${W}/deliveries/${id}`, D);
      expect(reply.body).toMatchObject({ delivery_id: Number(id), state: 'dead' });
      expect(reply.body.attempt_log).toEqual([
        {
          attempt: 1,
          started_at: '2030-01-01T00:00:00.000Z',
          finished_at: '2030-01-01T00:00:01.000Z',
          status_code: 503,
          error: null,
          outcome: 'retry',
        },
        {
          attempt: 2,
          started_at: '2030-01-01T00:00:11.000Z',
          finished_at: '2030-01-01T00:00:12.000Z',
          status_code: 401,
          error: null,
          outcome: 'dead',
        },
      ]);
      for (const [caller, path] of [
        [other.api, `${W}/deliveries/${id}`],
        [api, `${W}/deliveries/999999999999`],
        [api, `${W}/deliveries/abc`],
        [api, `${W}/deliveries/0`],
        [api, `${W}/deliveries/deliveries`],
      ] as const) {
        const refused = await call(caller, 'GET', path, D);
        expect([path, refused.status, refused.body]).toEqual([
          path,
          404,
          { detail: 'delivery_not_found' },
        ]);
      }
    });

    it('when the run or workflow is read for deliveries, then every delivery of it, its inline webhook’s included; another tenant’s is 404', async () => {
      const { api, tenantId } = await tenant();
      const other = await tenant();
      // run.exited only: the deferred run's own run.* events would add real deliveries meanwhile.
      const e = await endpoint(api, { events: ['run.exited'] });
      const run = await deferredRun(api, { webhook: { url: URL_OK, events: ['run.exited'] } });
      const trackId = run.body.track_id;
      const inline = (await inlineOf(trackId))!.endpoint_id as string;
      const viaEndpoint = await storedDelivery(tenantId, e.endpoint_id, { state: 'dead', trackId });
      const viaInline = await storedDelivery(tenantId, inline, { state: 'delivered', trackId });
      await storedDelivery(tenantId, e.endpoint_id, { state: 'dead' }); // of no run

      const RD = '/api/v1/runs/{track_id}/deliveries';
      const runReply = await call<{ deliveries: Delivery[] }>(
        api,
        'GET',
        `/api/v1/runs/${trackId}/deliveries`,
        RD,
      );
      expect(
        runReply.body.deliveries.map((d) => [String(d.delivery_id), d.endpoint_id, d.inline]),
      ).toEqual([
        [viaEndpoint, e.endpoint_id, false],
        [viaInline, null, true],
      ]);
      const filtered = await api.call<{ deliveries: Delivery[] }>(
        'GET',
        `/api/v1/runs/${trackId}/deliveries?state_filter=delivered`,
      );
      expect(filtered.body.deliveries.map((d) => String(d.delivery_id))).toEqual([viaInline]);
      for (const [caller, id] of [
        [other.api, trackId],
        [api, ulid()],
        [api, 'nope'],
      ] as const) {
        const refused = await call(caller, 'GET', `/api/v1/runs/${id}/deliveries`, RD);
        expect([refused.status, refused.body]).toEqual([404, { detail: 'run_not_found' }]);
      }

      // workflow.succeeded only, which a gate nobody approves never reaches: its running and
      // waiting_approval events would add real deliveries meanwhile (seen under load).
      const workflow = await gatedWorkflow(api, {
        webhook: { url: URL_OK, events: ['workflow.succeeded'] },
      });
      const workflowId = workflow.body.workflow_id;
      const flowInline = (await inlineOf(workflowId))!.endpoint_id as string;
      const ofWorkflow = await storedDelivery(tenantId, flowInline, {
        state: 'pending',
        workflowId,
        eventType: 'workflow.running',
      });
      const ofNodeRun = await storedDelivery(tenantId, e.endpoint_id, {
        state: 'retrying',
        workflowId,
        trackId: ulid(),
        eventType: 'run.exited',
      });
      const WD = '/api/v1/workflows/{workflow_id}/deliveries';
      const flowReply = await call<{ deliveries: Delivery[] }>(
        api,
        'GET',
        `/api/v1/workflows/${workflowId}/deliveries`,
        WD,
      );
      expect(
        flowReply.body.deliveries.map((d) => [String(d.delivery_id), d.endpoint_id, d.state]),
      ).toEqual([
        [ofWorkflow, null, 'pending'],
        [ofNodeRun, e.endpoint_id, 'retrying'],
      ]);
      for (const [caller, id] of [
        [other.api, workflowId],
        [api, ulid()],
      ] as const) {
        const refused = await call(caller, 'GET', `/api/v1/workflows/${id}/deliveries`, WD);
        expect([refused.status, refused.body]).toEqual([404, { detail: 'workflow_not_found' }]);
      }
      const unknown = await call(api, 'GET', `/api/v1/workflows/${workflowId}/deliveries?x=1`, WD);
      expect(unknown.status).toBe(400);
    });
  });

  describe('POST /webhooks/deliveries/{delivery_id}/redeliver', () => {
    const RR = `${W}/deliveries/{delivery_id}/redeliver`;

    it('when a delivery is not terminal, then 409 delivery_not_terminal', async () => {
      const { api, tenantId } = await tenant();
      const e = await endpoint(api);
      for (const state of ['held', 'pending', 'delivering', 'retrying']) {
        const id = await storedDelivery(tenantId, e.endpoint_id, { state });
        const reply = await call(api, 'POST', `${W}/deliveries/${id}/redeliver`, RR);
        expect([state, reply.status, reply.body]).toEqual([
          state,
          409,
          { detail: 'delivery_not_terminal' },
        ]);
      }
    });

    it('when a terminal delivery is redelivered, then a new pending row of the same event, redelivery_of the original; held while the endpoint is disabled', async () => {
      const { api, tenantId } = await tenant();
      const e = await endpoint(api);
      const run = await deferredRun(api);
      const trackId = run.body.track_id;
      for (const state of ['delivered', 'dead', 'cancelled']) {
        const original = await storedDelivery(tenantId, e.endpoint_id, { state, trackId });
        const reply = await call<{ delivery_id: number; state: string }>(
          api,
          'POST',
          `${W}/deliveries/${original}/redeliver`,
          RR,
        );
        expect([state, reply.status, reply.body.state]).toEqual([state, 202, 'pending']);
        const [before, after] = [
          await deliveryRow(original),
          await deliveryRow(reply.body.delivery_id),
        ];
        expect(after).toMatchObject({
          endpoint_id: e.endpoint_id,
          event_id: before.event_id,
          event_type: before.event_type,
          envelope: before.envelope,
          track_id: trackId,
          redelivery_of: original,
        });
        expect(after.delivery_id).not.toBe(original);
        expect(before.state).toBe(state);
        const read = await api.call<Delivery>('GET', `${W}/deliveries/${reply.body.delivery_id}`);
        expect(read.body.redelivery_of).toBe(Number(original));
      }
      await api.call('PATCH', `${W}/${e.endpoint_id}`, { active: false });
      const dead = await storedDelivery(tenantId, e.endpoint_id, { state: 'dead' });
      const held = await call<{ delivery_id: number; state: string }>(
        api,
        'POST',
        `${W}/deliveries/${dead}/redeliver`,
        RR,
      );
      expect([held.status, held.body.state]).toEqual([202, 'held']);
      expect(await deliveryRow(held.body.delivery_id)).toMatchObject({
        state: 'held',
        workflow_started: false,
      });
    });

    it('when the endpoint was deleted, then 409 endpoint_deleted; another tenant’s delivery is 404', async () => {
      const { api, tenantId } = await tenant();
      const other = await tenant();
      const e = await endpoint(api);
      const pending = await storedDelivery(tenantId, e.endpoint_id, { state: 'pending' });
      await api.call('DELETE', `${W}/${e.endpoint_id}`);
      const reply = await call(api, 'POST', `${W}/deliveries/${pending}/redeliver`, RR);
      expect([reply.status, reply.body]).toEqual([409, { detail: 'endpoint_deleted' }]);
      const theirs = await call(other.api, 'POST', `${W}/deliveries/${pending}/redeliver`, RR);
      expect([theirs.status, theirs.body]).toEqual([404, { detail: 'delivery_not_found' }]);
    });
  });

  describe('POST /webhooks/{endpoint_id}/recover', () => {
    const RC = `${W}/{endpoint_id}/recover`;
    const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();
    type Recovered = {
      recovered: number;
      first_delivery_id: number | null;
      last_delivery_id: number | null;
      more: boolean;
    };
    const recover = (api: Api, endpointId: string, body: Body) =>
      call<Recovered>(api, 'POST', `${W}/${endpointId}/recover`, RC, body);
    const recoveriesOf = async (endpointId: string, after: string) =>
      (await h.pool.any(sql.unsafe`
        SELECT delivery_id::text, event_id, redelivery_of::text, state
        FROM runs.webhook_deliveries WHERE endpoint_id = ${endpointId}
          AND delivery_id > ${after}::bigint ORDER BY delivery_id`)) as Body[];

    it('when events died, then each one never received is re-sent once, in event order; delivered, under-way, test and out-of-window ones are not', async () => {
      const { api, tenantId } = await tenant();
      const e = await endpoint(api);
      const at = (state: string, ageMinutes: number, more: Partial<DeliveryRowInput> = {}) =>
        storedDelivery(tenantId, e.endpoint_id, { state, ageMinutes, ...more });
      await at('dead', 120); // before since
      const a = await at('dead', 50);
      await at('delivered', 45);
      const c = await at('dead', 40);
      const cAgain = await at('dead', 35, { redeliveryOf: c });
      const d = await at('dead', 30);
      await at('pending', 25, { redeliveryOf: d }); // under way
      await at('dead', 20, { test: true });
      await at('retrying', 15);
      const f = await at('dead', 10);
      await at('dead', 0); // after until
      const last = await at('delivered', 0);

      const reply = await recover(api, e.endpoint_id, {
        since: minutesAgo(60),
        until: minutesAgo(1),
      });
      expect([reply.status, reply.body.recovered, reply.body.more]).toEqual([202, 3, false]);
      const made = await recoveriesOf(e.endpoint_id, last);
      expect(made.map((row) => row.redelivery_of)).toEqual([a, cAgain, f]);
      for (const [row, original] of made.map((row, i) => [row, [a, c, f][i]!] as const))
        expect(row.event_id).toBe((await deliveryRow(original)).event_id);
      expect([reply.body.first_delivery_id, reply.body.last_delivery_id]).toEqual([
        Number(made[0]!.delivery_id),
        Number(made[2]!.delivery_id),
      ]);
      const audit = (await h.pool.one(sql.unsafe`
        SELECT target, detail FROM runs.audit_records
        WHERE tenant_id = ${tenantId} AND action = 'webhook.recover'`)) as Body;
      expect(audit).toMatchObject({ target: e.endpoint_id, detail: { recovered: 3 } });

      // Under way now (the receiver does not resolve: they retry): a repeat re-sends nothing.
      const again = await recover(api, e.endpoint_id, {
        since: minutesAgo(60),
        until: minutesAgo(1),
      });
      expect([again.status, again.body]).toEqual([
        202,
        { recovered: 0, first_delivery_id: null, last_delivery_id: null, more: false },
      ]);
      // Without until, up to now: the one made since is re-sent too.
      const upToNow = await recover(api, e.endpoint_id, { since: minutesAgo(60) });
      expect(upToNow.body.recovered).toBe(1);
    });

    it('when more events died than limit, then limit of them, the earliest, and more: true; the same call again takes the rest', async () => {
      const { api, tenantId } = await tenant();
      const e = await endpoint(api);
      const dead = [];
      for (const age of [3, 2, 1])
        dead.push(
          await storedDelivery(tenantId, e.endpoint_id, { state: 'dead', ageMinutes: age }),
        );
      const first = await recover(api, e.endpoint_id, { since: minutesAgo(5), limit: 2 });
      expect([first.body.recovered, first.body.more]).toEqual([2, true]);
      const second = await recover(api, e.endpoint_id, { since: minutesAgo(5), limit: 2 });
      expect([second.body.recovered, second.body.more]).toEqual([1, false]);
      const made = await recoveriesOf(e.endpoint_id, dead.at(-1)!);
      expect(made.map((row) => row.redelivery_of)).toEqual(dead);
    });

    it('when the body is out of bounds, then 422; a disabled endpoint is 409 endpoint_disabled; another tenant’s is 404', async () => {
      const { api } = await tenant();
      const other = await tenant();
      const e = await endpoint(api);
      const since = minutesAgo(5);
      for (const body of [
        {},
        { since: '2026-11-27T10:00:00+01:00' },
        { since, until: since },
        { since, limit: 0 },
        { since, limit: RECOVER_LIMIT_MAX + 1 },
        { since, state: 'dead' },
      ]) {
        const reply = await recover(api, e.endpoint_id, body);
        expect([JSON.stringify(body), reply.status]).toEqual([JSON.stringify(body), 422]);
      }
      const edge = await recover(api, e.endpoint_id, {
        since,
        until: new Date(Date.parse(since) + 1).toISOString(),
        limit: RECOVER_LIMIT_MAX,
      });
      expect([edge.status, edge.body.recovered]).toEqual([202, 0]);
      const theirs = await recover(other.api, e.endpoint_id, { since });
      expect([theirs.status, theirs.body]).toEqual([404, { detail: 'webhook_not_found' }]);
      await api.call('PATCH', `${W}/${e.endpoint_id}`, { active: false });
      const disabled = await recover(api, e.endpoint_id, { since });
      expect([disabled.status, disabled.body]).toMatchObject([
        409,
        { detail: 'endpoint_disabled' },
      ]);
    });
  });

  describe('inline webhooks on submit', () => {
    it('when a run carries a webhook without a secret, then it is stored with the run, origin none; with one, origin supplied', async () => {
      const { api, tenantId } = await tenant();
      const unsigned = await deferredRun(api, {
        webhook: { url: URL_OK, events: ['run.terminal', 'run.*'] },
      });
      expect(unsigned.status).toBe(202);
      expect(await inlineOf(unsigned.body.track_id)).toMatchObject({
        tenant_id: tenantId,
        url: URL_OK,
        events: ['run.terminal', 'run.*'],
        secret: null,
        secret_origin: 'none',
      });
      const signed = await deferredRun(api, {
        webhook: { url: URL_OK, events: ['*'], secret: 'inline-secret' },
      });
      expect(await inlineOf(signed.body.track_id)).toMatchObject({
        secret: 'inline-secret',
        secret_origin: 'supplied',
      });
      expect((await deferredRun(api)).status).toBe(202);
      // Two inline webhooks, no endpoint: none is listed.
      expect(await endpointsOf(tenantId)).toBe(2);
      expect((await api.call<{ endpoints: unknown[] }>('GET', W)).body.endpoints).toEqual([]);
    });

    it('when the inline webhook breaks a rule, then the submit is refused and neither run nor webhook is stored', async () => {
      const { api, tenantId } = await tenant();
      const cases: [Body, number, string | null][] = [
        [{ url: URL_OK, events: ['*'], headers: {} }, 422, null],
        [{ url: 'http://plain.invalid', events: ['*'] }, 400, 'invalid_webhook_url'],
        [{ url: URL_OK, events: ['run.nope'] }, 400, 'unknown_event_type'],
        [{ url: URL_OK, events: [] }, 422, null],
        [{ url: URL_OK }, 422, null],
      ];
      for (const [webhook, status, detail] of cases) {
        const run = await deferredRun(api, { webhook });
        expect([webhook, run.status]).toEqual([webhook, status]);
        if (detail) expect(run.body).toEqual({ detail });
        const flow = await gatedWorkflow(api, { webhook });
        expect([webhook, flow.status]).toEqual([webhook, status]);
        if (detail) expect(flow.body).toEqual({ detail });
      }
      expect(await endpointsOf(tenantId)).toBe(0);
      const runs: unknown = await h.pool.oneFirst(
        sql.unsafe`SELECT count(*)::int FROM runs.runs WHERE tenant_id = ${tenantId}`,
      );
      expect(runs).toBe(0);
    });

    it('when the day’s runs are used up, then the run with a webhook is 429 and no webhook row is left', async () => {
      const { api, tenantId } = await tenant();
      await api.call('PUT', '/api/v1/tenant/quotas', { max_daily_runs: 0 });
      const run = await deferredRun(api, { webhook: { url: URL_OK, events: ['*'] } });
      expect([run.status, run.body]).toEqual([429, { detail: 'daily_quota_exceeded' }]);
      const flow = await gatedWorkflow(api, { webhook: { url: URL_OK, events: ['*'] } });
      expect(flow.status).toBe(429);
      expect(await endpointsOf(tenantId)).toBe(0);
    });

    it('when a workflow carries a webhook, then it is stored with the workflow, scoped to it', async () => {
      const { api, tenantId } = await tenant();
      const flow = await gatedWorkflow(api, {
        webhook: { url: URL_OK, events: ['workflow.terminal', 'node.*'], secret: 's' },
      });
      expect(flow.status).toBe(202);
      expect(await inlineOf(flow.body.workflow_id)).toMatchObject({
        tenant_id: tenantId,
        events: ['workflow.terminal', 'node.*'],
        secret: 's',
        secret_origin: 'supplied',
      });
    });
  });

  describe('permissions', () => {
    it('when a key lacks svc_webhook_admin or svc_webhook_read, then each route is 403 permission_denied', async () => {
      const owner = await tenant();
      const e = await endpoint(owner.api);
      const run = await deferredRun(owner.api);
      const flow = await gatedWorkflow(owner.api);
      const id = await storedDelivery(owner.tenantId, e.endpoint_id, { state: 'dead' });
      const reads: [string, string][] = [
        [W, W],
        [`${W}/${e.endpoint_id}`, `${W}/{endpoint_id}`],
        [`${W}/${e.endpoint_id}/deliveries`, `${W}/{endpoint_id}/deliveries`],
        [`${W}/deliveries/${id}`, `${W}/deliveries/{delivery_id}`],
        [`/api/v1/runs/${run.body.track_id}/deliveries`, '/api/v1/runs/{track_id}/deliveries'],
        [
          `/api/v1/workflows/${flow.body.workflow_id}/deliveries`,
          '/api/v1/workflows/{workflow_id}/deliveries',
        ],
      ];
      const changes: [string, string, string, Body?][] = [
        ['POST', W, W, { url: URL_OK, events: ['*'] }],
        ['PATCH', `${W}/${e.endpoint_id}`, `${W}/{endpoint_id}`, { active: false }],
        ['DELETE', `${W}/${e.endpoint_id}`, `${W}/{endpoint_id}`],
        ['POST', `${W}/${e.endpoint_id}/rotate-secret`, `${W}/{endpoint_id}/rotate-secret`],
        ['POST', `${W}/${e.endpoint_id}/test`, `${W}/{endpoint_id}/test`],
        ['POST', `${W}/deliveries/${id}/redeliver`, `${W}/deliveries/{delivery_id}/redeliver`],
      ];
      // Narrower keys of the owner's own tenant.
      const keyOf = async (permissions: string) => {
        const { json } = await runAdmin(
          ['key', 'create', '--tenant', owner.tenantId, '--permissions', permissions],
          h.pool,
        );
        return client(h.service.url, (json as { key: string }).key);
      };
      const runsOnly = await keyOf('svc_run_read,svc_run_submit,svc_workflow_read');
      const readOnly = await keyOf('svc_webhook_read');
      for (const [path, template] of reads) {
        const refused = await call(runsOnly, 'GET', path, template);
        expect([path, refused.status, refused.body]).toEqual([
          path,
          403,
          { detail: 'permission_denied' },
        ]);
        expect([path, (await call(readOnly, 'GET', path, template)).status]).toEqual([path, 200]);
      }
      for (const [method, path, template, body] of changes)
        for (const caller of [runsOnly, readOnly]) {
          const refused = await call(caller, method, path, template, body);
          expect([method, path, refused.status]).toEqual([method, path, 403]);
        }
      expect((await storedEndpoint(e.endpoint_id)).deleted_at).toBeNull();
    });
  });

  describe('tenant isolation', () => {
    it('when another tenant names an endpoint, then every route answers 404 and nothing changes', async () => {
      const owner = await tenant();
      const intruder = await tenant();
      const e = await endpoint(owner.api);
      const P = `${W}/${e.endpoint_id}`;
      for (const [method, path, body] of [
        ['GET', P],
        ['PATCH', P, { active: false }],
        ['DELETE', P],
        ['POST', `${P}/rotate-secret`],
        ['POST', `${P}/test`],
        ['GET', `${P}/deliveries`],
      ] as [string, string, Body?][]) {
        const reply = await intruder.api.call(method, path, body);
        expect([method, path, reply.status, reply.body]).toEqual([
          method,
          path,
          404,
          { detail: 'webhook_not_found' },
        ]);
      }
      expect(await storedEndpoint(e.endpoint_id)).toMatchObject({
        active: true,
        secret: e.secret,
        deleted_at: null,
      });
    });
  });

  it('checked a real answer of every webhook operation against the document', () => {
    const documented = Object.entries(
      openApiDocument.paths as Record<string, Record<string, { 'x-permission'?: string }>>,
    ).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => op['x-permission']?.startsWith('svc_webhook_'))
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    );
    expect(documented).toHaveLength(13);
    expect(documented.filter((op) => !checked.has(op))).toEqual([]);
  });
});
