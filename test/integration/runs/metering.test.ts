import { ulid } from 'ulid';
import { runAdmin } from '../../../cli/runs';
import { createRunsMeteringIfOn } from '../../../services/runs/metering';
import { settleRunSeconds } from '../../../activities/runs/run';
import { sql } from '../../../db/pool';
import { freePort } from '../../support/api-process';
import { eventually } from '../../support/services';
import {
  IMAGE,
  client,
  config,
  newTenant,
  quotaRecords,
  startHarness,
  type Harness,
} from './support';
import { ALL_WORKFLOW_PERMISSIONS, dagClient, edge, shNode } from './dag-support';

/** Waits until the quota ledger holds the commit of the run's seconds. */
const committedIn = (quota: ReturnType<typeof quotaRecords>) =>
  eventually(async () =>
    (await quota.ledger()).some((e) => e.entry_type === 'commit') ? true : undefined,
  );

/** A metered tier of its own, with a daily cap of run seconds when given. */
async function meteredTier(h: Harness, cap?: number): Promise<string> {
  const tier = `tier-${ulid().toLowerCase().slice(-8)}`;
  const capArgs = cap === undefined ? [] : ['--metered-seconds-per-day', String(cap)];
  await runAdmin(['tier', 'set', tier, '--metered', 'true', ...capArgs], h.pool);
  return tier;
}

const durationOf = async (api: ReturnType<typeof client>, trackId: string) =>
  Math.ceil(
    (await api.call<{ duration_seconds: number }>('GET', `/api/v1/runs/${trackId}/result`)).body
      .duration_seconds,
  );

describe('runs metered through the quota service', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it("when a metered run ends early, then the quota ledger holds its reservation of its timeout and the commit of what it used, under the run's id, and the rest is released", async () => {
    const t = await newTenant(h.pool, { tier: await meteredTier(h, 100) });
    const api = client(h.service.url, t.key);
    const quota = quotaRecords(t);
    const { track_id: trackId } = (
      await api.submit({ image: IMAGE, command: ['sleep', '1'], timeout_seconds: 30 })
    ).body;
    await api.waitFor(trackId, ['exited']);
    await committedIn(quota);
    const used = await durationOf(api, trackId);
    const reservationId = (await h.pool.oneFirst(sql.unsafe`
      SELECT quota_reservation_id FROM runs.runs WHERE track_id = ${trackId}`)) as string;

    const ledger = await quota.ledger();
    expect(ledger).toEqual([
      expect.objectContaining({
        entry_type: 'reserve',
        amount: 30,
        reservation_id: reservationId,
        idempotency_key: `runs:${trackId}:reserve`,
        metadata: { track_id: trackId },
      }),
      expect.objectContaining({
        entry_type: 'commit',
        reservation_id: reservationId,
        idempotency_key: `runs:${trackId}:commit`,
      }),
    ]);
    // The commit moves the day by what was used less what was held: the remainder is released.
    const committed = 30 + ledger[1]!.amount;
    expect(Math.abs(committed - used)).toBeLessThanOrEqual(1);
    expect(committed).toBeGreaterThanOrEqual(1);
    expect(await quota.usedToday()).toBe(committed);
    const usage = await api.call<{ usage: Record<string, unknown>[] }>('GET', '/api/v1/usage');
    expect(usage.body.usage.find((u) => u.policy === 'metered_run_seconds')).toEqual({
      policy: 'metered_run_seconds',
      used: committed,
      limit: 100,
      remaining: 100 - committed,
      resets_at: expect.stringMatching(/T00:00:00(\.000)?Z$/) as unknown,
    });
  });

  it('when the end of a run is settled again (a retried activity, the reconciler), then it is charged once', async () => {
    const t = await newTenant(h.pool, { tier: await meteredTier(h) });
    const api = client(h.service.url, t.key);
    const quota = quotaRecords(t);
    const { track_id: trackId } = (
      await api.submit({ image: IMAGE, command: ['true'], timeout_seconds: 40 })
    ).body;
    await api.waitFor(trackId, ['exited']);
    // The run shows exited before its end is charged (a call to the quota service after the row).
    await committedIn(quota);
    const charged = await quota.usedToday();
    const settle = settleRunSeconds.bind(null, {
      pool: h.pool,
      metering: createRunsMeteringIfOn(config.runs.metering),
    });
    await settle({ trackId, usedSeconds: 3 });
    await settle({ trackId, usedSeconds: 40 });
    expect(await quota.usedToday()).toBe(charged);
    expect((await quota.ledger()).map((e) => e.entry_type)).toEqual(['reserve', 'commit']);
  });

  it('when a tier has no daily cap, then its runs are counted and never refused; when a cap is set, the policy takes it at once', async () => {
    const tier = await meteredTier(h);
    const t = await newTenant(h.pool, { tier });
    const api = client(h.service.url, t.key);
    const later = { image: IMAGE, command: ['true'], scheduled_start: '2999-01-01T00:00:00Z' };
    expect((await api.submit({ ...later, timeout_seconds: 3600 })).status).toBe(202);
    expect(await quotaRecords(t).usedToday()).toBe(3600);

    await runAdmin(['tier', 'set', tier, '--metered-seconds-per-day', '3700'], h.pool);
    const refused = await api.submit({ ...later, timeout_seconds: 101 });
    expect(refused).toMatchObject({
      status: 429,
      body: { detail: 'metered_quota_exceeded' },
    });
    expect((await api.submit({ ...later, timeout_seconds: 100 })).status).toBe(202);
  });

  it('when the daily run count refuses a metered run, then its seconds are given back', async () => {
    const t = await newTenant(h.pool, { tier: await meteredTier(h, 1000) });
    const api = client(h.service.url, t.key);
    expect((await api.call('PUT', '/api/v1/tenant/quotas', { max_daily_runs: 1 })).status).toBe(
      200,
    );
    const later = { image: IMAGE, command: ['true'], scheduled_start: '2999-01-01T00:00:00Z' };
    expect((await api.submit({ ...later, timeout_seconds: 10 })).status).toBe(202);
    const refused = await api.submit({ ...later, timeout_seconds: 20 });
    expect(refused).toMatchObject({ status: 429, body: { detail: 'daily_quota_exceeded' } });
    expect(await quotaRecords(t).usedToday()).toBe(10);
    expect((await quotaRecords(t).ledger()).map((e) => [e.entry_type, e.amount])).toEqual([
      ['reserve', 10],
      ['reserve', 20],
      ['release', -20],
    ]);
  });

  it("when a metered key runs a DAG, then each node's run reserves and commits its own seconds; a node whose seconds no longer fit fails with metered_quota_exceeded", async () => {
    const t = await newTenant(h.pool, {
      tier: await meteredTier(h, 41),
      permissions: `${ALL_WORKFLOW_PERMISSIONS},svc_run_submit`,
    });
    const dag = dagClient(h.service.url, t.key);
    const quota = quotaRecords(t);
    const id = await dag.submit({
      nodes: [
        shNode('a', 'sleep 2', { timeout_seconds: 20 }),
        shNode('b', 'true', { timeout_seconds: 20 }),
      ],
      edges: [edge('a', 'b')],
    });
    await dag.waitForNode(id, 'a', ['running']);
    // While `a` holds its 20 seconds, a deferred run holds 20 more: once `a` has committed what
    // it used (2 or 3), `b`'s 20 no longer fit in 41.
    const deferred = await client(h.service.url, t.key).submit({
      image: IMAGE,
      command: ['true'],
      timeout_seconds: 20,
      scheduled_start: '2999-01-01T00:00:00Z',
    });
    expect(deferred.status).toBe(202);
    expect((await dag.waitForState(id)).state).toBe('failed');
    const a = await dag.node(id, 'a');
    const b = await dag.node(id, 'b');
    expect(a.state).toBe('succeeded');
    expect(b).toMatchObject({
      state: 'failed',
      attempts: [],
      output: { error: 'metered_quota_exceeded' },
    });
    const entries = await quota.ledger();
    const ofA = entries.filter((e) => e.idempotency_key?.startsWith(`runs:${a.current_track_id}:`));
    expect(ofA.map((e) => e.entry_type)).toEqual(['reserve', 'commit']);
    expect(ofA[0]!.amount).toBe(20);
  });

  it('when the quota service does not answer, then a metered submit is 503 metering_unavailable and nothing is stored; an unmetered key is served', async () => {
    const down = await startHarness({ QUOTA_URL: `http://127.0.0.1:${await freePort()}` });
    try {
      const metered = await newTenant(down.pool, { tier: await meteredTier(down, 100) });
      const refused = await client(down.service.url, metered.key).submit({
        image: IMAGE,
        command: ['true'],
      });
      expect(refused).toMatchObject({
        status: 503,
        body: { detail: 'metering_unavailable' },
      });
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(
        await down.pool.oneFirst(sql.unsafe`
          SELECT count(*)::int FROM runs.runs WHERE tenant_id = ${metered.tenantId}`),
      ).toBe(0);
      const plain = await newTenant(down.pool);
      const served = await client(down.service.url, plain.key).submit({
        image: IMAGE,
        command: ['true'],
        scheduled_start: '2999-01-01T00:00:00Z',
      });
      expect(served.status).toBe(202);
    } finally {
      await down.close();
    }
  });

  it('when metering is off (no QUOTA_URL), then a metered key is served unmetered and its usage says so', async () => {
    const off = await startHarness({ QUOTA_URL: '' });
    try {
      const t = await newTenant(off.pool, { tier: await meteredTier(off, 100) });
      const api = client(off.service.url, t.key);
      const run = await api.submit({
        image: IMAGE,
        command: ['true'],
        scheduled_start: '2999-01-01T00:00:00Z',
      });
      expect(run.status).toBe(202);
      const usage = await api.call<{ metered: boolean; usage: { policy: string }[] }>(
        'GET',
        '/api/v1/usage',
      );
      expect(usage.body.metered).toBe(false);
      expect(usage.body.usage.map((u) => u.policy)).not.toContain('metered_run_seconds');
    } finally {
      await off.close();
    }
  });
});
