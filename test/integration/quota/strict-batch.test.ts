/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment -- JSON replies in tests */
import { ulid } from '../../../db/ids';
import { sql } from '../../../db/pool';
import {
  decideStrictQuotaBatch,
  type StrictQuotasReply,
  type StrictQuotasRequest,
} from '../../../db/quota/consumption';
import { catalogueGeneration, loadSubject } from '../../../db/quota/generations';
import { startQuota, subjectOnPlan, type QuotaHarness } from './support';

/**
 * Group commit of strict consumes (decide_strict_quota_batch.sql) called as the batcher calls it:
 * requests on one subject see the ones before them in the batch (never together past a limit),
 * a request judged by a moved catalogue answers `moved` alone, and one that would cross an alert
 * threshold writes nothing; an idempotency key is decided once, in the batch or across paths.
 */
describe('quota: strict consumes decided together in one statement', () => {
  let h: QuotaHarness;
  let tenantId: string;
  let admin: Awaited<ReturnType<QuotaHarness['newTenant']>>['admin'];
  beforeAll(async () => {
    h = await startQuota();
    ({ id: tenantId, admin } = await h.newTenant());
  });
  afterAll(async () => {
    await h.close();
  });

  async function requestFor(subject: string, policyId: string, amount: bigint, limit: bigint) {
    const generations = {
      catalogue: await catalogueGeneration(h.pool, tenantId),
      subject: (await loadSubject(h.pool, tenantId, subject)).generation,
    };
    const eventId = `evt_${ulid()}`;
    const request: StrictQuotasRequest = {
      tenantId,
      subject,
      generations,
      policies: [
        {
          policy_id: policyId,
          window_key: 'lifetime',
          window_keys: ['lifetime'],
          expires_at: null,
          requested: amount.toString(),
          limit: limit.toString(),
          allow_overage: false,
          thresholds: [],
        },
      ],
      ledger: [
        {
          tenantId,
          eventId,
          subject,
          resource: 'calls',
          amount,
          entryType: 'consume',
          idempotencyKey: null,
          reservationId: null,
          strictDeferred: false,
          metadata: null,
          occurredAt: new Date().toISOString(),
        },
      ],
    };
    return request;
  }

  it('decides each request in order, each seeing the ones before; a moved one answers alone; a crossing writes nothing', async () => {
    const { policies } = await subjectOnPlan(admin, `batch-${Date.now()}`, {
      limits: { day: 10 },
      mode: 'strict',
      subject: 'batched',
    });
    const policyId = policies.day.id as string;
    const four = await requestFor('batched', policyId, 4n, 10n);
    const moved = { ...four, generations: { ...four.generations, catalogue: '0' } };
    const crossing = await requestFor('batched', policyId, 1n, 10n);
    crossing.policies[0]!.thresholds = ['9'];
    const answers = await decideStrictQuotaBatch(h.pool, [
      four,
      await requestFor('batched', policyId, 4n, 10n),
      moved,
      await requestFor('batched', policyId, 4n, 10n),
      crossing,
      await requestFor('batched', policyId, 2n, 10n),
    ]);
    expect(answers).toEqual([
      { status: 'decided', allowed: true, used: ['0'] },
      { status: 'decided', allowed: true, used: ['4'] },
      { status: 'moved' },
      { status: 'decided', allowed: false, used: ['8'] },
      { status: 'crossing' },
      { status: 'decided', allowed: true, used: ['8'] },
    ]);
    const counted = await h.pool.oneFirst(sql.unsafe`
      SELECT sum(used)::text FROM quota.counters
      WHERE tenant_id = ${tenantId} AND subject = 'batched' AND policy_id = ${policyId}`);
    const ledger = await h.pool.oneFirst(sql.unsafe`
      SELECT sum(amount)::text FROM quota.ledger_entries
      WHERE tenant_id = ${tenantId} AND subject = 'batched'`);
    expect([counted, ledger]).toEqual(['10', '10']);
  });

  const keyed = (request: StrictQuotasRequest, key: string, hash: string) => ({
    ...request,
    idempotency: { key, hash, record: { eventId: request.ledger[0]!.eventId } },
  });
  /** A recorded answer's response as JSON (Postgres writes jsonb's text its own way). */
  const parsedResponse = (answer: StrictQuotasReply) =>
    answer.status === 'recorded' ? { ...answer, response: JSON.parse(answer.response) } : answer;
  const claimOf = (key: string) =>
    h.pool.maybeOne(sql.unsafe`
      SELECT status FROM quota.idempotency
      WHERE tenant_id = ${tenantId} AND endpoint = 'consume' AND key = ${key}`);

  it('decides a key once: a duplicate in the batch answers the first decision; a key left undecided stays unclaimed', async () => {
    const { policies } = await subjectOnPlan(admin, `keyed-${Date.now()}`, {
      limits: { day: 10 },
      mode: 'strict',
      subject: 'keyed',
    });
    const policyId = policies.day.id as string;
    const first = keyed(await requestFor('keyed', policyId, 4n, 10n), 'k-1', 'aa');
    const moved = keyed(await requestFor('keyed', policyId, 1n, 10n), 'k-moved', 'bb');
    moved.generations = { ...moved.generations, catalogue: '0' };
    const answers = await decideStrictQuotaBatch(h.pool, [
      first,
      keyed(await requestFor('keyed', policyId, 4n, 10n), 'k-1', 'aa'),
      keyed(await requestFor('keyed', policyId, 5n, 10n), 'k-1', 'cc'),
      moved,
    ]);
    const recorded = {
      status: 'recorded',
      hash: 'aa',
      response: { used: ['0'], decision: first.idempotency.record },
    };
    expect(answers.map(parsedResponse)).toEqual([
      { status: 'decided', allowed: true, used: ['0'] },
      recorded,
      // Another body under the key: its recorded hash tells the caller (409).
      recorded,
      { status: 'moved' },
    ]);
    expect(await claimOf('k-1')).toEqual({ status: 200 });
    expect(await claimOf('k-moved')).toBeNull();
    // A later batch replays it too, and nothing was consumed twice.
    expect((await decideStrictQuotaBatch(h.pool, [first])).map(parsedResponse)).toEqual([recorded]);
    const ledger = await h.pool.oneFirst(sql.unsafe`
      SELECT sum(amount)::text FROM quota.ledger_entries
      WHERE tenant_id = ${tenantId} AND subject = 'keyed'`);
    expect(ledger).toBe('4');
  });

  it('replays a key across the paths: a decision recorded by the statement through the transaction, and back', async () => {
    const { resource, policies, plan, subject } = await subjectOnPlan(
      admin,
      `paths-${Date.now()}`,
      {
        limits: { day: 10 },
        mode: 'strict',
      },
    );
    const body = {
      subject,
      items: [{ resource: resource.name, amount: 3 }],
      idempotency_key: 'k-paths',
    };
    const first = await admin.post('/v1/consume', body);
    expect(first).toMatchObject({ status: 200, body: { allowed: true } });
    // A strict rate limit joins the plan: the retry now takes the transaction path.
    const limit = await admin.post('/v1/policies', {
      name: `${resource.name}-rate`,
      resource_id: resource.id,
      kind: 'rate_limit',
      bucket_capacity: 5,
      refill_rate_per_sec: 0.001,
      enforcement_mode: 'strict',
    });
    const policyIds = [policies.day.id, limit.body.id];
    await admin.put(`/v1/plans/${plan.id}/policies`, { policy_ids: policyIds });
    // Judged by the new plan (a check reads it), so the retry cannot take the statement path.
    expect(
      (await admin.post('/v1/check', { subject, items: body.items })).body.results,
    ).toHaveLength(2);
    expect((await admin.post('/v1/consume', body)).body).toEqual(first.body);
    // A key recorded by the transaction path, replayed by the statement once the limit is gone.
    const other = { ...body, idempotency_key: 'k-paths-2' };
    const second = await admin.post('/v1/consume', other);
    expect(second.body.results).toHaveLength(2);
    await admin.put(`/v1/plans/${plan.id}/policies`, { policy_ids: [policies.day.id] });
    expect(
      (await admin.post('/v1/check', { subject, items: body.items })).body.results,
    ).toHaveLength(1);
    expect((await admin.post('/v1/consume', other)).body).toEqual(second.body);
    expect((await admin.get(`/v1/subjects/${subject}/usage`)).body).toMatchObject({
      usage: [expect.objectContaining({ policy_id: policies.day.id, used: 6 })],
    });
  });
});
