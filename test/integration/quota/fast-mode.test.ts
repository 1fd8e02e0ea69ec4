/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument -- JSON replies in tests */
import { flushLedgerStream } from '../../../services/quota/consumption/ledger-flush';
import { sql } from '../../../db/pool';
import { appendLedger } from '../../../db/quota/consumption';
import { ALL_PARTITIONS, ledgerStreamKey, subjectPartition } from '../../../db/quota/partitions';
import { closeRedis, connectedRedis, type Redis } from '../../../db/redis';
import { eventually } from '../../support/services';
import { config, startQuota, type QuotaClient, type QuotaHarness } from './support';

/**
 * Fast mode's own promises: the write-ahead stream (an admitted request is recorded in Redis
 * before its answer and reaches the Postgres ledger through the flush, once, even when the API
 * is gone by then), /healthz/worker, and on_backend_error while Redis does not answer. The
 * service runs on Redis database 7 here, so its stream is this test's alone.
 */
const REDIS_DB_URL = `${config.redisUrl}/7`;
const FLUSH_BUDGET_SECONDS = 1;

describe('quota: fast mode (write-ahead stream, flush, /healthz/worker, on_backend_error)', () => {
  let h: QuotaHarness;
  let admin: QuotaClient;
  let adminKey: string;
  let tenantId: string;
  let redis: Redis;
  let seq = 0;
  beforeAll(async () => {
    redis = await connectedRedis({ redisUrl: REDIS_DB_URL }, 'quota:');
    await redis.del(...ALL_PARTITIONS.map(ledgerStreamKey));
    h = await startQuota({
      REDIS_URL: REDIS_DB_URL,
      QUOTA_FLUSH_BUDGET_SECONDS: String(FLUSH_BUDGET_SECONDS),
    });
    const tenant = await h.newTenant();
    ({ admin, id: tenantId } = tenant);
    adminKey = tenant.adminKey.key;
  });
  afterAll(async () => {
    await h?.close();
    await closeRedis(redis);
  });

  /** A subject on a plan of one fast daily quota of `limit` (on_backend_error as given). */
  async function subject(limit: number, onBackendError: 'allow' | 'deny' | null = null) {
    const n = ++seq;
    const resource = (await admin.post('/v1/resources', { name: `fast-${n}` })).body;
    const policy = await admin.post('/v1/policies', {
      name: `fast-daily-${n}`,
      resource_id: resource.id,
      kind: 'quota',
      limit_amount: limit,
      window_kind: 'fixed',
      window_unit: 'day',
      enforcement_mode: 'fast',
      on_backend_error: onBackendError,
    });
    expect(policy.status).toBe(201);
    const plan = (
      await admin.post('/v1/plans', { name: `plan-${n}`, policy_ids: [policy.body.id] })
    ).body;
    await admin.put(`/v1/subjects/fast-${n}/assignment`, { plan_id: plan.id });
    return { subject: `fast-${n}`, resource: resource.name as string };
  }
  const ledgerOf = (eventId: string) =>
    h.pool.any(sql.unsafe`
      SELECT entry_type, amount, strict_deferred FROM quota.ledger_entries
      WHERE tenant_id = ${tenantId} AND event_id = ${eventId}`);
  const streamedEvents = async () =>
    (await Promise.all(ALL_PARTITIONS.map((p) => redis.xrange(ledgerStreamKey(p), '-', '+'))))
      .flat()
      .map(([, fields]) => (JSON.parse(fields[1]!) as { eventId: string }[])[0]!.eventId);

  it('records an admitted request in the stream before it answers; the flush moves it into the ledger once; /healthz/worker watches the wait', async () => {
    const s = await subject(10);
    const consumed = await admin.post('/v1/consume', {
      subject: s.subject,
      items: [{ resource: s.resource, amount: 4 }],
    });
    expect(consumed.body).toMatchObject({ allowed: true, degraded: false });
    const eventId = consumed.body.event_id as string;
    // Answered: in Redis's append-only stream, not yet in Postgres.
    expect(await streamedEvents()).toContain(eventId);
    expect(await ledgerOf(eventId)).toEqual([]);

    // Past the budget the probe says so.
    await new Promise((resolve) => setTimeout(resolve, FLUSH_BUDGET_SECONDS * 1000 + 200));
    const lagging = await h.as(null).get('/healthz/worker');
    expect(lagging.status).toBe(503);
    expect(lagging.body).toMatchObject({ status: 'lagging', budget_seconds: FLUSH_BUDGET_SECONDS });
    expect(lagging.body.oldest_wait_seconds).toBeGreaterThanOrEqual(FLUSH_BUDGET_SECONDS);

    // The flush needs no API process: what was answered is in the stream.
    const flushDeps = { pool: h.pool, redis, taskQueuePrefix: config.taskQueuePrefix };
    expect(await flushLedgerStream(flushDeps)).toEqual({ flushed_events: 1 });
    expect(await flushLedgerStream(flushDeps)).toEqual({ flushed_events: 0 });
    expect(await ledgerOf(eventId)).toEqual([
      { entry_type: 'consume', amount: '4', strict_deferred: true },
    ]);
    const flushed = await h.as(null).get('/healthz/worker');
    expect(flushed).toMatchObject({
      status: 200,
      body: { status: 'ok', oldest_wait_seconds: 0 },
    });
  });

  it('writes a flushed entry once however often a flush is retried', async () => {
    const s = await subject(10);
    const consumed = await admin.post('/v1/consume', {
      subject: s.subject,
      items: [{ resource: s.resource, amount: 2 }],
    });
    // A flush that wrote its batch and died before taking it off the stream is done again.
    const stream = ledgerStreamKey(subjectPartition(tenantId, s.subject));
    const [first] = await redis.xrange(stream, '-', '+', 'COUNT', 1);
    const entries = (JSON.parse(first![1][1]!) as { amount: string }[]).map((e) => ({
      ...e,
      amount: BigInt(e.amount),
    }));
    await appendLedger(h.pool, entries as never);
    await flushLedgerStream({ pool: h.pool, redis, taskQueuePrefix: config.taskQueuePrefix });
    expect(await ledgerOf(consumed.body.event_id)).toHaveLength(1);
  });

  describe('while Redis does not answer', () => {
    let down: QuotaHarness;
    let client: QuotaClient;
    beforeAll(async () => {
      // A second API process on the same database whose Redis is a closed port.
      down = await startQuota({ REDIS_URL: 'redis://127.0.0.1:1' });
      client = down.as(adminKey);
    });
    afterAll(async () => {
      await down?.close();
    });

    it('answers a fast policy by its on_backend_error (null: allow), says degraded, and writes the ledger in Postgres', async () => {
      const allow = await subject(1);
      const deny = await subject(100, 'deny');
      const consume = (s: { subject: string; resource: string }, amount: number) =>
        client.post('/v1/consume', {
          subject: s.subject,
          items: [{ resource: s.resource, amount }],
        });
      // Past its limit of 1 and still admitted: usage cannot be read, the policy says allow.
      const admitted = await consume(allow, 5);
      expect(admitted).toMatchObject({
        status: 200,
        body: { allowed: true, degraded: true, results: [{ allowed: true }] },
      });
      expect(await ledgerOf(admitted.body.event_id)).toEqual([
        { entry_type: 'consume', amount: '5', strict_deferred: false },
      ]);
      const refused = await consume(deny, 1);
      expect(refused.body).toMatchObject({
        allowed: false,
        degraded: true,
        results: [{ allowed: false }],
      });
      expect(await ledgerOf(refused.body.event_id)).toEqual([]);
      const checked = await client.post('/v1/check', {
        subject: deny.subject,
        items: [{ resource: deny.resource, amount: 1 }],
      });
      expect(checked.body).toMatchObject({ allowed: false, degraded: true });
      await eventually(async () =>
        (await down.as(null).get('/healthz/worker')).status === 503 ? true : undefined,
      );
    });
  });
});
