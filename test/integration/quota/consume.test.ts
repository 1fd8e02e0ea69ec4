/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return -- JSON replies in tests */
import fc from 'fast-check';
import { sql } from '../../../db/pool';
import { flushLedgerStream } from '../../../services/quota/consumption/ledger-flush';
import { startQuota, type QuotaClient, type QuotaHarness } from './support';
import { subjectPartition } from '../../../db/quota/partitions';

const MAX = Number.MAX_SAFE_INTEGER;

// Every rule holds in both modes: strict decides on Postgres rows, fast on Redis state (its
// ledger entries reach Postgres through the write-ahead stream, flushed here before reading).
describe.each(['strict', 'fast'] as const)(
  'quota: consume, check, refund (%s decisions)',
  (mode) => {
    let h: QuotaHarness;
    let admin: QuotaClient;
    let tenantId: string;
    let adminToken: string;
    let seq = 0;
    beforeAll(async () => {
      h = await startQuota();
      const tenant = await h.newTenant();
      ({ admin, id: tenantId } = tenant);
      adminToken = tenant.adminKey.key;
    });
    afterAll(async () => {
      await h.close();
    });

    /** A subject on a plan of these policies (each on its own new resource unless named). */
    async function subjectWith(policies: Record<string, unknown>[], resources = ['calls']) {
      const n = ++seq;
      const ids: Record<string, string> = {};
      for (const name of resources)
        ids[name] = (await admin.post('/v1/resources', { name: `${name}-${n}` })).body.id;
      const policyIds: string[] = [];
      for (const [i, policy] of policies.entries()) {
        const { resource = resources[0], ...fields } = policy as { resource?: string };
        const created = await admin.post('/v1/policies', {
          name: `p-${n}-${i}`,
          resource_id: ids[resource!],
          enforcement_mode: mode,
          ...fields,
        });
        expect(created.status).toBe(201);
        policyIds.push(created.body.id);
      }
      const plan = (await admin.post('/v1/plans', { name: `plan-${n}`, policy_ids: policyIds }))
        .body;
      const subject = `subject-${n}`;
      await admin.put(`/v1/subjects/${subject}/assignment`, { plan_id: plan.id });
      const resource = (name = resources[0]!) => `${name}-${n}`;
      return { subject, resource, policyIds };
    }
    /** The subject's ledger entries in Postgres (fast mode's flushed from the stream first). */
    async function ledgerOf(subject: string) {
      await flushLedgerStream(h);
      return h.pool.any(sql.unsafe`
      SELECT event_id, entry_type, amount, metadata, idempotency_key, strict_deferred
      FROM quota.ledger_entries
      WHERE tenant_id = ${tenantId} AND subject = ${subject} ORDER BY id`);
    }
    /**
     * Consumes `amounts` concurrently for the subject's one resource and holds the two sides of an
     * exact decision: nothing admitted past `bound`, and no request denied while it fitted (what is
     * left is less than any denied amount). Answers the amount admitted.
     */
    async function raceWithin(
      s: { subject: string; resource: () => string },
      amounts: number[],
      bound: number,
    ): Promise<number> {
      const replies = await Promise.all(
        amounts.map((amount) =>
          admin.post('/v1/consume', {
            subject: s.subject,
            items: [{ resource: s.resource(), amount }],
          }),
        ),
      );
      const requested = (allowed: boolean) =>
        replies.filter((r) => r.body.allowed === allowed).map((r) => r.body.results[0].requested);
      const admitted = requested(true).reduce((sum, amount) => sum + amount, 0);
      expect(admitted).toBeLessThanOrEqual(bound);
      const denied = requested(false);
      if (denied.length > 0) expect(bound - admitted).toBeLessThan(Math.min(...denied));
      return admitted;
    }
    const daily = (limit: number, extra: Record<string, unknown> = {}) => ({
      kind: 'quota',
      limit_amount: limit,
      window_kind: 'fixed',
      window_unit: 'day',
      ...extra,
    });

    it('admits up to the limit, refuses past it with nothing consumed, and check consumes nothing', async () => {
      const s = await subjectWith([daily(10)]);
      const consume = (amount: number) =>
        admin.post('/v1/consume', {
          subject: s.subject,
          items: [{ resource: s.resource(), amount }],
        });
      const first = await consume(4);
      expect(first.body).toMatchObject({
        allowed: true,
        degraded: false,
        event_id: expect.stringMatching(/^evt_/),
        results: [
          {
            policy_id: s.policyIds[0],
            kind: 'quota',
            enforcement_mode: mode,
            source: 'plan',
            allowed: true,
            requested: 4,
            limit: 10,
            used: 4,
            remaining: 6,
            overage: 0,
            window: {
              kind: 'fixed',
              unit: 'day',
              size: 1,
              tz: 'UTC',
              resets_at: expect.any(String),
            },
            retry_after_seconds: null,
          },
        ],
      });
      const denied = await consume(7);
      expect(denied.body).toMatchObject({
        allowed: false,
        results: [{ allowed: false, used: 4, remaining: 6 }],
      });
      expect(denied.body.results[0].retry_after_seconds).toBeGreaterThan(0);
      const checked = await admin.post('/v1/check', {
        subject: s.subject,
        items: [{ resource: s.resource(), amount: 6 }],
      });
      expect(checked.body).toMatchObject({
        allowed: true,
        blocking: null,
        results: [{ used: 10, remaining: 0 }],
      });
      const blocked = await admin.post('/v1/check', {
        subject: s.subject,
        items: [{ resource: s.resource(), amount: 7 }],
      });
      expect(blocked.body).toMatchObject({
        allowed: false,
        blocking: { policy_id: s.policyIds[0] },
      });
      // Two items of one resource are summed: 3 + 3 = 6 fits exactly.
      const summed = await admin.post('/v1/consume', {
        subject: s.subject,
        items: [
          { resource: s.resource(), amount: 3 },
          { resource: s.resource(), amount: 3 },
        ],
      });
      expect(summed.body).toMatchObject({
        allowed: true,
        results: [{ requested: 6, used: 10, remaining: 0 }],
      });
    });

    it('decides every policy of every item together: a refusal by one consumes nothing anywhere', async () => {
      const s = await subjectWith(
        [
          daily(100),
          { kind: 'rate_limit', bucket_capacity: 5, refill_rate_per_sec: 0.001 },
          { ...daily(2), resource: 'seats' },
        ],
        ['calls', 'seats'],
      );
      const items = (calls: number, seats: number) => [
        { resource: s.resource('calls'), amount: calls },
        { resource: s.resource('seats'), amount: seats },
      ];
      expect(
        (await admin.post('/v1/consume', { subject: s.subject, items: items(3, 1) })).body.allowed,
      ).toBe(true);
      const refused = await admin.post('/v1/consume', { subject: s.subject, items: items(3, 1) });
      expect(refused.body.allowed).toBe(false);
      expect(refused.body.results.map((r: { allowed: boolean }) => r.allowed)).toEqual(
        expect.arrayContaining([false]),
      );
      const usage = await admin.post('/v1/check', { subject: s.subject, items: items(0 + 1, 1) });
      const byKind = Object.fromEntries(
        usage.body.results.map((r: { kind: string; resource: string; used: number }) => [
          `${r.kind}:${r.resource}`,
          r.used,
        ]),
      );
      // Nothing of the refused request was consumed: 3 calls and 1 seat are all that count (+1 each checked).
      expect(byKind).toEqual({
        [`quota:${s.resource('calls')}`]: 4,
        [`rate_limit:${s.resource('calls')}`]: 4,
        [`quota:${s.resource('seats')}`]: 2,
      });
    });

    it('replays an idempotency key: the same decision and event_id, nothing consumed twice, concurrent duplicates once', async () => {
      const s = await subjectWith([daily(100)]);
      const body = {
        subject: s.subject,
        items: [{ resource: s.resource(), amount: 5 }],
        idempotency_key: 'k-1',
      };
      const first = await admin.post('/v1/consume', body);
      const again = await admin.post('/v1/consume', body);
      expect(again.body).toEqual(first.body);
      expect(
        await admin.post('/v1/consume', {
          ...body,
          items: [{ resource: s.resource(), amount: 6 }],
        }),
      ).toMatchObject({
        status: 409,
        body: { detail: 'idempotency_key_reused' },
      });
      // On another subject the key is reused all the same, wherever that subject's state lives
      // (in fast mode: another partition, another Redis Cluster slot than the first decision's).
      let other = await subjectWith([daily(100)]);
      while (subjectPartition(tenantId, other.subject) === subjectPartition(tenantId, s.subject))
        other = await subjectWith([daily(100)]);
      const elsewhere = await admin.post('/v1/consume', {
        ...body,
        subject: other.subject,
        items: [{ resource: other.resource(), amount: 5 }],
      });
      expect(elsewhere).toMatchObject({ status: 409, body: { detail: 'idempotency_key_reused' } });
      const concurrent = await Promise.all(
        Array.from({ length: 8 }, () =>
          admin.post('/v1/consume', { ...body, idempotency_key: 'k-2' }),
        ),
      );
      expect(new Set(concurrent.map((r) => r.body.event_id)).size).toBe(1);
      const ledger = await ledgerOf(s.subject);
      expect(ledger).toMatchObject([
        { idempotency_key: 'k-1', amount: '5', strict_deferred: mode === 'fast' },
        { idempotency_key: 'k-2', amount: '5', strict_deferred: mode === 'fast' },
      ]);
      expect(ledger).toHaveLength(2);
    });

    it('refunds into the current window (never below zero) and writes both to the ledger', async () => {
      const s = await subjectWith([daily(10)]);
      const consumed = await admin.post('/v1/consume', {
        subject: s.subject,
        items: [{ resource: s.resource(), amount: 8 }],
        metadata: { request: 'r-1' },
      });
      const refunded = await admin.post('/v1/refund', {
        subject: s.subject,
        items: [{ resource: s.resource(), amount: 3 }],
      });
      expect(refunded.body).toMatchObject({
        event_id: expect.stringMatching(/^evt_/),
        degraded: false,
      });
      const after = await admin.post('/v1/check', {
        subject: s.subject,
        items: [{ resource: s.resource(), amount: 1 }],
      });
      expect(after.body.results[0].used).toBe(6);
      await admin.post('/v1/refund', {
        subject: s.subject,
        items: [{ resource: s.resource(), amount: 50 }],
      });
      expect(
        (
          await admin.post('/v1/check', {
            subject: s.subject,
            items: [{ resource: s.resource(), amount: 10 }],
          })
        ).body.allowed,
      ).toBe(true);
      const ledger = (await ledgerOf(s.subject)).map(
        ({ event_id, entry_type, amount, metadata }) => ({
          event_id,
          entry_type,
          amount,
          metadata,
        }),
      );
      expect(ledger).toEqual([
        {
          event_id: consumed.body.event_id,
          entry_type: 'consume',
          amount: '8',
          metadata: { request: 'r-1' },
        },
        { event_id: refunded.body.event_id, entry_type: 'refund', amount: '-3', metadata: null },
        { event_id: expect.any(String), entry_type: 'refund', amount: '-50', metadata: null },
      ]);
    });

    it('counts past 2^53 exactly under allow_overage, on the wire too', async () => {
      const s = await subjectWith([
        { kind: 'quota', limit_amount: MAX, window_kind: 'lifetime', on_exceed: 'allow_overage' },
      ]);
      const item = { resource: s.resource(), amount: MAX };
      await admin.post('/v1/consume', { subject: s.subject, items: [item] });
      const response = await fetch(`${h.service.url}/v1/consume`, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ subject: s.subject, items: [item] }),
      });
      const text = await response.text();
      expect(text).toContain(`"used":${2n * BigInt(MAX)}`);
      expect(text).toContain(`"overage":${MAX}`);
    });

    it('refuses requests past the limits of the spec, and answers a subject without a plan allowed with no results', async () => {
      const s = await subjectWith([daily(MAX)]);
      const consume = (body: Record<string, unknown>) =>
        admin.post('/v1/consume', {
          subject: s.subject,
          items: [{ resource: s.resource(), amount: 1 }],
          ...body,
        });
      const many = (n: number) =>
        Array.from({ length: n }, () => ({ resource: s.resource(), amount: 1 }));
      const accepted = [
        { items: many(50) },
        { idempotency_key: 'k'.repeat(200) },
        { items: [{ resource: s.resource(), amount: MAX }] },
      ];
      for (const body of accepted) expect((await consume(body)).status).toBe(200);
      const refused: [Record<string, unknown>, (string | number)[]][] = [
        [{ items: [] }, ['body', 'items']],
        [{ items: many(51) }, ['body', 'items']],
        [{ items: [{ resource: s.resource(), amount: 0 }] }, ['body', 'items', 0, 'amount']],
        [{ items: [{ resource: s.resource(), amount: MAX + 1 }] }, ['body', 'items', 0, 'amount']],
        [{ items: [{ resource: 'r'.repeat(201), amount: 1 }] }, ['body', 'items', 0, 'resource']],
        [{ items: [{ resource: 'unknown', amount: 1 }] }, ['body', 'items', 0, 'resource']],
        [{ idempotency_key: 'k'.repeat(201) }, ['body', 'idempotency_key']],
        [{ idempotency_key: 'a\u0000b' }, ['body', 'idempotency_key']],
        [{ subject: 's'.repeat(257) }, ['body', 'subject']],
        [{ subject: 'a{b' }, ['body', 'subject']],
        [{ colour: 'red' }, ['body', 'colour']],
      ];
      for (const [body, loc] of refused) {
        const reply = await consume(body);
        expect({ status: reply.status, loc: reply.body.detail?.[0]?.loc }).toEqual({
          status: 422,
          loc,
        });
      }
      const unplanned = await admin.post('/v1/consume', {
        subject: 'nobody',
        items: [{ resource: s.resource(), amount: 5 }],
      });
      expect(unplanned.body).toMatchObject({ allowed: true, results: [] });
    });

    it('never admits more than the limit under concurrency, and the ledger sums equal the counters (property)', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 20 }),
          fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 5, maxLength: 30 }),
          async (limit, amounts) => {
            const s = await subjectWith([daily(limit)]);
            const admitted = await raceWithin(s, amounts, limit);
            const ledger = (await ledgerOf(s.subject)).reduce(
              (sum, e) => sum + Number(e.amount),
              0,
            );
            // The counter as the service reads it (a Postgres row, or the subject's Redis state).
            const usage = await admin.get(`/v1/subjects/${s.subject}/usage`);
            expect([ledger, usage.body.usage[0].used]).toEqual([admitted, admitted]);
          },
        ),
        { numRuns: 8 },
      );
    }, 60_000);

    it("never admits more than a token bucket's capacity under concurrency (property)", async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 20 }),
          fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 5, maxLength: 30 }),
          async (capacity, amounts) => {
            // Refilling one token in ~2 days: nothing refills while the requests race.
            const s = await subjectWith([
              { kind: 'rate_limit', bucket_capacity: capacity, refill_rate_per_sec: 0.000006 },
            ]);
            await raceWithin(s, amounts, capacity);
          },
        ),
        { numRuns: 8 },
      );
    }, 60_000);

    it("reads a subject's usage and entitlements as they are, with its overrides applied", async () => {
      const s = await subjectWith([
        daily(10, { tz: 'Asia/Tokyo' }),
        { kind: 'rate_limit', bucket_capacity: 5, refill_rate_per_sec: 0.001 },
      ]);
      await admin.post('/v1/consume', {
        subject: s.subject,
        items: [{ resource: s.resource(), amount: 3 }],
      });
      await admin.put(`/v1/subjects/${s.subject}/overrides`, {
        overrides: [{ policy_id: s.policyIds[0], limit_amount: 50 }],
      });
      const usage = await admin.get(`/v1/subjects/${s.subject}/usage`);
      expect(usage.body).toMatchObject({
        subject: s.subject,
        plan_id: expect.stringMatching(/^plan_/),
        usage: expect.arrayContaining([
          expect.objectContaining({
            policy_id: s.policyIds[0],
            source: 'override',
            limit: 50,
            used: 3,
            remaining: 47,
            window: expect.objectContaining({ tz: 'Asia/Tokyo' }),
          }),
          expect.objectContaining({
            policy_id: s.policyIds[1],
            kind: 'rate_limit',
            limit: 5,
            used: 3,
            remaining: 2,
            window: null,
          }),
        ]),
      });
      // Reading consumed nothing.
      expect((await admin.get(`/v1/subjects/${s.subject}/usage`)).body).toEqual(usage.body);
      const entitlements = await admin.get(`/v1/subjects/${s.subject}/entitlements`);
      expect(entitlements.body.policies).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            policy_id: s.policyIds[0],
            limit_amount: 50,
            source: 'override',
            tz: 'Asia/Tokyo',
            window: expect.objectContaining({ kind: 'fixed', unit: 'day' }),
          }),
          expect.objectContaining({
            policy_id: s.policyIds[1],
            bucket_capacity: 5,
            limit_amount: null,
            source: 'plan',
            window: null,
          }),
        ]),
      );
      await admin.put(`/v1/subjects/${s.subject}/overrides`, {
        overrides: [{ policy_id: s.policyIds[1], enabled: false }],
      });
      expect(
        (await admin.get(`/v1/subjects/${s.subject}/entitlements`)).body.policies.map(
          (p: { policy_id: string }) => p.policy_id,
        ),
      ).toEqual([s.policyIds[0]]);
    });
  },
);
