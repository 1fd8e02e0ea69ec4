/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment -- JSON replies in tests */
import { ulid } from '../../../db/ids';
import { sql } from '../../../db/pool';
import { decideStrictQuotaBatch, type StrictQuotasRequest } from '../../../db/quota/consumption';
import { catalogueGeneration, loadSubject } from '../../../db/quota/generations';
import { startQuota, subjectOnPlan, type QuotaHarness } from './support';

/**
 * Group commit of strict consumes (decide_strict_quota_batch.sql) called as the batcher calls it:
 * requests on one subject see the ones before them in the batch (never together past a limit),
 * a request judged by a moved catalogue answers `moved` alone, and one that would cross an alert
 * threshold writes nothing.
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
});
