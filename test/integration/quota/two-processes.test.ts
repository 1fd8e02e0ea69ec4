/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-return -- JSON replies in tests */
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import fc from 'fast-check';
import { sql } from '../../../db/pool';
import { flushLedgerStream } from '../../../services/quota/consumption/ledger-flush';
import { catalogueGenerationKey, subjectPartition } from '../../../db/quota/partitions';
import { freePort, startApiProcess, stopProcessGroup } from '../../support/api-process';
import { DATA_DIR } from '../../support/stack-env';
import { client, startQuota, subjectOnPlan, type QuotaClient, type QuotaHarness } from './support';

// Two API processes serving one tenant: each judges requests by the catalogue in its own memory
// (services/quota/catalogue-cache.ts), both count in the same stores. A change made through one binds
// the very next decision in the other, and together they never admit past a limit.
describe.each(['strict', 'fast'] as const)('quota: two API processes (%s decisions)', (mode) => {
  let h: QuotaHarness;
  let other: ChildProcess;
  let otherUrl: string;
  let admin: QuotaClient;
  let adminKey: string;
  let tenantId: string;
  let seq = 0;
  beforeAll(async () => {
    h = await startQuota();
    const port = await freePort();
    otherUrl = `http://127.0.0.1:${port}`;
    other = await startApiProcess({
      services: ['quota'],
      // Task queues of its own: its outboxes then start only what it wrote, never another test
      // file's deliveries (which carry that file's retry delays).
      env: {
        QUOTA_PORT: String(port),
        QUOTA_JOB_SCHEDULES: 'false',
        LOG_LEVEL: 'warn',
        TASK_QUEUE_PREFIX: `${process.env.TASK_QUEUE_PREFIX ?? ''}second-process-`,
      },
      logFile: path.join(DATA_DIR, 'logs', `quota-second-process-${process.pid}.log`),
      readyUrls: [`${otherUrl}/healthz`],
    });
    const tenant = await h.newTenant();
    ({ admin, id: tenantId } = tenant);
    adminKey = tenant.adminKey.key;
  }, 240_000);
  afterAll(async () => {
    if (other) await stopProcessGroup(other);
    await h.close();
  });

  /** The same key's client on the other process. */
  const there = (key = adminKey) => client(otherUrl, key);

  /** A subject on a plan of one daily quota of `limit` on a resource of its own. */
  async function subjectWith(limit: number) {
    const name = `calls-${mode}-${++seq}`;
    const { subject, policies } = await subjectOnPlan(admin, name, {
      limits: { day: limit },
      mode,
    });
    const consume = (c: QuotaClient, amount: number) =>
      c.post('/v1/consume', { subject, items: [{ resource: name, amount }] });
    return { subject, resource: name, policy: policies.day, consume };
  }

  it('never admits more than the limit when both decide at once, and the ledger sums the admitted (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 5, maxLength: 30 }),
        async (limit, amounts) => {
          const s = await subjectWith(limit);
          const replies = await Promise.all(
            amounts.map((amount, i) => s.consume(i % 2 === 0 ? admin : there(), amount)),
          );
          const admitted = replies
            .filter((r) => r.body.allowed)
            .reduce((sum, r) => sum + Number(r.body.results[0].requested), 0);
          expect(admitted).toBeLessThanOrEqual(limit);
          const denied = replies
            .filter((r) => !r.body.allowed)
            .map((r) => r.body.results[0].requested);
          if (denied.length > 0) expect(limit - admitted).toBeLessThan(Math.min(...denied));
          await flushLedgerStream(h);
          const ledger = await h.pool.oneFirst(sql.unsafe`
            SELECT coalesce(sum(amount), 0)::int FROM quota.ledger_entries
            WHERE tenant_id = ${tenantId} AND subject = ${s.subject}`);
          expect(ledger).toBe(admitted);
        },
      ),
      { numRuns: 6 },
    );
  }, 120_000);

  it('a policy, an override or an assignment changed through one binds the next decision in the other', async () => {
    const s = await subjectWith(10);
    expect((await s.consume(there(), 4)).body.allowed).toBe(true);

    await admin.patch(`/v1/policies/${s.policy.id}`, { limit_amount: 5 });
    const past = await s.consume(there(), 2);
    expect(past.body).toMatchObject({ allowed: false, results: [{ limit: 5, used: 4 }] });

    await admin.put(`/v1/subjects/${s.subject}/overrides`, {
      overrides: [{ policy_id: s.policy.id, limit_amount: 100 }],
    });
    expect((await s.consume(there(), 2)).body.results[0]).toMatchObject({
      limit: 100,
      source: 'override',
    });

    const freePlan = (await admin.post('/v1/plans', { name: `free-${seq}`, policy_ids: [] })).body;
    await admin.put(`/v1/subjects/${s.subject}/assignment`, { plan_id: freePlan.id });
    expect((await s.consume(there(), 1000)).body).toMatchObject({ allowed: true, results: [] });

    await admin.delete(`/v1/subjects/${s.subject}/assignment`);
    const check = await there().post('/v1/check', {
      subject: s.subject,
      items: [{ resource: s.resource, amount: 1 }],
    });
    expect(check.body).toMatchObject({ allowed: true, results: [] });
  });

  it('a key revoked or tightened through one, or its tenant suspended, is refused by the other at once (and served once reactivated)', async () => {
    const s = await subjectWith(100);
    const minted = (
      await admin.post('/v1/api-keys', {
        name: 'spender',
        scopes: ['consume', 'check'],
        actor: 'app',
      })
    ).body;
    expect((await s.consume(there(minted.key), 1)).status).toBe(200);

    await admin.patch(`/v1/api-keys/${minted.id}`, {
      constraints: { subject_prefix: 'elsewhere-' },
    });
    expect((await s.consume(there(minted.key), 1)).status).toBe(403);

    await admin.delete(`/v1/api-keys/${minted.id}`);
    expect((await s.consume(there(minted.key), 1)).status).toBe(401);

    const tenant = await h.newTenant();
    const own = await subjectWithOn(tenant.admin);
    expect((await own.consume(there(tenant.adminKey.key))).status).toBe(200);
    await h.operator.delete(`/v1/tenants/${tenant.id}`);
    expect((await own.consume(there(tenant.adminKey.key))).status).toBe(403);
    // A refusal the other judged from memory is checked before it stands: reactivated, served.
    await h.operator.patch(`/v1/tenants/${tenant.id}`, { status: 'active' });
    expect((await own.consume(there(tenant.adminKey.key))).status).toBe(200);
  });

  /** A plan-less subject and a resource of another tenant's: any consume is allowed. */
  async function subjectWithOn(tenantAdmin: QuotaClient) {
    const resource = `elsewhere-${++seq}`;
    await tenantAdmin.post('/v1/resources', { name: resource });
    return {
      consume: (c: QuotaClient) =>
        c.post('/v1/consume', { subject: 'anyone', items: [{ resource, amount: 1 }] }),
    };
  }

  it('an alert rule made through one is judged by the next decision in the other', async () => {
    const s = await subjectWith(10);
    expect((await s.consume(there(), 1)).body.allowed).toBe(true);
    const rule = (
      await admin.post('/v1/alert-rules', {
        name: `half-${seq}`,
        policy_id: s.policy.id,
        threshold_pct: 50,
        channels: { webhooks: [] },
      })
    ).body;
    expect((await s.consume(there(), 5)).body.allowed).toBe(true);
    await flushLedgerStream(h);
    const events = await admin.get(`/v1/alert-events?subject=${s.subject}`);
    expect(events.body).toEqual([expect.objectContaining({ rule_id: rule.id, threshold_pct: 50 })]);
  });

  it("repairs a generation Redis lost: a change it never heard of still binds the other's next decision", async () => {
    const s = await subjectWith(10);
    expect((await s.consume(there(), 3)).body.allowed).toBe(true);
    // A writer that could not reach Redis: the change is in Postgres only, and Redis's copy is gone.
    await h.pool.query(
      sql.unsafe`UPDATE quota.policies SET limit_amount = 3 WHERE id = ${s.policy.id}`,
    );
    const copy = catalogueGenerationKey(tenantId, subjectPartition(tenantId, s.subject));
    await h.redis.del(copy);
    expect((await s.consume(there(), 1)).body).toMatchObject({
      allowed: false,
      results: [{ limit: 3, used: 3 }],
    });
    expect(await h.redis.get(copy)).not.toBeNull();
  });
});
