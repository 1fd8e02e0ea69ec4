import fs from 'node:fs';
import path from 'node:path';
import { ulid } from 'ulid';
import { ScheduleNotFoundError, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { msToTs, tsToMs } from '@temporalio/common/lib/time';
import { createTemporalClient } from '../../../platform/temporal';
import { openApiDocument } from '../../../api/runs/openapi';
import { sql } from '../../../db/pool';
import { SERVICE, TENANT_ID } from '../../../contracts/shared/search-attributes';
import {
  scheduleFireWorkflowIdBase,
  scheduleTemporalId,
} from '../../../contracts/runs/schedule-fire';
import { createScheduleActivities } from '../../../activities/runs/schedules';
import { taskQueues } from '../../../contracts/shared/task-queues';
import { wallTimeOf } from '../../../services/runs/schedules/dst';
import { eventually } from '../../support/services';
import {
  startHttpsReceiver,
  type Receiver,
  type ReceivedRequest,
} from '../../support/https-receiver';
import { runsConformance } from './conformance';
import { client, config, newTenant, startHarness, type Harness } from './support';

/**
 * Schedules against the real stack: each one a Temporal Schedule schedule/<schedule_id> whose
 * actions start scheduleFireWorkflow on this run's worker. The DST rule of the README is asserted
 * against the real scheduler (listScheduleMatchingTimes on paused schedules); catch-up after an
 * outage by Temporal's backfill of the last 3 hours of an hourly schedule; a real fire on an
 * every-minute cron delivered to a real HTTPS receiver. With RECORD_RUN_HISTORIES=1 one fire's
 * history is saved as test/histories/runs/schedule-fire.json.
 */
const HISTORIES = path.resolve(__dirname, '../../histories/runs');
const S = '/api/v1/schedules';
const ALL =
  'svc_timer_write,svc_timer_read,svc_webhook_admin,svc_webhook_read,svc_run_read,svc_tenant_admin';
const HOUR_MS = 3_600_000;
jest.setTimeout(180_000);

type Api = ReturnType<typeof client>;
interface ScheduleBody {
  schedule_id: string;
  cron: string;
  timezone: string;
  payload?: unknown;
  labels: Record<string, string>;
  enabled: boolean;
  created_at: string;
  updated_at: string;
  next_fire_at: string | null;
  detail?: string;
}
interface FireBody {
  occurrence: string;
  wall_time: string | null;
  fired_at: string;
  fire_delay_seconds: number;
  outcome: string;
  deliveries_enqueued: number;
  event_id: string | null;
}
const envelopeOf = (r: ReceivedRequest) =>
  JSON.parse(r.rawBody.toString('utf8')) as {
    event_type: string;
    tenant_id: string;
    resource: { type: string; id: string };
    data: Record<string, unknown>;
  };
const sleepMs = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('runs API: schedules', () => {
  let h: Harness;
  let temporal: Client;
  let receiver: Receiver;
  const made: string[] = [];
  let recordedFire: string | null = null;
  const { conforms, checked } = runsConformance();

  beforeAll(async () => {
    h = await startHarness();
    temporal = createTemporalClient(config);
    receiver = await startHttpsReceiver();
  });
  afterAll(async () => {
    if (process.env.RECORD_RUN_HISTORIES === '1' && recordedFire) {
      const handle = temporal.workflow.getHandle(recordedFire);
      const history = historyToJSON(await handle.fetchHistory());
      fs.writeFileSync(path.join(HISTORIES, 'schedule-fire.json'), history);
    }
    // Tests share a namespace: every Temporal Schedule made here goes.
    for (const id of made)
      await temporal.schedule
        .getHandle(scheduleTemporalId(id))
        .delete()
        .catch(() => undefined);
    await receiver?.close();
    await temporal?.connection.close();
    await h?.close();
  });

  const tenant = async (permissions = ALL) => {
    const t = await newTenant(h.pool, { permissions });
    return { ...t, api: client(h.service.url, t.key) };
  };
  const create = async (api: Api, body: Record<string, unknown>) => {
    const reply = await api.call<ScheduleBody>('POST', S, body);
    conforms('POST', S, reply);
    if (reply.status === 201) made.push(reply.body.schedule_id);
    return reply;
  };
  const created = async (api: Api, body: Record<string, unknown>) => {
    const reply = await create(api, body);
    expect([reply.status, reply.body.detail]).toEqual([201, undefined]);
    return reply.body;
  };
  const get = async (api: Api, id: string) => {
    const reply = await api.call<ScheduleBody>('GET', `${S}/${id}`);
    conforms('GET', `${S}/{schedule_id}`, reply);
    return reply;
  };
  const patch = async (api: Api, id: string, body: Record<string, unknown>) => {
    const reply = await api.call<ScheduleBody>('PATCH', `${S}/${id}`, body);
    conforms('PATCH', `${S}/{schedule_id}`, reply);
    return reply;
  };
  const fires = async (api: Api, id: string, query = '') => {
    const reply = await api.call<{ fires: FireBody[]; limit: number; offset: number }>(
      'GET',
      `${S}/${id}/fires${query}`,
    );
    conforms('GET', `${S}/{schedule_id}/fires`, reply);
    return reply;
  };
  const remove = async (api: Api, id: string) => {
    const reply = await api.call('DELETE', `${S}/${id}`);
    conforms('DELETE', `${S}/{schedule_id}`, reply);
    return reply;
  };
  const matchingTimes = async (scheduleId: string, start: string, end: string) => {
    const reply = (await temporal.workflowService.listScheduleMatchingTimes({
      namespace: config.temporalNamespace,
      scheduleId: scheduleTemporalId(scheduleId),
      startTime: msToTs(Date.parse(start)),
      endTime: msToTs(Date.parse(end)),
    })) as { startTime?: Parameters<typeof tsToMs>[0][] | null };
    return (reply.startTime ?? []).map((t) => new Date(tsToMs(t)).toISOString());
  };

  describe('daylight saving: the rule of services/runs/README.md, against the real scheduler', () => {
    // [zone, cron, from, to, the exact occurrences (UTC): the instants Temporal's scheduler
    // matches, but one per wall time (a repeated wall time's second instant records nothing)]
    const CASES: [string, string, string, string, string[]][] = [
      // Spring forward, New York 2027-03-14 02:00 EST → 03:00 EDT: 02:30 fires at 03:30 EDT.
      [
        'America/New_York',
        '30 2 * * *',
        '2027-03-13T00:00:00Z',
        '2027-03-16T00:00:00Z',
        ['2027-03-13T07:30:00.000Z', '2027-03-14T07:30:00.000Z', '2027-03-15T06:30:00.000Z'],
      ],
      [
        'America/New_York',
        '30 * * * *',
        '2027-03-14T04:00:00Z',
        '2027-03-14T09:00:00Z',
        [
          '2027-03-14T04:30:00.000Z',
          '2027-03-14T05:30:00.000Z',
          '2027-03-14T06:30:00.000Z',
          '2027-03-14T07:30:00.000Z',
          '2027-03-14T08:30:00.000Z',
        ],
      ],
      // Fall back, New York 2027-11-07 02:00 EDT → 01:00 EST: 01:30 happens twice and fires
      // once, at 01:30 EDT.
      [
        'America/New_York',
        '30 2 * * *',
        '2027-11-06T00:00:00Z',
        '2027-11-09T00:00:00Z',
        ['2027-11-06T06:30:00.000Z', '2027-11-07T07:30:00.000Z', '2027-11-08T07:30:00.000Z'],
      ],
      [
        'America/New_York',
        '30 1 * * *',
        '2027-11-06T00:00:00Z',
        '2027-11-09T00:00:00Z',
        ['2027-11-06T05:30:00.000Z', '2027-11-07T05:30:00.000Z', '2027-11-08T06:30:00.000Z'],
      ],
      [
        'America/New_York',
        '30 * * * *',
        '2027-11-07T03:00:00Z',
        '2027-11-07T09:00:00Z',
        [
          '2027-11-07T03:30:00.000Z',
          '2027-11-07T04:30:00.000Z',
          '2027-11-07T05:30:00.000Z',
          '2027-11-07T07:30:00.000Z',
          '2027-11-07T08:30:00.000Z',
        ],
      ],
      // Spring forward, London 2027-03-28 01:00 GMT → 02:00 BST: 01:30 fires at 02:30 BST.
      [
        'Europe/London',
        '30 1 * * *',
        '2027-03-27T00:00:00Z',
        '2027-03-30T00:00:00Z',
        ['2027-03-27T01:30:00.000Z', '2027-03-28T01:30:00.000Z', '2027-03-29T00:30:00.000Z'],
      ],
      [
        'Europe/London',
        '30 2 * * *',
        '2027-03-27T00:00:00Z',
        '2027-03-30T00:00:00Z',
        ['2027-03-27T02:30:00.000Z', '2027-03-28T01:30:00.000Z', '2027-03-29T01:30:00.000Z'],
      ],
      [
        'Europe/London',
        '30 * * * *',
        '2027-03-27T23:00:00Z',
        '2027-03-28T04:00:00Z',
        [
          '2027-03-27T23:30:00.000Z',
          '2027-03-28T00:30:00.000Z',
          '2027-03-28T01:30:00.000Z',
          '2027-03-28T02:30:00.000Z',
          '2027-03-28T03:30:00.000Z',
        ],
      ],
      // Fall back, London 2027-10-31 02:00 BST → 01:00 GMT: 01:30 happens twice and fires once:
      // daily at 01:30 GMT, hourly at 01:30 BST (the instant Temporal's scheduler reaches).
      [
        'Europe/London',
        '30 1 * * *',
        '2027-10-30T00:00:00Z',
        '2027-11-02T00:00:00Z',
        ['2027-10-30T00:30:00.000Z', '2027-10-31T01:30:00.000Z', '2027-11-01T01:30:00.000Z'],
      ],
      [
        'Europe/London',
        '30 * * * *',
        '2027-10-30T23:00:00Z',
        '2027-10-31T04:00:00Z',
        [
          '2027-10-30T23:30:00.000Z',
          '2027-10-31T00:30:00.000Z',
          '2027-10-31T02:30:00.000Z',
          '2027-10-31T03:30:00.000Z',
        ],
      ],
    ];

    it.each(CASES)(
      '%s %s from %s to %s matches exactly the written occurrences',
      async (zone, cron, from, to, expected) => {
        const { api } = await tenant();
        // Disabled: its Temporal Schedule is paused, nothing fires, no quota slot.
        const schedule = await created(api, { cron, timezone: zone, enabled: false });
        const matched = await matchingTimes(schedule.schedule_id, from, to);
        const seen = new Set<string>();
        const occurrences = matched.filter((t) => {
          const wall = wallTimeOf(cron, zone, Date.parse(t));
          return !seen.has(wall) && seen.add(wall);
        });
        expect(occurrences).toEqual(expected);
        expect((await remove(api, schedule.schedule_id)).status).toBe(204);
      },
    );
  });

  it('records a repeated wall time once, at the first instant fired, and a moved one under its skipped time', async () => {
    const { api, tenantId } = await tenant();
    const [cron, timezone] = ['30 1,2 * * *', 'America/New_York'];
    const schedule = await created(api, { cron, timezone, enabled: false });
    const activities = createScheduleActivities({
      pool: h.pool,
      runsQueue: taskQueues(config.taskQueuePrefix).runs,
    });
    const fire = async (occurrence: string) =>
      (
        await activities.recordScheduleFire({
          scheduleId: schedule.schedule_id,
          tenantId,
          cron,
          timezone,
          occurrence,
        })
      ).outcome;
    // 01:30 EDT, then 01:30 EST, on 2027-11-07: Temporal fires both.
    expect(await fire('2027-11-07T05:30:00.000Z')).toBe('recorded');
    expect(await fire('2027-11-07T06:30:00.000Z')).toBe('already_recorded');
    // 02:30 on 2027-03-14 does not exist: it fires at 03:30 EDT.
    expect(await fire('2027-03-14T07:30:00.000Z')).toBe('recorded');
    const ledger = (await fires(api, schedule.schedule_id)).body.fires;
    expect(ledger.map((f) => [f.occurrence, f.wall_time, f.outcome])).toEqual([
      ['2027-11-07T05:30:00.000Z', '2027-11-07T01:30:00', 'skipped_disabled'],
      ['2027-03-14T07:30:00.000Z', '2027-03-14T02:30:00', 'skipped_disabled'],
    ]);
  });

  it('creates a schedule as one Temporal Schedule with its spec, policies and search attributes', async () => {
    const { api, tenantId } = await tenant();
    const payload = { report: 'daily', n: [1, 2] };
    const schedule = await created(api, {
      cron: '15 6 * * MON-FRI',
      timezone: 'Europe/London',
      payload,
      labels: { team: 'ops' },
    });
    expect(schedule).toMatchObject({
      cron: '15 6 * * MON-FRI',
      timezone: 'Europe/London',
      payload,
      labels: { team: 'ops' },
      enabled: true,
    });
    expect(Date.parse(schedule.next_fire_at!)).toBeGreaterThan(Date.now());
    const description = await temporal.schedule
      .getHandle(scheduleTemporalId(schedule.schedule_id))
      .describe();
    expect(description.spec.timezone).toBe('Europe/London');
    expect(description.policies.overlap).toBe(ScheduleOverlapPolicy.ALLOW_ALL);
    expect(description.policies.catchupWindow).toBe(24 * HOUR_MS);
    expect(description.state.paused).toBe(false);
    expect(description.action).toMatchObject({
      workflowType: 'scheduleFireWorkflow',
      workflowId: scheduleFireWorkflowIdBase(schedule.schedule_id),
      args: [
        {
          scheduleId: schedule.schedule_id,
          tenantId,
          cron: '15 6 * * MON-FRI',
          timezone: 'Europe/London',
        },
      ],
    });
    expect(description.typedSearchAttributes?.get(TENANT_ID)).toBe(tenantId);
    expect(description.typedSearchAttributes?.get(SERVICE)).toBe('runs');
    expect(description.info.nextActionTimes[0]?.toISOString()).toBe(schedule.next_fire_at);

    const listed = await api.call<{ schedules: ScheduleBody[] }>(
      'GET',
      `${S}?label_filter=team=ops`,
    );
    conforms('GET', S, listed);
    expect(listed.body.schedules.map((s) => [s.schedule_id, s.next_fire_at, s.payload])).toEqual([
      [schedule.schedule_id, schedule.next_fire_at, undefined],
    ]);
    expect((await get(api, schedule.schedule_id)).body).toEqual(schedule);

    // cron, timezone, payload and labels may change: the Temporal Schedule follows.
    const changed = await patch(api, schedule.schedule_id, {
      cron: '0 12 * * *',
      timezone: 'UTC',
      payload: 7,
    });
    expect([
      changed.status,
      changed.body.cron,
      changed.body.timezone,
      changed.body.payload,
    ]).toEqual([200, '0 12 * * *', 'UTC', 7]);
    expect(new Date(changed.body.next_fire_at!).getUTCHours()).toBe(12);
    const after = await temporal.schedule
      .getHandle(scheduleTemporalId(schedule.schedule_id))
      .describe();
    expect(after.spec.timezone).toBe('UTC');
    expect(after.action).toMatchObject({ args: [{ cron: '0 12 * * *', timezone: 'UTC' }] });
    expect(after.info.nextActionTimes[0]?.toISOString()).toBe(changed.body.next_fire_at);
  });

  it('refuses a cron that is not five fields of the grammar (422 invalid_cron) and a zone that is not IANA (422 invalid_timezone)', async () => {
    const { api } = await tenant();
    for (const cron of [
      '* * * * * *',
      '0 * * *',
      '@hourly',
      '@every 1h',
      '60 * * * *',
      '0 24 * * *',
      '0 0 0 * *',
      '0 0 * 13 *',
      '0 0 * * 7',
      '5/15 * * * *',
      'CRON_TZ=UTC 0 * * * *',
      '0 0 L * *',
      '0 0 ? * *',
    ])
      expect([
        cron,
        (await create(api, { cron, timezone: 'UTC' })).body.detail?.split(':')[0],
      ]).toEqual([cron, 'invalid_cron']);
    expect((await create(api, { cron: '60 * * * *', timezone: 'UTC' })).body).toEqual({
      detail: "invalid_cron: minute '60' is not *, */step, n, a-b or a-b/step within 0-59",
    });
    for (const timezone of ['Mars/Olympus', 'EST5EDT6', '', 'America/New York'])
      expect([timezone, (await create(api, { cron: '0 * * * *', timezone })).status]).toEqual([
        timezone,
        422,
      ]);
    expect((await create(api, { cron: '0 * * * *', timezone: 'Mars/Olympus' })).body).toEqual({
      detail: 'invalid_timezone',
    });
    // At the edges of each field, names, lists, ranges and steps.
    for (const cron of ['59 23 31 12 6', '0 0 1 1 0', '*/15 9-17/2 1,15 JAN-mar sun,SAT'])
      expect(
        (await created(api, { cron, timezone: 'America/New_York', enabled: false })).cron,
      ).toBe(cron);
    expect((await api.call<ScheduleBody>('GET', `${S}?limit=101`)).status).toBe(422);
  });

  it('keeps a zone spelled as the tz database spells it, links included, in the row and in Temporal; any other spelling is 422 invalid_timezone', async () => {
    const { api } = await tenant();
    for (const timezone of ['Etc/UTC', 'US/Eastern', 'Etc/GMT+5', 'Asia/Calcutta']) {
      const schedule = await created(api, { cron: '0 12 * * *', timezone, enabled: false });
      expect([timezone, schedule.timezone]).toEqual([timezone, timezone]);
      expect((await get(api, schedule.schedule_id)).body.timezone).toBe(timezone);
      const description = await temporal.schedule
        .getHandle(scheduleTemporalId(schedule.schedule_id))
        .describe();
      expect([timezone, description.spec.timezone]).toEqual([timezone, timezone]);
      // The Temporal server reads the name too: noon there, each day.
      const times = await matchingTimes(
        schedule.schedule_id,
        '2027-01-10T00:00:00Z',
        '2027-01-12T00:00:00Z',
      );
      expect([timezone, times.length]).toEqual([timezone, 2]);
    }
    expect(
      await matchingTimes(
        (await created(api, { cron: '0 12 * * *', timezone: 'US/Eastern', enabled: false }))
          .schedule_id,
        '2027-01-10T00:00:00Z',
        '2027-01-11T00:00:00Z',
      ),
    ).toEqual(['2027-01-10T17:00:00.000Z']);
    for (const timezone of ['europe/berlin', 'etc/utc', 'utc', 'US/EASTERN', 'UTC+1', '+01:00'])
      expect([timezone, (await create(api, { cron: '0 * * * *', timezone })).body]).toEqual([
        timezone,
        { detail: 'invalid_timezone' },
      ]);
    const schedule = await created(api, { cron: '0 12 * * *', timezone: 'UTC', enabled: false });
    expect((await patch(api, schedule.schedule_id, { timezone: 'europe/berlin' })).body).toEqual({
      detail: 'invalid_timezone',
    });
    expect((await patch(api, schedule.schedule_id, { timezone: 'Etc/UTC' })).body.timezone).toBe(
      'Etc/UTC',
    );
  });

  it('counts enabled schedules against max_schedules: disabling frees the slot, enabling needs one (429 schedule_quota_exceeded)', async () => {
    const { api } = await tenant();
    expect(
      (await api.call<{ max_schedules: number }>('GET', '/api/v1/tenant/quotas')).body
        .max_schedules,
    ).toBe(100);
    await api.call('PUT', '/api/v1/tenant/quotas', { max_schedules: 1 });
    const first = await created(api, { cron: '0 0 * * *', timezone: 'UTC' });
    const over = await create(api, { cron: '0 0 * * *', timezone: 'UTC' });
    expect([over.status, over.body.detail]).toEqual([429, 'schedule_quota_exceeded']);
    const second = await created(api, { cron: '0 0 * * *', timezone: 'UTC', enabled: false });
    expect(second.next_fire_at).toBeNull();
    const enabling = await patch(api, second.schedule_id, { enabled: true });
    expect([enabling.status, enabling.body.detail]).toEqual([429, 'schedule_quota_exceeded']);
    expect((await patch(api, first.schedule_id, { enabled: false })).body.enabled).toBe(false);
    const enabled = await patch(api, second.schedule_id, { enabled: true });
    expect([enabled.status, enabled.body.enabled, enabled.body.next_fire_at === null]).toEqual([
      200,
      true,
      false,
    ]);
    expect(
      (await temporal.schedule.getHandle(scheduleTemporalId(first.schedule_id)).describe()).state
        .paused,
    ).toBe(true);
    expect(
      (await temporal.schedule.getHandle(scheduleTemporalId(second.schedule_id)).describe()).state
        .paused,
    ).toBe(false);
  });

  it('after a 3-hour outage (a backfill of the last 3 hours) records each hourly occurrence exactly once with its true delay', async () => {
    const { api } = await tenant();
    const schedule = await created(api, { cron: '0 * * * *', timezone: 'UTC' });
    const now = Date.now();
    const handle = temporal.schedule.getHandle(scheduleTemporalId(schedule.schedule_id));
    const window = {
      start: new Date(now - 3 * HOUR_MS),
      end: new Date(now),
      overlap: ScheduleOverlapPolicy.ALLOW_ALL,
    };
    await handle.backfill([window]);
    const top = Math.floor(now / HOUR_MS) * HOUR_MS;
    const expected = [0, 1, 2].map((k) => new Date(top - k * HOUR_MS).toISOString());
    const ledgerRows = () =>
      h.pool.oneFirst(sql.unsafe`
        SELECT count(*)::int FROM runs.schedule_fires WHERE schedule_id = ${schedule.schedule_id}`);
    // Polled in the database: polling the API would meet the tenant's rate limit.
    await eventually(async () => ((await ledgerRows()) === 3 ? true : undefined), 60_000);
    const ledger = (await fires(api, schedule.schedule_id)).body.fires;
    expect(ledger.map((f) => f.occurrence)).toEqual(expected);
    for (const fire of ledger) {
      const lateness = (Date.parse(fire.fired_at) - Date.parse(fire.occurrence)) / 1000;
      expect(fire.fire_delay_seconds).toBeCloseTo(lateness, 2);
      expect(fire.fire_delay_seconds).toBeGreaterThanOrEqual(
        (now - Date.parse(fire.occurrence)) / 1000 - 1,
      );
      expect(fire.fire_delay_seconds).toBeLessThan((now - Date.parse(fire.occurrence)) / 1000 + 60);
      expect(fire.outcome).toBe('enqueued');
      expect(fire.deliveries_enqueued).toBe(0);
    }
    // The same window again: the occurrences are recorded already; nothing new.
    await handle.backfill([window]);
    await eventually(async () => {
      const runs = await temporal.workflow.count(
        `WorkflowId STARTS_WITH "${scheduleFireWorkflowIdBase(schedule.schedule_id)}" AND ExecutionStatus = "Completed"`,
      );
      return runs.count >= 6 ? true : undefined;
    }, 60_000);
    expect((await fires(api, schedule.schedule_id)).body.fires).toEqual(ledger);
    const notices: unknown = await h.pool.oneFirst(sql.unsafe`
      SELECT count(*)::int FROM runs.webhook_notices WHERE resource_type = 'schedule' AND resource_id = ${schedule.schedule_id}`);
    expect(notices).toBe(3);
  });

  it('on an every-minute cron delivers schedule.fired to a real HTTPS receiver; disable pauses it, enable resumes it, DELETE removes it all', async () => {
    const { api, tenantId } = await tenant();
    const at = `/${ulid()}`;
    const inline = `/${ulid()}`;
    const endpoint = await api.call<{ endpoint_id: string }>('POST', '/api/v1/webhooks', {
      url: `${receiver.url}${at}`,
      events: ['schedule.fired'],
    });
    expect(endpoint.status).toBe(201);
    const schedule = await created(api, {
      cron: '* * * * *',
      timezone: 'Asia/Kolkata',
      payload: { hello: 'world' },
      labels: { k: 'v' },
      // Its own inline webhook: reached by this schedule's schedule.fired only.
      webhook: { url: `${receiver.url}${inline}`, events: ['schedule.fired'] },
    });
    const arrivedAt = (path: string) => receiver.requests.filter((r) => r.path === path);
    const [request] = await eventually(() => {
      const arrived = arrivedAt(at);
      return Promise.resolve(arrived.length >= 1 ? arrived : undefined);
    }, 75_000);
    const [inlineRequest] = await eventually(() => {
      const arrived = arrivedAt(inline);
      return Promise.resolve(arrived.length >= 1 ? arrived : undefined);
    }, 10_000);
    expect(envelopeOf(inlineRequest!).resource).toEqual({
      type: 'schedule',
      id: schedule.schedule_id,
    });
    const envelope = envelopeOf(request!);
    expect(envelope).toMatchObject({
      event_type: 'schedule.fired',
      tenant_id: tenantId,
      resource: { type: 'schedule', id: schedule.schedule_id },
    });
    const [fire] = (await fires(api, schedule.schedule_id)).body.fires;
    expect(fire).toMatchObject({
      outcome: 'enqueued',
      deliveries_enqueued: 2,
      event_id: expect.any(String) as unknown,
    });
    expect(new Date(fire!.occurrence).getUTCSeconds()).toBe(0);
    expect(fire!.fire_delay_seconds).toBeLessThan(10);
    expect(envelope.data).toEqual({
      schedule_id: schedule.schedule_id,
      occurrence: fire!.occurrence,
      wall_time: fire!.wall_time,
      fired_at: fire!.fired_at,
      fire_delay_seconds: fire!.fire_delay_seconds,
      labels: { k: 'v' },
      payload: { hello: 'world' },
    });
    const fireId = `${scheduleFireWorkflowIdBase(schedule.schedule_id)}-${fire!.occurrence.replace('.000Z', 'Z')}`;
    const fireExecution = await temporal.workflow.getHandle(fireId).describe();
    expect(fireExecution.typedSearchAttributes.get(TENANT_ID)).toBe(tenantId);
    recordedFire = fireId;

    const handle = temporal.schedule.getHandle(scheduleTemporalId(schedule.schedule_id));
    const disabled = await patch(api, schedule.schedule_id, { enabled: false });
    expect([disabled.status, disabled.body.enabled, disabled.body.next_fire_at]).toEqual([
      200,
      false,
      null,
    ]);
    expect((await handle.describe()).state.paused).toBe(true);
    // The ledger is kept while disabled.
    const kept = (await fires(api, schedule.schedule_id)).body.fires;
    expect(kept.length).toBeGreaterThanOrEqual(1);
    // A fire that runs while the row is disabled (an operator's trigger of the paused Temporal
    // Schedule) is recorded skipped_disabled: no notice, nothing delivered.
    const delivered = receiver.requests.filter((r) => r.path === at).length;
    // A trigger stands for the second it is made in (Temporal truncates it): one made in the
    // second of the last occurrence would be that occurrence, already recorded.
    await sleepMs(1_100);
    await handle.trigger(ScheduleOverlapPolicy.ALLOW_ALL);
    const skipped = await eventually(async () => {
      // Read straight from the ledger: polling the API would meet the tenant's rate limit.
      const rows = (await h.pool.any(sql.unsafe`
        SELECT outcome, deliveries_enqueued, event_id FROM runs.schedule_fires
        WHERE schedule_id = ${schedule.schedule_id}`)) as Partial<FireBody>[];
      return rows.find((f) => f.outcome === 'skipped_disabled');
    }, 30_000);
    expect(skipped).toMatchObject({ deliveries_enqueued: 0, event_id: null });
    await sleepMs(1_500);
    expect(receiver.requests.filter((r) => r.path === at).length).toBe(delivered);
    const enabled = await patch(api, schedule.schedule_id, { enabled: true });
    expect([enabled.body.enabled, enabled.body.next_fire_at === null]).toEqual([true, false]);
    expect((await handle.describe()).state.paused).toBe(false);

    expect((await remove(api, schedule.schedule_id)).status).toBe(204);
    await expect(handle.describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
    expect((await get(api, schedule.schedule_id)).status).toBe(404);
    expect((await fires(api, schedule.schedule_id)).status).toBe(404);
    expect((await remove(api, schedule.schedule_id)).status).toBe(404);
    const rows: unknown = await h.pool.oneFirst(sql.unsafe`
      SELECT count(*)::int FROM runs.schedule_fires WHERE schedule_id = ${schedule.schedule_id}`);
    expect(rows).toBe(0);
  });

  it('checked a real answer of every schedule operation against the document', () => {
    const documented = Object.entries(openApiDocument.paths)
      .filter(([p]) => p.startsWith(S))
      .flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
    expect(documented.length).toBe(6);
    expect(documented.filter((op) => !checked.has(op))).toEqual([]);
  });
});
