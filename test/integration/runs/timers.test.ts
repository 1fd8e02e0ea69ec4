import fs from 'node:fs';
import { runsConformance } from './conformance';
import path from 'node:path';
import { ulid } from 'ulid';
import type { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { createTemporalClient } from '../../../platform/temporal';
import { runAdmin } from '../../../cli/runs';
import { openApiDocument } from '../../../api/runs/openapi';
import { LABELS_MAX, PAYLOAD_MAX_BYTES } from '../../../services/runs/payloads';
import { TIMER_HORIZON_DAYS } from '../../../api/runs/routes/timers';
import { sql } from '../../../db/pool';
import { SERVICE, TENANT_ID } from '../../../contracts/shared/search-attributes';
import { timerWorkflowId } from '../../../contracts/runs/timer';
import { eventually } from '../../support/services';
import {
  startHttpsReceiver,
  type Receiver,
  type ReceivedRequest,
} from '../../support/https-receiver';
import { pythonSignature } from '../../support/python-signature';
import { client, config, newTenant, startHarness, type Harness } from './support';

/**
 * Timers against the real stack: each one a Temporal workflow timer/<timer_id> that sleeps until
 * fire_at and then fires (the row and its timer.fired notice), delivered by the delivery engine
 * to a real HTTPS receiver (trusted and allowed by the global setup, as in
 * webhook-delivery.test.ts). With RECORD_RUN_HISTORIES=1 a fired and a cancelled execution are
 * saved under test/histories/runs/ for the replay project.
 */
const HISTORIES = path.resolve(__dirname, '../../histories/runs');
const T = '/api/v1/timers';
const ALL =
  'svc_timer_write,svc_timer_read,svc_webhook_admin,svc_webhook_read,svc_run_read,svc_tenant_admin';
/** How soon a timer meant to fire during a test fires. */
const SOON_MS = 2_000;
const DAY_MS = 86_400_000;
jest.setTimeout(120_000);

type Api = ReturnType<typeof client>;
interface TimerBody {
  timer_id: string;
  state: string;
  fire_at: string;
  payload?: unknown;
  labels: Record<string, string>;
  created_at: string;
  fired_at: string | null;
  cancelled_at: string | null;
  fire_delay_seconds: number | null;
}
interface Envelope {
  event_id: string;
  event_type: string;
  occurred_at: string;
  tenant_id: string;
  resource: { type: string; id: string };
  data: Record<string, unknown>;
  delivery: { delivery_id: number; attempt: number; endpoint_id: string | null };
  truncated: boolean;
}
const envelopeOf = (r: ReceivedRequest) => JSON.parse(r.rawBody.toString('utf8')) as Envelope;
const header = (r: ReceivedRequest, name: string) => r.headers[name.toLowerCase()] as string;
const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();
const sleepMs = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('runs API: timers', () => {
  let h: Harness;
  let temporal: Client;
  let receiver: Receiver;
  const recorded: Record<string, string> = {};
  const { conforms, checked } = runsConformance();

  beforeAll(async () => {
    h = await startHarness();
    temporal = createTemporalClient(config);
    receiver = await startHttpsReceiver();
  });
  afterAll(async () => {
    if (process.env.RECORD_RUN_HISTORIES === '1')
      for (const [name, timerId] of Object.entries(recorded)) {
        const handle = temporal.workflow.getHandle(timerWorkflowId(timerId));
        await eventually(async () =>
          (await handle.describe()).status.name === 'COMPLETED' ? true : undefined,
        );
        const history = historyToJSON(await handle.fetchHistory());
        fs.writeFileSync(path.join(HISTORIES, `${name}.json`), history);
      }
    await receiver?.close();
    await temporal?.connection.close();
    await h?.close();
  });

  const tenant = async (permissions = ALL) => {
    const made = await newTenant(h.pool, { permissions });
    return { ...made, api: client(h.service.url, made.key) };
  };
  const create = async (api: Api, body: Record<string, unknown>) => {
    const reply = await api.call<TimerBody & { detail?: string }>('POST', T, body);
    conforms('POST', T, reply);
    return reply;
  };
  const created = async (api: Api, body: Record<string, unknown>) => {
    const reply = await create(api, body);
    expect([reply.status, reply.body.detail]).toEqual([201, undefined]);
    return reply.body;
  };
  const get = async (api: Api, id: string) => {
    const reply = await api.call<TimerBody & { detail?: string }>('GET', `${T}/${id}`);
    conforms('GET', `${T}/{timer_id}`, reply);
    return reply;
  };
  const remove = async (api: Api, id: string) => {
    const reply = await api.call<{ detail?: string }>('DELETE', `${T}/${id}`);
    conforms('DELETE', `${T}/{timer_id}`, reply);
    return reply;
  };
  const list = async (api: Api, query = '') => {
    const reply = await api.call<{ timers: TimerBody[]; limit: number; offset: number }>(
      'GET',
      `${T}${query}`,
    );
    conforms('GET', T, reply);
    return reply;
  };
  const waitState = (api: Api, id: string, state: string) =>
    eventually(async () => {
      const reply = await get(api, id);
      return reply.body.state === state ? reply.body : undefined;
    }, 30_000);
  /** An endpoint of the tenant on its own path of the receiver. */
  const register = async (api: Api, events: string[]) => {
    const at = `/${ulid()}`;
    const reply = await api.call<{ endpoint_id: string; secret: string }>(
      'POST',
      '/api/v1/webhooks',
      {
        url: `${receiver.url}${at}`,
        events,
      },
    );
    expect(reply.status).toBe(201);
    return { ...reply.body, path: at };
  };
  const arrivedAt = (at: string) => receiver.requests.filter((r) => r.path === at);
  const waitArrivals = (at: string, count: number) =>
    eventually(async () => {
      const arrived = arrivedAt(at);
      return Promise.resolve(arrived.length >= count ? arrived : undefined);
    }, 60_000);
  const noticesOf = async (timerId: string) =>
    Number(
      await h.pool.oneFirst(sql.unsafe`
        SELECT count(*) FROM runs.webhook_notices
        WHERE resource_type = 'timer' AND resource_id = ${timerId}`),
    );

  it('at fire_at delivers timer.fired once, signed, with the payload and labels as given', async () => {
    const { api, tenantId } = await tenant();
    const endpoint = await register(api, ['timer.fired']);
    // `*` covers lifecycle events only: a notice is matched by its name.
    const wildcard = await register(api, ['*']);
    const payload = { order: 'A-1', items: [1, 'two', { three: null }], ok: true, price: 12.5 };
    const labels = { env: 'prod', 'team.core_x-1': '' };
    const fireAt = inMs(SOON_MS);
    const timer = await created(api, { fire_at: fireAt, payload, labels });
    expect(timer.timer_id).toMatch(/^[0-9A-Z]{26}$/);
    expect(Date.parse(timer.created_at)).toBeLessThanOrEqual(Date.now());
    expect(timer).toEqual({
      timer_id: timer.timer_id,
      state: 'pending',
      fire_at: fireAt,
      payload,
      labels,
      created_at: timer.created_at,
      fired_at: null,
      cancelled_at: null,
      fire_delay_seconds: null,
    });
    // Another tenant's timer fires at the same time: it never reaches this tenant's endpoint.
    const other = await tenant();
    await register(other.api, ['timer.fired']);
    const foreign = await created(other.api, { fire_at: fireAt, payload: 'not yours' });

    const [request] = await waitArrivals(endpoint.path, 1);
    const envelope = envelopeOf(request!);
    const timestamp = header(request!, 'X-Svc-Timestamp');
    expect(header(request!, 'X-Svc-Event')).toBe('timer.fired');
    expect(header(request!, 'X-Svc-Signature')).toBe(
      pythonSignature(endpoint.secret, 'generated', timestamp, request!.rawBody),
    );
    expect(envelope).toMatchObject({
      event_type: 'timer.fired',
      tenant_id: tenantId,
      resource: { type: 'timer', id: timer.timer_id },
      delivery: { attempt: 1, endpoint_id: endpoint.endpoint_id },
      truncated: false,
    });
    const fired = await waitState(api, timer.timer_id, 'fired');
    expect(envelope.data).toEqual({
      timer_id: timer.timer_id,
      fire_at: fireAt,
      fired_at: fired.fired_at,
      fire_delay_seconds: fired.fire_delay_seconds,
      labels,
      payload,
    });
    expect(fired.fire_delay_seconds).toBeGreaterThanOrEqual(0);
    expect(fired.fire_delay_seconds).toBeLessThan(5);
    expect(Date.parse(fired.fired_at!)).toBeGreaterThanOrEqual(Date.parse(fireAt));
    expect(request!.receivedAt.getTime()).toBeGreaterThanOrEqual(Date.parse(fireAt));

    // One workflow per timer, found by tenant and service; it fired once and is done.
    const handle = temporal.workflow.getHandle(timerWorkflowId(timer.timer_id));
    expect(await handle.result()).toMatchObject({ outcome: 'fired' });
    const description = await handle.describe();
    expect(description.type).toBe('timerWorkflow');
    expect(description.typedSearchAttributes.get(TENANT_ID)).toBe(tenantId);
    expect(description.typedSearchAttributes.get(SERVICE)).toBe('runs');
    await waitState(other.api, foreign.timer_id, 'fired');
    await sleepMs(1_500);
    expect(arrivedAt(endpoint.path).map((r) => envelopeOf(r).resource.id)).toEqual([
      timer.timer_id,
    ]);
    expect(arrivedAt(wildcard.path)).toEqual([]);
    expect(await noticesOf(timer.timer_id)).toBe(1);
    recorded['timer-fired'] = timer.timer_id;
  });

  it("delivers to a timer's inline webhook only its own timer.fired, signed with its secret", async () => {
    const { api } = await tenant();
    const fireAt = inMs(SOON_MS);
    const [first, second] = [`/${ulid()}`, `/${ulid()}`];
    const a = await created(api, {
      fire_at: fireAt,
      payload: 1,
      webhook: { url: `${receiver.url}${first}`, events: ['timer.fired'], secret: 'inline sécret' },
    });
    const b = await created(api, {
      fire_at: fireAt,
      payload: 2,
      webhook: { url: `${receiver.url}${second}`, events: ['timer.fired'] },
    });
    // An inline webhook that names no timer.fired receives nothing.
    const silent = `/${ulid()}`;
    const c = await created(api, {
      fire_at: fireAt,
      webhook: { url: `${receiver.url}${silent}`, events: ['run.*'] },
    });
    const [toFirst] = await waitArrivals(first, 1);
    const [toSecond] = await waitArrivals(second, 1);
    expect(envelopeOf(toFirst!)).toMatchObject({
      resource: { type: 'timer', id: a.timer_id },
      data: { timer_id: a.timer_id, payload: 1 },
      delivery: { endpoint_id: null },
    });
    expect(header(toFirst!, 'X-Svc-Signature')).toBe(
      pythonSignature(
        'inline sécret',
        'supplied',
        header(toFirst!, 'X-Svc-Timestamp'),
        toFirst!.rawBody,
      ),
    );
    expect(envelopeOf(toSecond!).data).toMatchObject({ timer_id: b.timer_id, payload: 2 });
    expect(header(toSecond!, 'X-Svc-Signature')).toBe('none');
    const delivery = await api.call<{ inline: boolean; endpoint_id: string | null }>(
      'GET',
      `/api/v1/webhooks/deliveries/${envelopeOf(toFirst!).delivery.delivery_id}`,
    );
    expect(delivery.body).toMatchObject({ inline: true, endpoint_id: null, track_id: null });
    await waitState(api, c.timer_id, 'fired');
    await sleepMs(1_500);
    expect([arrivedAt(first).length, arrivedAt(second).length, arrivedAt(silent).length]).toEqual([
      1, 1, 0,
    ]);
  });

  it('when DELETE comes before fire_at, then 204 and nothing is ever delivered; after firing 409', async () => {
    const { api } = await tenant();
    const endpoint = await register(api, ['timer.fired']);
    const fireAt = inMs(4_000);
    const timer = await created(api, { fire_at: fireAt, payload: { never: true } });
    const handle = temporal.workflow.getHandle(timerWorkflowId(timer.timer_id));
    // Its workflow sleeps (started through the outbox) before the DELETE cancels it.
    await eventually(async () =>
      (await handle.describe().catch(() => null))?.status.name === 'RUNNING' ? true : undefined,
    );
    expect((await remove(api, timer.timer_id)).status).toBe(204);
    const cancelled = (await get(api, timer.timer_id)).body;
    expect(cancelled).toMatchObject({
      state: 'cancelled',
      fired_at: null,
      fire_delay_seconds: null,
    });
    expect(Date.parse(cancelled.cancelled_at!)).toBeLessThan(Date.parse(fireAt));
    expect(await handle.result()).toEqual({ outcome: 'cancelled' });
    // A second DELETE changes nothing.
    expect((await remove(api, timer.timer_id)).status).toBe(204);
    await sleepMs(Date.parse(fireAt) - Date.now() + 2_000);
    expect(arrivedAt(endpoint.path)).toEqual([]);
    expect(await noticesOf(timer.timer_id)).toBe(0);
    expect((await get(api, timer.timer_id)).body.state).toBe('cancelled');
    recorded['timer-cancelled'] = timer.timer_id;

    // A past fire_at fires at once, its delay counted from fire_at; then DELETE is 409.
    const past = await created(api, { fire_at: inMs(-60_000) });
    const fired = await waitState(api, past.timer_id, 'fired');
    expect(fired.fire_delay_seconds).toBeGreaterThanOrEqual(60);
    expect(fired.fire_delay_seconds).toBeLessThan(90);
    const refused = await remove(api, past.timer_id);
    expect([refused.status, refused.body]).toEqual([409, { detail: 'timer_already_fired' }]);
    await waitArrivals(endpoint.path, 1);
  });

  it("when an operator cancels a timer's execution, then the timer is cancelled and never fires", async () => {
    const { api } = await tenant();
    const timer = await created(api, { fire_at: inMs(60_000) });
    const handle = temporal.workflow.getHandle(timerWorkflowId(timer.timer_id));
    await eventually(async () =>
      (await handle.describe().catch(() => null))?.status.name === 'RUNNING' ? true : undefined,
    );
    await handle.cancel();
    expect(await handle.result()).toEqual({ outcome: 'cancelled' });
    expect((await get(api, timer.timer_id)).body.state).toBe('cancelled');
  });

  it('counts pending timers only against max_pending_timers: at the max 429, a fire or a DELETE frees a slot', async () => {
    const { api } = await tenant();
    const quotas = await api.call<{ max_pending_timers: number }>('GET', '/api/v1/tenant/quotas');
    expect(quotas.body.max_pending_timers).toBe(1000);
    const put = await api.call<{ detail?: string }>('PUT', '/api/v1/tenant/quotas', {
      max_pending_timers: -1,
    });
    expect(put.status).toBe(422);
    expect(
      (await api.call('PUT', '/api/v1/tenant/quotas', { max_pending_timers: 2 })).body,
    ).toMatchObject({ max_pending_timers: 2 });

    const later = () => ({ fire_at: inMs(3_600_000) });
    const first = await created(api, later());
    const past = await created(api, { fire_at: inMs(-1_000) });
    await waitState(api, past.timer_id, 'fired');
    // The fired one is not counted: one pending, one slot left.
    await created(api, later());
    const refused = await create(api, later());
    expect([refused.status, refused.body]).toEqual([429, { detail: 'timer_quota_exceeded' }]);
    expect((await remove(api, first.timer_id)).status).toBe(204);
    await created(api, later());
    expect((await create(api, later())).status).toBe(429);

    // Concurrent creations never take more than the slots left.
    await api.call('PUT', '/api/v1/tenant/quotas', { max_pending_timers: 5 });
    const burst = await Promise.all(Array.from({ length: 6 }, () => create(api, later())));
    expect(burst.map((r) => r.status).sort()).toEqual([201, 201, 201, 429, 429, 429]);
    const pending = await list(api, '?state_filter=pending');
    expect(pending.body.timers).toHaveLength(5);
    await Promise.all(pending.body.timers.map((t) => remove(api, t.timer_id)));
  });

  it('lists newest first without payloads, filtered by state and by every label pair given', async () => {
    const { api } = await tenant();
    const later = inMs(3_600_000);
    const a = await created(api, {
      fire_at: later,
      payload: 'a',
      labels: { env: 'prod', team: 'a' },
    });
    const b = await created(api, { fire_at: later, labels: { env: 'prod', team: 'b' } });
    const c = await created(api, { fire_at: later, labels: { env: 'dev,x=1' } });
    const d = await created(api, { fire_at: later });
    await remove(api, d.timer_id);
    const ids = async (query: string) => {
      const reply = await list(api, query);
      expect(reply.status).toBe(200);
      return reply.body.timers.map((t) => t.timer_id);
    };

    const all = await list(api);
    expect(all.body).toMatchObject({ limit: 100, offset: 0 });
    expect(all.body.timers.map((t) => t.timer_id)).toEqual([
      d.timer_id,
      c.timer_id,
      b.timer_id,
      a.timer_id,
    ]);
    expect(all.body.timers[3]).not.toHaveProperty('payload');
    expect(all.body.timers[3]!.labels).toEqual({ env: 'prod', team: 'a' });
    expect(await ids('?state_filter=cancelled')).toEqual([d.timer_id]);
    expect(await ids('?state_filter=pending,cancelled')).toHaveLength(4);
    expect(await ids('?state_filter=fired')).toEqual([]);
    expect(await ids('?label_filter=env=prod')).toEqual([b.timer_id, a.timer_id]);
    expect(await ids('?label_filter=env=prod&label_filter=team=b')).toEqual([b.timer_id]);
    expect(await ids('?label_filter=team=b&label_filter=team=a')).toEqual([]);
    expect(await ids(`?label_filter=${encodeURIComponent('env=dev,x=1')}`)).toEqual([c.timer_id]);
    expect(await ids('?label_filter=env=prod&state_filter=cancelled')).toEqual([]);
    expect(await ids('?limit=1&offset=1')).toEqual([c.timer_id]);
    expect(await ids('?limit=1000')).toHaveLength(4);
    const filters = Array.from({ length: 16 }, (_, i) => `label_filter=k${i}=v`).join('&');
    expect(await ids(`?${filters}`)).toEqual([]);

    for (const query of [
      '?label_filter=Env=prod',
      '?label_filter=noequals',
      `?${filters}&label_filter=k16=v`,
      '?state_filter=bogus',
      '?limit=0',
      '?limit=1001',
      '?offset=-1',
    ])
      expect([query, (await list(api, query)).status]).toEqual([query, 422]);
    // The refusal reads as written: the key's pattern is not taken for a message template.
    expect(JSON.stringify((await list(api, '?label_filter=noequals')).body)).toContain(
      "must be key=value: a label key (^[a-z0-9_.-]{1,63}$), '=', and a value",
    );
    const unknown = await list(api, '?state=pending');
    expect(unknown.status).toBe(400);
    expect((unknown.body as unknown as { detail: string }).detail).toContain(
      'supported: state_filter, label_filter, limit, offset',
    );
    await Promise.all([a, b, c].map((t) => remove(api, t.timer_id)));
  });

  it('holds each bound of the body at its edge and refuses one past it', async () => {
    const { api } = await tenant();
    const later = inMs(3_600_000);
    const made: string[] = [];
    const accepts = async (body: Record<string, unknown>) => {
      const timer = await created(api, { fire_at: later, ...body });
      made.push(timer.timer_id);
      return timer;
    };
    const refuses = async (body: Record<string, unknown>, status: number, detail?: string) => {
      const reply = await create(api, { fire_at: later, ...body });
      expect([reply.status, detail === undefined ? 'any' : reply.body.detail]).toEqual([
        status,
        detail ?? 'any',
      ]);
      return reply;
    };
    // The payload: any JSON value, 65536 bytes as JSON at most.
    const atLimit = 'x'.repeat(PAYLOAD_MAX_BYTES - 2);
    expect((await accepts({ payload: atLimit })).payload).toBe(atLimit);
    await refuses({ payload: `${atLimit}x` }, 422, 'payload_too_large');
    const multibyte = 'é'.repeat((PAYLOAD_MAX_BYTES - 2) / 2);
    await accepts({ payload: multibyte });
    await refuses({ payload: `${multibyte}é` }, 422, 'payload_too_large');
    expect((await accepts({})).payload).toBeNull();
    for (const payload of [null, 0, -1.5, 'text', [], [1, [2]], false, { nested: { a: [] } }])
      expect((await accepts({ payload })).payload).toEqual(payload);
    await refuses({ payload: { a: 'nul\u0000' } }, 422);
    await refuses({ payload: { 'key\u0000': 1 } }, 422);
    // An unpaired surrogate, escaped in the JSON text, is no text jsonb holds either.
    for (const raw of [
      `{"fire_at":"${later}","payload":["\\ud800"]}`,
      `{"fire_at":"${later}","payload":{"\\udc00":1}}`,
      `{"fire_at":"${later}","labels":{"k":"a\\ud800"}}`,
    ]) {
      const reply = await api.call('POST', T, raw);
      conforms('POST', T, reply);
      expect([raw, reply.status]).toEqual([raw, 422]);
    }
    expect((await accepts({ payload: '😀 \ud83d\ude00' })).payload).toBe('😀 😀');

    // Labels: 16 entries, keys ^[a-z0-9_.-]{1,63}$, string values of 256 characters.
    const labels = (count: number) =>
      Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, 'v']));
    await accepts({ labels: labels(LABELS_MAX) });
    await refuses({ labels: labels(LABELS_MAX + 1) }, 422);
    await accepts({ labels: { ['k'.repeat(63)]: 'v', 'a.b_c-9': 'x'.repeat(256) } });
    await accepts({ labels: { emoji: '😀'.repeat(256) } });
    await refuses({ labels: { ['k'.repeat(64)]: 'v' } }, 422);
    await refuses({ labels: { Key: 'v' } }, 422);
    await refuses({ labels: { '': 'v' } }, 422);
    await refuses({ labels: { k: 'x'.repeat(257) } }, 422);
    await refuses({ labels: { k: 1 } }, 422);
    await refuses({ labels: ['k'] }, 422);

    // fire_at: a UTC instant with Z, at most ten years ahead.
    const horizon = await accepts({ fire_at: inMs(TIMER_HORIZON_DAYS * DAY_MS - 60_000) });
    const handle = temporal.workflow.getHandle(timerWorkflowId(horizon.timer_id));
    await eventually(async () =>
      (await handle.describe().catch(() => null))?.status.name === 'RUNNING' ? true : undefined,
    );
    await refuses({ fire_at: inMs(TIMER_HORIZON_DAYS * DAY_MS + 60_000) }, 422);
    await refuses({ fire_at: later.replace('Z', '+00:00') }, 422);
    await refuses({ fire_at: '2030-02-30T00:00:00Z' }, 422);
    // Postgres has no year 0; year 1 is long past: it fires at once, its delay from fire_at.
    await refuses({ fire_at: '0000-12-31T23:59:59Z' }, 422);
    const ancient = await accepts({ fire_at: '0001-01-01T00:00:00Z' });
    const ancientFired = await waitState(api, ancient.timer_id, 'fired');
    expect(ancientFired.fire_at).toBe('0001-01-01T00:00:00.000Z');
    expect(ancientFired.fire_delay_seconds).toBeGreaterThan(63_000_000_000);
    await refuses({ fire_at: undefined }, 422);
    expect((await accepts({ fire_at: '2030-01-01T00:00:00.123456789Z' })).fire_at).toBe(
      '2030-01-01T00:00:00.123Z',
    );

    // The body and its inline webhook.
    await refuses({ unknown: 1 }, 422);
    await refuses(
      { webhook: { url: 'http://example.com/x', events: ['timer.fired'] } },
      400,
      'invalid_webhook_url',
    );
    await refuses(
      { webhook: { url: 'https://example.com/x', events: ['timer.nope'] } },
      400,
      'unknown_event_type',
    );
    await refuses(
      { webhook: { url: 'https://example.com/x', events: ['timer.fired'], x: 1 } },
      422,
    );
    const malformed = await api.call('POST', T, '{"fire_at":');
    conforms('POST', T, malformed);
    expect(malformed.status).toBe(400);

    await Promise.all(made.filter((id) => id !== ancient.timer_id).map((id) => remove(api, id)));
    expect(await handle.result()).toEqual({ outcome: 'cancelled' });
  });

  it('grants each timer route to its permission only', async () => {
    const owner = await tenant();
    const timer = await created(owner.api, { fire_at: inMs(3_600_000) });
    // More keys of the same tenant, made with the operator CLI's logic.
    const keyOf = async (permissions: string) => {
      const args = ['key', 'create', '--tenant', owner.tenantId, '--permissions', permissions];
      const { json } = await runAdmin(args, h.pool);
      return client(h.service.url, (json as { key: string }).key);
    };
    const reader = await keyOf('svc_timer_read');
    const writer = await keyOf('svc_timer_write');
    const runsOnly = await keyOf('svc_run_submit,svc_run_read,svc_webhook_admin,svc_webhook_read');
    const body = { fire_at: inMs(3_600_000) };
    const statuses = async (api: Api) => [
      (await create(api, body)).status,
      (await list(api)).status,
      (await get(api, timer.timer_id)).status,
      (await remove(api, ulid())).status,
    ];
    expect(await statuses(reader)).toEqual([403, 200, 200, 403]);
    expect(await statuses(writer)).toEqual([201, 403, 403, 404]);
    expect(await statuses(runsOnly)).toEqual([403, 403, 403, 403]);
    expect(await statuses(client(h.service.url, null))).toEqual([401, 401, 401, 401]);
    expect((await remove(owner.api, timer.timer_id)).status).toBe(204);
    const left = await list(owner.api, '?state_filter=pending');
    await Promise.all(left.body.timers.map((t) => remove(owner.api, t.timer_id)));
  });

  it("answers 404 timer_not_found for another tenant's timer and for an id of any shape", async () => {
    const owner = await tenant();
    const stranger = await tenant();
    const timer = await created(owner.api, { fire_at: inMs(3_600_000), payload: 'mine' });
    for (const id of [timer.timer_id, ulid(), 'not-a-ulid', '0'.repeat(27)]) {
      const read = await get(stranger.api, id);
      const deleted = await remove(stranger.api, id);
      expect([id, read.status, read.body, deleted.status, deleted.body]).toEqual([
        id,
        404,
        { detail: 'timer_not_found' },
        404,
        { detail: 'timer_not_found' },
      ]);
    }
    expect((await list(stranger.api)).body.timers).toEqual([]);
    // An id in lower case is the same ULID.
    const own = await get(owner.api, timer.timer_id.toLowerCase());
    expect([own.status, own.body.payload, own.body.state]).toEqual([200, 'mine', 'pending']);
    expect((await remove(owner.api, timer.timer_id)).status).toBe(204);
  });

  it('checked a real answer of every timer operation against the document', () => {
    const documented = Object.entries(openApiDocument.paths)
      .filter(([p]) => p.startsWith(T))
      .flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
    expect(documented.length).toBe(4);
    expect(documented.filter((op) => !checked.has(op))).toEqual([]);
  });
});
