import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  WorkflowFailedError,
  type Client,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { createTemporalClient } from '../../../platform/temporal';
import { openApiDocument } from '../../../api/runs/openapi';
import { runAdmin } from '../../../cli/runs';
import { sql } from '../../../db/pool';
import { SERVICE, TENANT_ID } from '../../../contracts/shared/search-attributes';
import { dagWorkflowId } from '../../../contracts/runs/dag';
import {
  TRIGGER_FIRE_WORKFLOW_TYPE,
  triggerFireWorkflowIdBase,
  triggerTemporalId,
} from '../../../contracts/runs/trigger-fire';
import { createTriggerActivities } from '../../../activities/runs/triggers';
import { createRunsMeteringIfOn } from '../../../services/runs/metering';
import { eventually } from '../../support/services';
import { runsConformance } from './conformance';
import { ALL_WORKFLOW_PERMISSIONS, dagClient, shNode } from './dag-support';
import { IMAGE, client, config, newTenant, startHarness, type Harness } from './support';

/**
 * Template triggers against the real stack: each one a Temporal Schedule trigger/<trigger_id>
 * whose fires (trigger-fire/<trigger_id>-<occurrence>) launch the template as the key that made
 * the trigger and start the DAG as the child dag/<workflow_id>. Fires are made now with the
 * Temporal Schedule's trigger (an operator's "trigger"), except one real every-minute cron,
 * made first so that its wait overlaps the other tests. A fire that cannot launch disables the
 * trigger; its fire pauses the Temporal Schedule (a note naming the reason) and fails
 * (TriggerDisabled). Exactly once per occurrence is asserted on the activity itself. With
 * RECORD_RUN_HISTORIES=1 one launched fire's history is saved as
 * test/histories/runs/trigger-fire.json.
 */
const HISTORIES = path.resolve(__dirname, '../../histories/runs');
const PERMISSIONS = `${ALL_WORKFLOW_PERMISSIONS},svc_template_write,svc_template_read,svc_template_run`;
const T = '/api/v1/templates';
const TR = '/api/v1/triggers';
const W = '/api/v1/workflows';
/** How long a failed fire may take to pause its Temporal Schedule. */
const PAUSE_WAIT_MS = 20_000;
/** The every-minute cron's first fire: at most 130 s after the trigger was made. */
const CRON_WAIT_MS = 130_000;
jest.setTimeout(180_000);

type Api = ReturnType<typeof client>;
type Body = Record<string, unknown>;
interface TriggerBody {
  trigger_id: string;
  template_id: string;
  version: number | null;
  cron: string;
  timezone: string;
  params: Record<string, string>;
  secret_params: string[];
  enabled: boolean;
  disabled_reason: string | null;
  disabled_detail: string | null;
  created_at: string;
  updated_at: string;
  next_fire_at: string | null;
  detail?: string;
}
interface FireBody {
  occurrence: string;
  wall_time: string;
  fired_at: string;
  fire_delay_seconds: number;
  outcome: string;
  workflow_id: string | null;
  error: string | null;
}
interface TriggerList {
  triggers: TriggerBody[];
  limit: number;
  offset: number;
  detail?: string;
}

const sleepMs = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** `promise`, or a rejection after `ms`: no wait in this file is unbounded. */
const within = <V>(promise: Promise<V>, ms: number, what: string): Promise<V> =>
  Promise.race([
    promise,
    new Promise<V>((_, reject) =>
      setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms).unref(),
    ),
  ]);
/** The fire workflow of an occurrence: Temporal appends it to the action's id, without millis. */
const fireIdOf = (triggerId: string, occurrence: string) =>
  `${triggerFireWorkflowIdBase(triggerId)}-${occurrence.replace(/\.\d{3}Z$/, 'Z')}`;

/** An approval gate: nobody approves it here, so a launched DAG runs no container. */
const gate = (ref = 'gate') => ({ ref, type: 'approval' });
const step = (ref: string, extra: Body = {}) => ({
  ref,
  image: IMAGE,
  command: ['true'],
  ...extra,
});
const guarded = (steps: Body[] = []) => ({
  nodes: [gate(), ...steps],
  edges: steps.map((s) => ({ from: 'gate', to: s.ref })),
});
const param = (name: string, extra: Body = {}) => ({ name, type: 'string', ...extra });

describe('runs API: template triggers', () => {
  let h: Harness;
  let temporal: Client;
  /** Every trigger made: its Temporal Schedule goes after the file. */
  const made: string[] = [];
  /** Every tenant made: the DAG workflows their triggers launched are terminated after. */
  const tenants: string[] = [];
  let recordedFire: string | null = null;
  const { conforms, checked } = runsConformance();
  /** The every-minute trigger, made by the first test and awaited by a later one. */
  let minute:
    { api: Api; key: string; trigger: TriggerBody; templateId: string; madeAt: number } | undefined;

  beforeAll(async () => {
    h = await startHarness();
    temporal = createTemporalClient(config);
  });
  afterAll(async () => {
    if (process.env.RECORD_RUN_HISTORIES === '1' && recordedFire) {
      const handle = temporal.workflow.getHandle(recordedFire);
      const history = historyToJSON(await handle.fetchHistory());
      fs.writeFileSync(path.join(HISTORIES, 'trigger-fire.json'), history);
    }
    // Tests share a namespace: every Temporal Schedule made here goes.
    for (const id of made)
      await temporal.schedule
        .getHandle(triggerTemporalId(id))
        .delete()
        .catch(() => undefined);
    const launched = h
      ? ((await h.pool.anyFirst(sql.unsafe`
          SELECT workflow_id FROM runs.workflows
          WHERE tenant_id = ANY(${sql.array(tenants, 'text')})
            AND state NOT IN ('succeeded', 'failed', 'cancelled')`)) as string[])
      : [];
    await h?.close();
    await Promise.all(
      launched.map((id) =>
        temporal.workflow
          .getHandle(dagWorkflowId(id))
          .terminate('the triggers test is over')
          .catch(() => undefined),
      ),
    );
    await temporal?.connection.close();
  });

  const tenant = async (permissions = PERMISSIONS) => {
    const t = await newTenant(h.pool, { permissions });
    tenants.push(t.tenantId);
    return { ...t, api: client(h.service.url, t.key) };
  };
  /** Another key of the tenant, with its own permissions. */
  const keyOf = async (tenantId: string, permissions: string) => {
    const { json } = await runAdmin(
      ['key', 'create', '--tenant', tenantId, '--permissions', permissions],
      h.pool,
    );
    const out = json as { key: string; key_id: string };
    return { key: out.key, keyId: out.key_id, api: client(h.service.url, out.key) };
  };
  const registered = async (api: Api, body: Body) => {
    const reply = await api.call<{ template_id: string; detail?: string }>('POST', T, body);
    expect([reply.status, reply.body.detail]).toEqual([201, undefined]);
    return reply.body.template_id;
  };
  const create = async (api: Api, ref: string, body: Body) => {
    const reply = await api.call<TriggerBody>('POST', `${T}/${ref}/triggers`, body);
    conforms('POST', `${T}/{ref}/triggers`, reply);
    if (reply.status === 201) made.push(reply.body.trigger_id);
    return reply;
  };
  const created = async (api: Api, ref: string, body: Body) => {
    const reply = await create(api, ref, body);
    expect([reply.status, reply.body.detail]).toEqual([201, undefined]);
    return reply.body;
  };
  const get = async (api: Api, id: string) => {
    const reply = await api.call<TriggerBody>('GET', `${TR}/${id}`);
    conforms('GET', `${TR}/{trigger_id}`, reply);
    return reply;
  };
  const listOf = async (api: Api, ref: string, query = '') => {
    const reply = await api.call<TriggerList>('GET', `${T}/${ref}/triggers${query}`);
    conforms('GET', `${T}/{ref}/triggers`, reply);
    return reply;
  };
  const listAll = async (api: Api, query = '') => {
    const reply = await api.call<TriggerList>('GET', `${TR}${query}`);
    conforms('GET', TR, reply);
    return reply;
  };
  const patch = async (api: Api, id: string, body: Body) => {
    const reply = await api.call<TriggerBody>('PATCH', `${TR}/${id}`, body);
    conforms('PATCH', `${TR}/{trigger_id}`, reply);
    return reply;
  };
  const patched = async (api: Api, id: string, body: Body) => {
    const reply = await patch(api, id, body);
    expect([reply.status, reply.body.detail]).toEqual([200, undefined]);
    return reply.body;
  };
  const remove = async (api: Api, id: string) => {
    const reply = await api.call('DELETE', `${TR}/${id}`);
    conforms('DELETE', `${TR}/{trigger_id}`, reply);
    return reply;
  };
  const fires = async (api: Api, id: string, query = '') => {
    const reply = await api.call<{ fires: FireBody[]; limit: number; offset: number }>(
      'GET',
      `${TR}/${id}/fires${query}`,
    );
    conforms('GET', `${TR}/{trigger_id}/fires`, reply);
    return reply;
  };
  const setQuotas = async (api: Api, quotas: Body) => {
    const reply = await api.call('PUT', '/api/v1/tenant/quotas', quotas);
    expect([reply.status, reply.body]).toEqual([200, expect.anything()]);
  };
  const scheduleOf = (id: string) => temporal.schedule.getHandle(triggerTemporalId(id));
  const ledgerRows = async (id: string) =>
    (await h.pool.oneFirst(sql.unsafe`
      SELECT count(*)::int FROM runs.trigger_fires WHERE trigger_id = ${id}`)) as number;
  const workflowsOf = async (id: string) =>
    (await h.pool.any(sql.unsafe`
      SELECT workflow_id, template_id,
             to_char(trigger_occurrence AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
               AS trigger_occurrence
      FROM runs.workflows WHERE trigger_id = ${id} ORDER BY trigger_occurrence`)) as {
      workflow_id: string;
      template_id: string;
      trigger_occurrence: string;
    }[];
  /** The version a template run was launched at (its template.run audit record). */
  const versionLaunched = async (workflowId: string) =>
    (await h.pool.oneFirst(sql.unsafe`
      SELECT (detail->>'version')::int FROM runs.audit_records
      WHERE action = 'template.run' AND detail->>'workflow_id' = ${workflowId}`)) as number;

  const lastTriggered = new Map<string, number>();
  /**
   * Fires the trigger now through its Temporal Schedule (even paused) and answers the fire it
   * recorded. Temporal names a trigger by the current second: two of one trigger within a second
   * would be one occurrence, so they are kept more than a second apart.
   */
  const fireNow = async (api: Api, id: string): Promise<FireBody> => {
    const since = Date.now() - (lastTriggered.get(id) ?? 0);
    if (since < 1_100) await sleepMs(1_100 - since);
    const before = await ledgerRows(id);
    await scheduleOf(id).trigger(ScheduleOverlapPolicy.ALLOW_ALL);
    lastTriggered.set(id, Date.now());
    // Polled in the database: polling the API would meet the tenant's rate limit.
    await eventually(async () => ((await ledgerRows(id)) > before ? true : undefined), 30_000);
    const [fire] = (await fires(api, id)).body.fires;
    return fire!;
  };
  /** The fire's workflow ended: its description once it is closed. */
  const fireClosed = (fireId: string) =>
    eventually(async () => {
      const d = await temporal.workflow.getHandle(fireId).describe();
      return d.status.name === 'RUNNING' ? undefined : d;
    }, 30_000);
  /**
   * A fire that could not launch: recorded failed with the refusal's detail, the trigger disabled
   * with its reason, the Temporal Schedule paused by the fire with a note naming the reason, and
   * the fire workflow failed (non-retryable TriggerDisabled).
   */
  const firedAndDisabled = async (api: Api, id: string, reason: string, detail: string) => {
    const fire = await fireNow(api, id);
    expect(fire).toMatchObject({ outcome: 'failed', workflow_id: null, error: detail });
    expect((await get(api, id)).body).toMatchObject({
      enabled: false,
      disabled_reason: reason,
      disabled_detail: detail,
      next_fire_at: null,
    });
    const failure = await within(
      temporal.workflow
        .getHandle(fireIdOf(id, fire.occurrence))
        .result()
        .then(
          () => null,
          (error: unknown) => error,
        ),
      30_000,
      'the fire workflow closing',
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const cause = (failure as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect([cause.type, cause.nonRetryable]).toEqual(['TriggerDisabled', true]);
    const paused = await eventually(
      async () => {
        const { state } = await scheduleOf(id).describe();
        return state.paused ? state : undefined;
      },
      PAUSE_WAIT_MS,
      500,
    );
    expect(paused.note).toBe(`disabled: ${reason} (${detail})`);
    return fire;
  };

  it('creates a trigger as one Temporal Schedule trigger/<trigger_id>: its spec, ALLOW_ALL, pause on failure, search attributes and the fire action', async () => {
    // First, the every-minute trigger a later test waits for (a real cron fire).
    {
      const { api, key } = await tenant();
      const templateId = await registered(api, {
        name: 'minute-echo',
        params: [param('greeting', { default: 'hello' })],
        definition: {
          nodes: [
            shNode('say', 'echo \'{"greeting":"${{ greeting }}"}\'', { timeout_seconds: 60 }),
          ],
        },
      });
      const madeAt = Date.now();
      const trigger = await created(api, 'minute-echo', {
        cron: '* * * * *',
        timezone: 'Asia/Kolkata',
        params: { greeting: 'hi' },
      });
      expect(trigger).toMatchObject({ template_id: templateId, enabled: true, version: null });
      const next = Date.parse(trigger.next_fire_at!);
      expect(next - madeAt).toBeLessThanOrEqual(61_000);
      expect(new Date(next).getUTCSeconds()).toBe(0);
      minute = { api, key, trigger, templateId, madeAt };
    }

    const { api, tenantId } = await tenant();
    const templateId = await registered(api, {
      name: 'nightly',
      params: [param('region', { type: 'enum', enum: ['eu', 'us'], required: true })],
      definition: guarded([step('a', { env: { REGION: '${{ region }}' } })]),
    });
    const trigger = await created(api, templateId, {
      cron: '15 6 * * MON-FRI',
      timezone: 'Europe/London',
      params: { region: 'eu' },
    });
    expect(trigger).toEqual({
      trigger_id: trigger.trigger_id,
      template_id: templateId,
      version: null,
      cron: '15 6 * * MON-FRI',
      timezone: 'Europe/London',
      params: { region: 'eu' },
      secret_params: [],
      enabled: true,
      disabled_reason: null,
      disabled_detail: null,
      created_at: trigger.created_at,
      updated_at: trigger.created_at,
      next_fire_at: trigger.next_fire_at,
    });
    expect(Date.parse(trigger.next_fire_at!)).toBeGreaterThan(Date.now());
    const description = await scheduleOf(trigger.trigger_id).describe();
    expect(description.spec.timezone).toBe('Europe/London');
    expect(description.policies.overlap).toBe(ScheduleOverlapPolicy.ALLOW_ALL);
    expect(description.policies.pauseOnFailure).toBe(true);
    expect(description.state.paused).toBe(false);
    expect(description.action).toMatchObject({
      workflowType: TRIGGER_FIRE_WORKFLOW_TYPE,
      workflowId: triggerFireWorkflowIdBase(trigger.trigger_id),
      args: [
        {
          triggerId: trigger.trigger_id,
          tenantId,
          cron: '15 6 * * MON-FRI',
          timezone: 'Europe/London',
        },
      ],
    });
    expect(TRIGGER_FIRE_WORKFLOW_TYPE).toBe('triggerFireWorkflow');
    expect(description.typedSearchAttributes?.get(TENANT_ID)).toBe(tenantId);
    expect(description.typedSearchAttributes?.get(SERVICE)).toBe('runs');
    expect(description.info.nextActionTimes[0]?.toISOString()).toBe(trigger.next_fire_at);
    expect((await get(api, trigger.trigger_id)).body).toEqual(trigger);

    // Made disabled: its Temporal Schedule is paused, and it has no next fire.
    const off = await created(api, 'nightly', {
      cron: '0 0 * * *',
      timezone: 'UTC',
      params: { region: 'us' },
      version: 1,
      enabled: false,
    });
    expect([off.enabled, off.version, off.next_fire_at, off.disabled_reason]).toEqual([
      false,
      1,
      null,
      null,
    ]);
    expect((await scheduleOf(off.trigger_id).describe()).state.paused).toBe(true);
  });

  it('lists a template’s triggers (by id or name) and all of the tenant’s, newest first, paged; another tenant’s or any other id is 404 trigger_not_found', async () => {
    const { api } = await tenant();
    const a = await registered(api, { name: 'tpl-a', definition: guarded() });
    const b = await registered(api, { name: 'tpl-b', definition: guarded() });
    const ids: string[] = [];
    for (const ref of [a, b, 'tpl-a'])
      ids.push(
        (await created(api, ref, { cron: '0 3 * * *', timezone: 'UTC', enabled: false }))
          .trigger_id,
      );
    const [a1, b1, a2] = ids;

    const ofA = await listOf(api, 'tpl-a');
    expect([ofA.status, ofA.body.limit, ofA.body.offset]).toEqual([200, 50, 0]);
    expect(ofA.body.triggers.map((t) => t.trigger_id)).toEqual([a2, a1]);
    expect((await listOf(api, a.toLowerCase())).body.triggers.map((t) => t.trigger_id)).toEqual([
      a2,
      a1,
    ]);
    expect((await listOf(api, b)).body.triggers.map((t) => t.trigger_id)).toEqual([b1]);
    const all = await listAll(api);
    expect([all.status, all.body.limit, all.body.offset]).toEqual([200, 50, 0]);
    expect(all.body.triggers.map((t) => t.trigger_id)).toEqual([a2, b1, a1]);
    expect(all.body.triggers[1]).toEqual((await get(api, b1!)).body);
    expect(
      (await listAll(api, '?limit=1&offset=1')).body.triggers.map((t) => t.trigger_id),
    ).toEqual([b1]);
    expect(
      (await listOf(api, 'tpl-a', '?limit=1&offset=1')).body.triggers.map((t) => t.trigger_id),
    ).toEqual([a1]);
    expect((await listAll(api, '?limit=100')).status).toBe(200);
    expect((await listAll(api, '?limit=101')).status).toBe(422);
    expect((await listOf(api, 'tpl-a', '?limit=101')).status).toBe(422);
    expect(await listOf(api, 'no-such-template')).toMatchObject({
      status: 404,
      body: { detail: 'template_not_found' },
    });

    const other = await tenant();
    expect((await listAll(other.api)).body.triggers).toEqual([]);
    expect((await listOf(other.api, 'tpl-a')).status).toBe(404);
    for (const id of [
      a1!,
      a1!.toLowerCase(),
      'nope',
      '01J00000000000000000000000',
      'x'.repeat(200),
    ])
      for (const reply of [
        await get(other.api, encodeURIComponent(id)),
        await fires(other.api, encodeURIComponent(id)),
        await patch(other.api, encodeURIComponent(id), { enabled: false }),
        await remove(other.api, encodeURIComponent(id)),
      ])
        expect([id, reply.status, (reply.body as { detail?: string }).detail]).toEqual([
          id,
          404,
          'trigger_not_found',
        ]);
    for (const id of ['nope', 'x'.repeat(200)])
      expect((await get(api, id)).body).toEqual({ detail: 'trigger_not_found' });
    expect((await get(api, a1!)).body.enabled).toBe(false);
  });

  it('refuses at creation: template_not_found, template_version_not_found, invalid_cron, invalid_timezone, unknown/missing/invalid_template_param, a bad body; nothing is kept', async () => {
    const { api, tenantId } = await tenant();
    const templateId = await registered(api, {
      name: 'checked',
      params: [
        param('region', { type: 'enum', enum: ['eu', 'us'], required: true }),
        param('tag', { pattern: '[a-z]{2}' }),
      ],
      definition: guarded([step('a', { env: { REGION: '${{ region }}', TAG: '${{ tag }}' } })]),
    });
    const good = { cron: '0 * * * *', timezone: 'UTC', params: { region: 'eu' } };
    const refusal = async (ref: string, body: Body) => {
      const reply = await create(api, ref, body);
      return [reply.status, reply.body.detail];
    };
    expect(await refusal('no-such-template', good)).toEqual([404, 'template_not_found']);
    expect(await refusal('01J00000000000000000000000', good)).toEqual([404, 'template_not_found']);
    expect(await refusal(templateId, { ...good, version: 2 })).toEqual([
      404,
      'template_version_not_found',
    ]);
    expect(await refusal(templateId, { ...good, cron: '60 * * * *' })).toEqual([
      422,
      "invalid_cron: minute '60' is not *, */step, n, a-b or a-b/step within 0-59",
    ]);
    for (const cron of ['* * * * * *', '@hourly', '0 0 L * *', ''])
      expect([cron, (await refusal(templateId, { ...good, cron }))[0]]).toEqual([cron, 422]);
    expect((await create(api, templateId, { ...good, cron: '@hourly' })).body.detail).toMatch(
      /^invalid_cron/,
    );
    expect(await refusal(templateId, { ...good, timezone: 'Mars/Olympus' })).toEqual([
      422,
      'invalid_timezone',
    ]);
    expect(await refusal(templateId, { ...good, params: { region: 'eu', colour: 'red' } })).toEqual(
      [422, 'unknown_template_param:colour'],
    );
    expect(await refusal(templateId, { ...good, params: { tag: 'ab' } })).toEqual([
      422,
      'missing_template_param:region',
    ]);
    expect(await refusal(templateId, { ...good, params: {} })).toEqual([
      422,
      'missing_template_param:region',
    ]);
    expect(await refusal(templateId, { ...good, params: { region: 'asia' } })).toEqual([
      422,
      'invalid_template_param:region',
    ]);
    expect(await refusal(templateId, { ...good, params: { region: 'eu', tag: 'abc' } })).toEqual([
      422,
      'invalid_template_param:tag',
    ]);
    // The schema: cron and timezone required, values strings, version ≥ 1, no unknown field.
    for (const body of [
      { timezone: 'UTC', params: { region: 'eu' } },
      { cron: '0 * * * *', params: { region: 'eu' } },
      { ...good, params: { region: 3 } },
      { ...good, version: 0 },
      { ...good, version: 'latest' },
      { ...good, enabled: 'yes' },
      { ...good, colour: 'red' },
    ])
      expect([body, (await refusal(templateId, body))[0]]).toEqual([body, 422]);
    const kept: unknown = await h.pool.oneFirst(sql.unsafe`
      SELECT count(*)::int FROM runs.triggers WHERE tenant_id = ${tenantId}`);
    expect(kept).toBe(0);
    // At version 1 pinned, and unpinned, the same params are fine.
    expect((await created(api, 'checked', { ...good, version: 1 })).version).toBe(1);
    expect((await created(api, 'checked', { ...good, version: null })).version).toBeNull();
  });

  it('PATCH changes cron, timezone, params and version (checked as at creation): the row and the Temporal Schedule follow', async () => {
    const { api, tenantId } = await tenant();
    await registered(api, {
      name: 'patchable',
      params: [param('msg', { default: 'one' })],
      definition: guarded([step('a', { command: ['echo', '${{ msg }}'] })]),
    });
    const trigger = await created(api, 'patchable', { cron: '0 6 * * *', timezone: 'Asia/Tokyo' });
    expect(trigger.params).toEqual({});

    const changed = await patched(api, trigger.trigger_id, {
      cron: '0 12 * * *',
      timezone: 'UTC',
      params: { msg: 'two' },
    });
    expect(changed).toMatchObject({
      trigger_id: trigger.trigger_id,
      cron: '0 12 * * *',
      timezone: 'UTC',
      params: { msg: 'two' },
      version: null,
      enabled: true,
      created_at: trigger.created_at,
    });
    expect(changed.updated_at >= trigger.updated_at).toBe(true);
    expect(new Date(changed.next_fire_at!).getUTCHours()).toBe(12);
    const after = await scheduleOf(trigger.trigger_id).describe();
    expect(after.spec.timezone).toBe('UTC');
    expect(after.action).toMatchObject({
      args: [{ triggerId: trigger.trigger_id, tenantId, cron: '0 12 * * *', timezone: 'UTC' }],
    });
    expect(after.info.nextActionTimes[0]?.toISOString()).toBe(changed.next_fire_at);
    expect((await patched(api, trigger.trigger_id, { version: 1 })).version).toBe(1);
    expect((await patched(api, trigger.trigger_id, { version: null })).version).toBeNull();

    const refusal = async (body: Body) => {
      const reply = await patch(api, trigger.trigger_id, body);
      return [reply.status, reply.body.detail];
    };
    expect(await refusal({ cron: '0 0 * * 7' })).toEqual([
      422,
      expect.stringMatching(/^invalid_cron/),
    ]);
    expect(await refusal({ timezone: 'EST5EDT6' })).toEqual([422, 'invalid_timezone']);
    expect(await refusal({ params: { nope: 'x' } })).toEqual([422, 'unknown_template_param:nope']);
    expect(await refusal({ version: 7 })).toEqual([404, 'template_version_not_found']);
    for (const body of [{}, { colour: 'red' }, { version: 0 }, { enabled: 'no' }])
      expect([body, (await refusal(body))[0]]).toEqual([body, 422]);
    // Nothing of a refused PATCH was kept.
    expect((await get(api, trigger.trigger_id)).body).toMatchObject({
      cron: '0 12 * * *',
      timezone: 'UTC',
      params: { msg: 'two' },
      version: null,
    });
  });

  it('counts enabled triggers against max_triggers (429 trigger_quota_exceeded): disabling pauses and frees the slot, enabling needs one', async () => {
    const { api } = await tenant();
    expect(
      (await api.call<{ max_triggers: number }>('GET', '/api/v1/tenant/quotas')).body.max_triggers,
    ).toBe(100);
    expect((await api.call('PUT', '/api/v1/tenant/quotas', { max_triggers: -1 })).status).toBe(422);
    await setQuotas(api, { max_triggers: 1 });
    await registered(api, { name: 'counted', definition: guarded() });
    const body = { cron: '0 0 * * *', timezone: 'UTC' };
    const first = await created(api, 'counted', body);
    const over = await create(api, 'counted', body);
    expect([over.status, over.body.detail]).toEqual([429, 'trigger_quota_exceeded']);
    const second = await created(api, 'counted', { ...body, enabled: false });
    const enabling = await patch(api, second.trigger_id, { enabled: true });
    expect([enabling.status, enabling.body.detail]).toEqual([429, 'trigger_quota_exceeded']);
    const disabled = await patched(api, first.trigger_id, { enabled: false });
    expect([disabled.enabled, disabled.next_fire_at, disabled.disabled_reason]).toEqual([
      false,
      null,
      null,
    ]);
    expect((await scheduleOf(first.trigger_id).describe()).state.paused).toBe(true);
    const enabled = await patched(api, second.trigger_id, { enabled: true });
    expect([enabled.enabled, enabled.next_fire_at === null]).toEqual([true, false]);
    expect((await scheduleOf(second.trigger_id).describe()).state.paused).toBe(false);
    // A disabled trigger may change without a slot; enabling it still needs one.
    expect((await patched(api, first.trigger_id, { cron: '0 1 * * *' })).enabled).toBe(false);
    expect((await patch(api, first.trigger_id, { enabled: true })).status).toBe(429);
    await setQuotas(api, { max_triggers: 0 });
    expect((await create(api, 'counted', body)).status).toBe(429);
    expect((await create(api, 'counted', { ...body, enabled: false })).status).toBe(201);
  });

  it('a fire launches the template as the workflow dag/<workflow_id>, of the template, recorded launched; the fire is trigger-fire/<trigger_id>-<occurrence>', async () => {
    const { api, tenantId } = await tenant();
    const templateId = await registered(api, {
      name: 'fired',
      params: [param('msg', { default: 'hello' })],
      definition: guarded([step('a', { command: ['echo', '${{ msg }}'] })]),
    });
    const trigger = await created(api, 'fired', {
      cron: '0 0 1 1 *',
      timezone: 'UTC',
      params: { msg: 'from a trigger' },
    });
    const firedFrom = Date.now();
    const fire = await fireNow(api, trigger.trigger_id);
    expect(fire).toMatchObject({ outcome: 'launched', error: null });
    expect(fire.workflow_id).toEqual(expect.any(String));
    expect(fire.occurrence).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);
    expect(Date.parse(fire.occurrence)).toBeGreaterThanOrEqual(Math.floor(firedFrom / 1000) * 1000);
    expect(fire.wall_time).toBe(fire.occurrence.slice(0, 19));
    expect(typeof fire.fire_delay_seconds).toBe('number');
    expect(fire.fire_delay_seconds).toBeCloseTo(
      (Date.parse(fire.fired_at) - Date.parse(fire.occurrence)) / 1000,
      2,
    );
    expect(fire.fire_delay_seconds).toBeLessThan(30);

    // The fire workflow: completed, searchable by tenant, its child the launched DAG.
    const fireId = fireIdOf(trigger.trigger_id, fire.occurrence);
    const execution = await fireClosed(fireId);
    expect(execution.status.name).toBe('COMPLETED');
    expect(execution.type).toBe(TRIGGER_FIRE_WORKFLOW_TYPE);
    expect(execution.typedSearchAttributes.get(TENANT_ID)).toBe(tenantId);
    recordedFire = fireId;
    const dag = await temporal.workflow.getHandle(dagWorkflowId(fire.workflow_id!)).describe();
    expect(dag.type).toBe('dagWorkflow');
    expect(dag.parentExecution?.workflowId).toBe(fireId);
    expect(dag.typedSearchAttributes.get(TENANT_ID)).toBe(tenantId);

    // The workflow is the template's, stored with the trigger's occurrence, run as its params.
    const workflow = await api.call<Body>('GET', `${W}/${fire.workflow_id}`);
    expect(workflow.status).toBe(200);
    expect(workflow.body).toMatchObject({
      workflow_id: fire.workflow_id,
      template_id: templateId,
      state: expect.stringMatching(/^(pending|running)$/) as unknown,
    });
    expect(await workflowsOf(trigger.trigger_id)).toEqual([
      {
        workflow_id: fire.workflow_id,
        template_id: templateId,
        trigger_occurrence: fire.occurrence,
      },
    ]);
    const spec = (await h.pool.oneFirst(sql.unsafe`
      SELECT spec FROM runs.workflow_nodes WHERE workflow_id = ${fire.workflow_id} AND ref = 'a'`)) as {
      command: string[];
    };
    expect(spec.command).toEqual(['echo', 'from a trigger']);
    expect(await versionLaunched(fire.workflow_id!)).toBe(1);

    // A second fire is a second occurrence, a second workflow; the ledger is newest first.
    const again = await fireNow(api, trigger.trigger_id);
    expect(again.outcome).toBe('launched');
    expect(again.workflow_id).not.toBe(fire.workflow_id);
    const ledger = await fires(api, trigger.trigger_id);
    expect([ledger.status, ledger.body.limit, ledger.body.offset]).toEqual([200, 100, 0]);
    expect(ledger.body.fires.map((f) => f.occurrence)).toEqual([again.occurrence, fire.occurrence]);
    expect(ledger.body.fires[1]).toEqual(fire);
    expect((await fires(api, trigger.trigger_id, '?limit=1&offset=1')).body.fires).toEqual([fire]);
    expect((await fires(api, trigger.trigger_id, '?limit=1000')).status).toBe(200);
    expect((await fires(api, trigger.trigger_id, '?limit=1001')).status).toBe(422);
    expect((await workflowsOf(trigger.trigger_id)).length).toBe(2);
  });

  it('launches once per occurrence (the activity, twice and at once); a disabled trigger’s fire is skipped_disabled, a revoked key’s disables it, a deleted trigger’s records nothing', async () => {
    const { api, tenantId } = await tenant();
    await registered(api, { name: 'once', definition: guarded([step('a')]) });
    const [cron, timezone] = ['0 0 1 * *', 'UTC'];
    const trigger = await created(api, 'once', { cron, timezone });
    const activities = createTriggerActivities({
      pool: h.pool,
      config,
      metering: createRunsMeteringIfOn(config.runs.metering),
    });
    const fire = (triggerId: string, occurrence: string) =>
      activities.fireTrigger({ triggerId, tenantId, cron, timezone, occurrence });
    const workflowIdOf = (r: Awaited<ReturnType<typeof fire>>) =>
      'fire' in r ? r.fire.workflow_id : undefined;

    const first = await fire(trigger.trigger_id, '2026-09-01T00:00:00.000Z');
    expect(first.outcome).toBe('launched');
    const launchedId = workflowIdOf(first);
    expect(launchedId).toEqual(expect.any(String));
    const second = await fire(trigger.trigger_id, '2026-09-01T00:00:00.000Z');
    expect([second.outcome, workflowIdOf(second)]).toEqual(['already_recorded', launchedId]);
    expect(await workflowsOf(trigger.trigger_id)).toEqual([
      {
        workflow_id: launchedId,
        template_id: trigger.template_id,
        trigger_occurrence: '2026-09-01T00:00:00.000Z',
      },
    ]);

    // Two fires of one occurrence at once: one launches, the other finds it.
    const both = await Promise.all([
      fire(trigger.trigger_id, '2026-10-01T00:00:00.000Z'),
      fire(trigger.trigger_id, '2026-10-01T00:00:00.000Z'),
    ]);
    expect(both.map((r) => r.outcome).sort()).toEqual(['already_recorded', 'launched']);
    expect(workflowIdOf(both[0])).toBe(workflowIdOf(both[1]));
    const rows = await workflowsOf(trigger.trigger_id);
    expect(rows.map((r) => [r.workflow_id, r.trigger_occurrence])).toEqual([
      [launchedId, '2026-09-01T00:00:00.000Z'],
      [workflowIdOf(both[0]), '2026-10-01T00:00:00.000Z'],
    ]);
    const ledger = (await fires(api, trigger.trigger_id)).body.fires;
    expect(ledger.map((f) => [f.occurrence, f.wall_time, f.outcome, f.workflow_id])).toEqual([
      ['2026-10-01T00:00:00.000Z', '2026-10-01T00:00:00', 'launched', workflowIdOf(both[0])],
      ['2026-09-01T00:00:00.000Z', '2026-09-01T00:00:00', 'launched', launchedId],
    ]);
    for (const f of ledger) expect(f.fire_delay_seconds).toBeGreaterThan(0);

    // Disabled: recorded skipped_disabled, nothing launched.
    await patched(api, trigger.trigger_id, { enabled: false });
    const skipped = await fire(trigger.trigger_id, '2026-11-01T00:00:00.000Z');
    expect(skipped.outcome).toBe('skipped_disabled');
    expect(workflowIdOf(skipped)).toBeNull();
    expect((await workflowsOf(trigger.trigger_id)).length).toBe(2);
    expect((await fires(api, trigger.trigger_id)).body.fires[0]).toMatchObject({
      occurrence: '2026-11-01T00:00:00.000Z',
      outcome: 'skipped_disabled',
      workflow_id: null,
      error: null,
    });
    expect((await get(api, trigger.trigger_id)).body.disabled_reason).toBeNull();

    // The key that made a trigger is revoked: its next fire disables it (key_revoked).
    const other = await keyOf(tenantId, PERMISSIONS);
    const byOther = await created(other.api, 'once', { cron, timezone });
    await runAdmin(['key', 'revoke', other.keyId], h.pool);
    const refused = await fire(byOther.trigger_id, '2026-09-01T00:00:00.000Z');
    expect(refused).toMatchObject({ outcome: 'failed', reason: 'key_revoked' });
    expect((await get(api, byOther.trigger_id)).body).toMatchObject({
      enabled: false,
      disabled_reason: 'key_revoked',
      disabled_detail: 'key_revoked',
      next_fire_at: null,
    });
    expect((await fires(api, byOther.trigger_id)).body.fires).toEqual([
      expect.objectContaining({ outcome: 'failed', workflow_id: null, error: 'key_revoked' }),
    ]);
    expect(await workflowsOf(byOther.trigger_id)).toEqual([]);

    // Deleted: a late fire records nothing.
    expect((await remove(api, trigger.trigger_id)).status).toBe(204);
    expect((await fire(trigger.trigger_id, '2026-12-01T00:00:00.000Z')).outcome).toBe(
      'trigger_deleted',
    );
    expect(await ledgerRows(trigger.trigger_id)).toBe(0);
  });

  it('a fire on a deleted template disables the trigger (template_deleted): recorded failed, its workflow fails TriggerDisabled, the Temporal Schedule pauses', async () => {
    const { api } = await tenant();
    const templateId = await registered(api, { name: 'doomed', definition: guarded([step('a')]) });
    const trigger = await created(api, 'doomed', { cron: '0 0 1 1 *', timezone: 'UTC' });
    expect((await api.call('DELETE', `${T}/doomed`)).status).toBe(204);

    const fire = await firedAndDisabled(
      api,
      trigger.trigger_id,
      'template_deleted',
      'template_not_found',
    );
    expect(fire.workflow_id).toBeNull();
    expect(await workflowsOf(trigger.trigger_id)).toEqual([]);
    // The trigger is kept (disabled), still of its template, and may be deleted.
    expect((await get(api, trigger.trigger_id)).body.template_id).toBe(templateId);
    expect((await remove(api, trigger.trigger_id)).status).toBe(204);
    await expect(scheduleOf(trigger.trigger_id).describe()).rejects.toBeInstanceOf(
      ScheduleNotFoundError,
    );
  });

  it('a fire over the tenant’s daily runs disables the trigger (quota_exceeded); PATCH enabled: true clears the reason, unpauses, and the next fire launches', async () => {
    const { api } = await tenant();
    await registered(api, { name: 'metered', definition: guarded([step('a')]) });
    const trigger = await created(api, 'metered', { cron: '0 0 1 1 *', timezone: 'UTC' });
    const quotas = await api.call<{ max_daily_runs: number }>('GET', '/api/v1/tenant/quotas');
    await setQuotas(api, { max_daily_runs: 0 });

    await firedAndDisabled(api, trigger.trigger_id, 'quota_exceeded', 'daily_quota_exceeded');
    expect(await workflowsOf(trigger.trigger_id)).toEqual([]);

    await setQuotas(api, { max_daily_runs: quotas.body.max_daily_runs });
    const enabled = await patched(api, trigger.trigger_id, { enabled: true });
    expect(enabled).toMatchObject({ enabled: true, disabled_reason: null, disabled_detail: null });
    expect(enabled.next_fire_at).not.toBeNull();
    expect((await scheduleOf(trigger.trigger_id).describe()).state.paused).toBe(false);
    const fire = await fireNow(api, trigger.trigger_id);
    expect(fire.outcome).toBe('launched');
    expect((await fires(api, trigger.trigger_id)).body.fires.map((f) => f.outcome)).toEqual([
      'launched',
      'failed',
    ]);
  });

  it('a version with a new required param breaks an unpinned trigger (invalid_params), not a pinned one; new params and enabled: true launch the new version', async () => {
    const { api } = await tenant();
    const templateId = await registered(api, {
      name: 'evolving',
      params: [param('who', { default: 'world' })],
      definition: guarded([step('a', { command: ['echo', '${{ who }}'] })]),
    });
    const latest = await created(api, 'evolving', {
      cron: '0 0 1 1 *',
      timezone: 'UTC',
      params: { who: 'latest' },
    });
    const pinned = await created(api, 'evolving', {
      cron: '0 0 1 1 *',
      timezone: 'UTC',
      params: { who: 'pinned' },
      version: 1,
    });
    const v2 = await api.call<{ version: number }>('PATCH', `${T}/evolving`, {
      params: [param('who', { default: 'world' }), param('extra', { required: true })],
    });
    expect([v2.status, v2.body.version]).toEqual([200, 2]);

    const pinnedFire = await fireNow(api, pinned.trigger_id);
    expect(pinnedFire.outcome).toBe('launched');
    expect(await versionLaunched(pinnedFire.workflow_id!)).toBe(1);
    await firedAndDisabled(
      api,
      latest.trigger_id,
      'invalid_params',
      'missing_template_param:extra',
    );

    const enabled = await patched(api, latest.trigger_id, {
      params: { who: 'latest', extra: 'now' },
      enabled: true,
    });
    expect(enabled).toMatchObject({
      params: { who: 'latest', extra: 'now' },
      enabled: true,
      disabled_reason: null,
      disabled_detail: null,
    });
    expect((await scheduleOf(latest.trigger_id).describe()).state.paused).toBe(false);
    const fire = await fireNow(api, latest.trigger_id);
    expect(fire.outcome).toBe('launched');
    expect(await versionLaunched(fire.workflow_id!)).toBe(2);
    const workflow = await api.call<Body>('GET', `${W}/${fire.workflow_id}`);
    expect(workflow.body.template_id).toBe(templateId);
  });

  it('a secret param reaches the container only: no answer shows its value, the row keeps it sealed, secret_params names it', async () => {
    const SECRET = `s3cr3t-${randomBytes(12).toString('hex')}`;
    const { api, key, tenantId } = await tenant();
    const templateId = await registered(api, {
      name: 'secretive',
      params: [param('token', { secret: true, required: true }), param('who')],
      definition: {
        nodes: [
          shNode(
            'use',
            // Proves the value arrived without printing it: its SHA-256 is the output.
            'printf "[\\"%s\\"]\\n" "$(printf %s "$TOKEN" | sha256sum | cut -d" " -f1)"',
            { env: { TOKEN: '${{ token }}', WHO: '${{ who }}' }, timeout_seconds: 60 },
          ),
        ],
      },
    });
    const reply = await create(api, 'secretive', {
      cron: '0 0 1 1 *',
      timezone: 'UTC',
      params: { token: SECRET, who: 'me' },
    });
    expect(reply.status).toBe(201);
    const trigger = reply.body;
    expect([trigger.params, trigger.secret_params]).toEqual([{ who: 'me' }, ['token']]);
    // A PATCH that does not name it keeps it.
    const moved = await patched(api, trigger.trigger_id, { cron: '0 0 2 1 *' });
    expect([moved.params, moved.secret_params]).toEqual([{ who: 'me' }, ['token']]);

    const fire = await fireNow(api, trigger.trigger_id);
    expect(fire.outcome).toBe('launched');
    const dag = dagClient(h.service.url, key);
    expect((await dag.waitForState(fire.workflow_id!, undefined, 90_000)).state).toBe('succeeded');
    expect((await dag.node(fire.workflow_id!, 'use')).output).toEqual([
      createHash('sha256').update(SECRET).digest('hex'),
    ]);

    const answers = [
      reply.body,
      moved,
      (await get(api, trigger.trigger_id)).body,
      (await listOf(api, templateId)).body,
      (await listAll(api)).body,
      (await fires(api, trigger.trigger_id)).body,
      (await api.call('GET', `${W}/${fire.workflow_id}`)).body,
      (await api.call('GET', '/api/v1/audit')).body,
    ];
    expect(JSON.stringify(answers)).not.toContain(SECRET);
    const row = (await h.pool.one(sql.unsafe`
      SELECT params, sealed_params FROM runs.triggers WHERE trigger_id = ${trigger.trigger_id}`)) as {
      params: Record<string, string>;
      sealed_params: string | null;
    };
    expect(row.params).toEqual({ who: 'me' });
    expect(row.sealed_params).toEqual(expect.any(String));
    expect(row.sealed_params).not.toContain(SECRET);
    const leaks: unknown = await h.pool.oneFirst(sql.unsafe`
      SELECT (SELECT count(*) FROM runs.audit_records
              WHERE tenant_id = ${tenantId} AND detail::text LIKE ${`%${SECRET}%`})
           + (SELECT count(*) FROM runs.trigger_fires
              WHERE trigger_id = ${trigger.trigger_id} AND coalesce(error, '') LIKE ${`%${SECRET}%`})
           + (SELECT count(*) FROM runs.workflows
              WHERE tenant_id = ${tenantId} AND workflow_input::text LIKE ${`%${SECRET}%`})`);
    expect(Number(leaks)).toBe(0);
    // Nor Temporal: the Temporal Schedule's action, the fire's history.
    const description = await scheduleOf(trigger.trigger_id).describe();
    expect(JSON.stringify(description.action)).not.toContain(SECRET);
    const fireHandle = temporal.workflow.getHandle(fireIdOf(trigger.trigger_id, fire.occurrence));
    expect((await fireClosed(fireHandle.workflowId)).status.name).toBe('COMPLETED');
    expect(historyToJSON(await fireHandle.fetchHistory())).not.toContain(SECRET);
  });

  it('a key with svc_template_read only reads triggers but is 403 permission_denied on POST, PATCH and DELETE; one without it cannot read', async () => {
    const owner = await tenant();
    await registered(owner.api, { name: 'guarded', definition: guarded() });
    const trigger = await created(owner.api, 'guarded', {
      cron: '0 0 * * *',
      timezone: 'UTC',
      enabled: false,
    });
    const reader = await keyOf(owner.tenantId, 'svc_template_read');
    const denied = [
      await create(reader.api, 'guarded', { cron: '0 0 * * *', timezone: 'UTC' }),
      await patch(reader.api, trigger.trigger_id, { enabled: true }),
      await remove(reader.api, trigger.trigger_id),
    ];
    for (const reply of denied)
      expect([reply.status, (reply.body as { detail?: string }).detail]).toEqual([
        403,
        'permission_denied',
      ]);
    expect((await get(reader.api, trigger.trigger_id)).body).toEqual(
      (await get(owner.api, trigger.trigger_id)).body,
    );
    expect((await listOf(reader.api, 'guarded')).body.triggers).toHaveLength(1);
    expect((await listAll(reader.api)).body.triggers).toHaveLength(1);
    expect((await fires(reader.api, trigger.trigger_id)).body.fires).toEqual([]);
    expect((await get(owner.api, trigger.trigger_id)).body.enabled).toBe(false);

    const outsider = await keyOf(owner.tenantId, 'svc_workflow_read,svc_template_run');
    for (const reply of [
      await get(outsider.api, trigger.trigger_id),
      await listAll(outsider.api),
      await listOf(outsider.api, 'guarded'),
      await fires(outsider.api, trigger.trigger_id),
    ])
      expect(reply.status).toBe(403);
  });

  it('DELETE removes the trigger, its fire ledger and its Temporal Schedule; after it every route is 404', async () => {
    const { api, tenantId } = await tenant();
    await registered(api, { name: 'removable', definition: guarded() });
    const [cron, timezone] = ['0 0 * * *', 'UTC'];
    const trigger = await created(api, 'removable', { cron, timezone, enabled: false });
    await createTriggerActivities({
      pool: h.pool,
      config,
      metering: createRunsMeteringIfOn(config.runs.metering),
    }).fireTrigger({
      triggerId: trigger.trigger_id,
      tenantId,
      cron,
      timezone,
      occurrence: '2026-01-01T00:00:00.000Z',
    });
    expect(await ledgerRows(trigger.trigger_id)).toBe(1);

    const handle = scheduleOf(trigger.trigger_id);
    const removed = await remove(api, trigger.trigger_id);
    expect([removed.status, removed.body]).toEqual([204, null]);
    await expect(handle.describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
    expect(await ledgerRows(trigger.trigger_id)).toBe(0);
    expect((await get(api, trigger.trigger_id)).status).toBe(404);
    expect((await fires(api, trigger.trigger_id)).status).toBe(404);
    expect((await patch(api, trigger.trigger_id, { enabled: true })).status).toBe(404);
    expect((await remove(api, trigger.trigger_id)).status).toBe(404);
    expect((await listAll(api)).body.triggers).toEqual([]);
  });

  it('on a real every-minute cron, fires at the minute and launches the template, whose DAG runs its container with the trigger’s params; disabling pauses it', async () => {
    expect(minute).toBeDefined();
    const { api, key, trigger, templateId, madeAt } = minute!;
    const remaining = Math.max(1_000, madeAt + CRON_WAIT_MS - Date.now());
    await eventually(
      async () => ((await ledgerRows(trigger.trigger_id)) >= 1 ? true : undefined),
      remaining,
      500,
    );
    const ledger = (await fires(api, trigger.trigger_id)).body.fires;
    const fire = ledger[ledger.length - 1]!;
    expect(fire).toMatchObject({ outcome: 'launched', error: null });
    expect(new Date(fire.occurrence).getUTCSeconds()).toBe(0);
    expect(Date.parse(fire.occurrence)).toBeGreaterThan(madeAt);
    expect(fire.fire_delay_seconds).toBeLessThan(10);
    // Asia/Kolkata is UTC+05:30.
    expect(fire.wall_time).toBe(
      new Date(Date.parse(fire.occurrence) + 330 * 60_000).toISOString().slice(0, 19),
    );
    const fireId = fireIdOf(trigger.trigger_id, fire.occurrence);
    expect((await fireClosed(fireId)).status.name).toBe('COMPLETED');
    recordedFire ??= fireId;

    const dag = dagClient(h.service.url, key);
    const done = await dag.waitForState(fire.workflow_id!, undefined, 90_000);
    expect(done).toMatchObject({ state: 'succeeded', template_id: templateId });
    expect((await dag.node(fire.workflow_id!, 'say')).output).toEqual({ greeting: 'hi' });

    const disabled = await patched(api, trigger.trigger_id, { enabled: false });
    expect([disabled.enabled, disabled.next_fire_at, disabled.disabled_reason]).toEqual([
      false,
      null,
      null,
    ]);
    expect((await scheduleOf(trigger.trigger_id).describe()).state.paused).toBe(true);
  });

  it('checked a real answer of every trigger operation against the document', () => {
    const documented = Object.entries(openApiDocument.paths)
      .filter(([p]) => p.startsWith(TR) || p.startsWith(`${T}/{ref}/triggers`))
      .flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
    expect(documented.sort()).toEqual(
      [
        `GET ${T}/{ref}/triggers`,
        `POST ${T}/{ref}/triggers`,
        `GET ${TR}`,
        `GET ${TR}/{trigger_id}`,
        `PATCH ${TR}/{trigger_id}`,
        `DELETE ${TR}/{trigger_id}`,
        `GET ${TR}/{trigger_id}/fires`,
      ].sort(),
    );
    expect(documented.filter((op) => !checked.has(op))).toEqual([]);
  });
});
