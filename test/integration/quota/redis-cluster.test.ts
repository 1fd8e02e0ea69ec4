/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument -- JSON replies in tests */
import { sql } from '../../../db/pool';
import { flushLedgerStream } from '../../../services/quota/consumption/ledger-flush';
import { subjectPartition } from '../../../db/quota/partitions';
import { closeRedis, createRedis, type Redis } from '../../../db/redis';
import { eventually } from '../../support/services';
import { ThrowawayRedisCluster } from '../../support/throwaway-backends';
import { config, startQuota, subjectOnPlan, type QuotaClient, type QuotaHarness } from './support';

/**
 * Quota's fast mode on a real Redis Cluster (three masters, a replica each): every decision's
 * keys in one slot (db/quota/partitions.ts), the partitions spread over the masters, and a
 * master's failover losing nothing that was answered (REDIS_WRITE_REPLICAS=1: a decision is
 * answered once its replica holds it).
 */
jest.setTimeout(120_000);

describe('quota fast mode on a Redis Cluster', () => {
  let cluster: ThrowawayRedisCluster;
  let h: QuotaHarness;
  let redis: Redis;
  let admin: QuotaClient;
  let tenantId: string;
  let seq = 0;

  beforeAll(async () => {
    cluster = await ThrowawayRedisCluster.create();
    const settings = { REDIS_CLUSTER_NODES: cluster.nodes, REDIS_WRITE_REPLICAS: '1' };
    h = await startQuota(settings);
    redis = createRedis(
      {
        ...config,
        redisClusterNodes: cluster.nodes.split(','),
        redisWriteReplicas: 1,
        redisWriteTimeoutMs: 500,
      },
      'quota:',
    );
    ({ admin, id: tenantId } = await h.newTenant());
  }, 180_000);
  afterAll(async () => {
    await h?.close();
    if (redis) await closeRedis(redis);
    await cluster?.stop();
  });

  /** A fast subject on a daily quota of `limit`, named so that it lands on master `port`. */
  async function subjectOn(port: number, limit: number) {
    let subject: string;
    do subject = `cluster-${++seq}`;
    while (cluster.masterOf(`{q${subjectPartition(tenantId, subject)}}`) !== port);
    const resource = `res-${seq}`;
    const { policies } = await subjectOnPlan(admin, resource, {
      limits: { day: limit },
      mode: 'fast',
      subject,
    });
    const consume = (amount: number, idempotencyKey?: string) =>
      admin.post('/v1/consume', {
        subject,
        items: [{ resource, amount }],
        ...(idempotencyKey ? { idempotency_key: idempotencyKey } : {}),
      });
    return { subject, resource, policy: policies.day, consume };
  }

  const masters = () => [
    ...new Set(Array.from({ length: 64 }, (_, p) => cluster.masterOf(`{q${p}}`))),
  ];

  const ledgerEvents = async (subject: string) => {
    await flushLedgerStream({ pool: h.pool, redis, taskQueuePrefix: config.taskQueuePrefix });
    return (await h.pool.anyFirst(sql.unsafe`
      SELECT event_id FROM quota.ledger_entries
      WHERE tenant_id = ${tenantId} AND subject = ${subject}`)) as string[];
  };

  it('spreads the partitions over every master, and on each admits exactly the limit of concurrent consumes; the ledger holds what was admitted', async () => {
    const ports = masters();
    expect(ports).toHaveLength(3);
    for (const port of ports) {
      const s = await subjectOn(port, 10);
      const replies = await Promise.all(Array.from({ length: 25 }, () => s.consume(1)));
      expect(replies.map((r) => r.status)).toEqual(replies.map(() => 200));
      const admitted = replies.filter((r) => r.body.allowed).map((r) => r.body.event_id as string);
      expect(admitted).toHaveLength(10);
      expect((await ledgerEvents(s.subject)).sort()).toEqual(admitted.sort());
    }
  });

  it('binds the next decision on every master to a catalogue change, and refuses a reused idempotency key on a subject another master holds', async () => {
    const [first, second] = masters();
    const a = await subjectOn(first!, 10);
    const b = await subjectOn(second!, 10);
    expect((await a.consume(4, 'key-a')).body.allowed).toBe(true);
    const lowered = await admin.patch(`/v1/policies/${a.policy.id}`, { limit_amount: 3 });
    expect(lowered.status).toBe(200);
    expect((await a.consume(1)).body).toMatchObject({ allowed: false, results: [{ limit: 3 }] });
    expect(await b.consume(4, 'key-a')).toMatchObject({
      status: 409,
      body: { detail: 'idempotency_key_reused' },
    });
    // The same body again is the first decision, replayed.
    expect((await a.consume(4, 'key-a')).body.allowed).toBe(true);
  });

  it("when a subject's master is killed, its decisions answer 200 or 503 meanwhile, its replica takes over, and every decision answered admitted is in the ledger", async () => {
    const port = masters()[0]!;
    const s = await subjectOn(port, 1_000_000);
    const answered: string[] = [];
    const statuses = new Set<number>();
    let n = 0;
    const consumeFor = async (ms: number) => {
      const until = Date.now() + ms;
      while (Date.now() < until) {
        const reply = await s.consume(1, `failover-${++n}`);
        statuses.add(reply.status);
        if (reply.status === 200 && reply.body.allowed) answered.push(reply.body.event_id);
      }
    };
    const streams = Array.from({ length: 4 }, () => consumeFor(8_000));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await cluster.kill(port);
    await Promise.all(streams);
    expect([...statuses].filter((status) => status !== 200 && status !== 503)).toEqual([]);
    expect(statuses.has(503)).toBe(true);
    // The replica, master now, has no replica of its own to hold its writes: 503 until the
    // crashed node is back (as a replica of it).
    await cluster.restart(port);
    await cluster.waitUntilOk();
    // The API's cluster client learns the new topology on its next calls: 200 within seconds.
    const recovered = await eventually(async () => {
      const reply = await s.consume(1, `failover-${++n}`);
      expect([200, 503]).toContain(reply.status);
      return reply.status === 200 ? reply : undefined;
    }, 10_000);
    expect(recovered.body.allowed).toBe(true);
    const inLedger = new Set(await ledgerEvents(s.subject));
    expect(answered.filter((event) => !inLedger.has(event))).toEqual([]);
    expect(answered.length).toBeGreaterThan(0);
  });
});
