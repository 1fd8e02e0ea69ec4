/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument -- JSON replies in tests */
import { startQuota, type QuotaClient, type QuotaHarness } from './support';

describe('quota: subjects (assignment, overrides)', () => {
  let h: QuotaHarness;
  let admin: QuotaClient;
  let policyId: string;
  let planId: string;
  let otherPlanId: string;
  beforeAll(async () => {
    h = await startQuota();
    ({ admin } = await h.newTenant());
    const res = (await admin.post('/v1/resources', { name: 'calls' })).body;
    policyId = (
      await admin.post('/v1/policies', {
        name: 'daily',
        resource_id: res.id,
        kind: 'quota',
        limit_amount: 10,
        window_kind: 'fixed',
        window_unit: 'day',
      })
    ).body.id;
    planId = (await admin.post('/v1/plans', { name: 'free', policy_ids: [policyId] })).body.id;
    otherPlanId = (await admin.post('/v1/plans', { name: 'pro' })).body.id;
  });
  afterAll(async () => {
    await h.close();
  });

  const path = (subject: string, what = 'assignment') =>
    `/v1/subjects/${encodeURIComponent(subject)}/${what}`;

  it('assigns, reassigns, reads and removes a plan; a plan in use is not deleted', async () => {
    const put = await admin.put(path('org/1'), { plan_id: planId });
    expect(put).toMatchObject({
      status: 200,
      body: { subject: 'org/1', plan_id: planId, plan_name: 'free' },
    });
    const moved = await admin.put(path('org/1'), { plan_id: otherPlanId });
    expect(moved.body).toMatchObject({
      plan_id: otherPlanId,
      plan_name: 'pro',
      created_at: put.body.created_at,
    });
    expect((await admin.get(path('org/1'))).body.plan_id).toBe(otherPlanId);
    expect(await admin.delete(`/v1/plans/${otherPlanId}`)).toMatchObject({
      status: 409,
      body: { detail: 'in_use' },
    });
    expect((await admin.delete(path('org/1'))).status).toBe(204);
    expect(await admin.get(path('org/1'))).toMatchObject({
      status: 404,
      body: { detail: 'assignment_not_found' },
    });
    expect(await admin.delete(path('org/1'))).toMatchObject({ status: 404 });
    expect(await admin.put(path('org/1'), { plan_id: 'plan_nope' })).toMatchObject({
      status: 422,
      body: { detail: [{ loc: ['body', 'plan_id'], type: 'reference_not_found' }] },
    });
  });

  it('takes subjects of 1 to 256 characters without control characters or braces', async () => {
    expect((await admin.put(path('s'.repeat(256)), { plan_id: planId })).status).toBe(200);
    expect((await admin.put(path('😀'.repeat(256)), { plan_id: planId })).status).toBe(200);
    for (const bad of ['s'.repeat(257), 'a{b', 'a}b', 'tab\there', 'del\u007f'])
      expect(await admin.put(path(bad), { plan_id: planId })).toMatchObject({
        status: 422,
        body: { detail: [{ loc: ['params', 'subject'] }] },
      });
  });

  it('replaces overrides, each policy once, and only with policies of the tenant', async () => {
    const put = await admin.put(path('org/2', 'overrides'), {
      overrides: [{ policy_id: policyId, limit_amount: Number.MAX_SAFE_INTEGER }],
    });
    expect(put.body).toEqual([
      { policy_id: policyId, limit_amount_override: Number.MAX_SAFE_INTEGER, enabled: true },
    ]);
    expect((await admin.get(path('org/2', 'overrides'))).body).toEqual(put.body);
    const disabled = await admin.put(path('org/2', 'overrides'), {
      overrides: [{ policy_id: policyId, enabled: false }],
    });
    expect(disabled.body).toEqual([
      { policy_id: policyId, limit_amount_override: null, enabled: false },
    ]);
    expect(
      await admin.put(path('org/2', 'overrides'), {
        overrides: [{ policy_id: policyId }, { policy_id: policyId, limit_amount: 3 }],
      }),
    ).toMatchObject({ status: 422, body: { detail: [{ loc: ['body', 'overrides', 1] }] } });
    expect(
      await admin.put(path('org/2', 'overrides'), { overrides: [{ policy_id: 'pol_nope' }] }),
    ).toMatchObject({
      status: 422,
      body: {
        detail: [{ loc: ['body', 'overrides', 0, 'policy_id'], type: 'reference_not_found' }],
      },
    });
    expect(
      await admin.put(path('org/2', 'overrides'), {
        overrides: [{ policy_id: policyId, limit_amount: 0 }],
      }),
    ).toMatchObject({
      status: 422,
    });
    expect((await admin.put(path('org/2', 'overrides'), { overrides: [] })).body).toEqual([]);
  });

  it('bounds a key by subject_prefix and plan_ids, and keeps tenants apart', async () => {
    const limited = h.as(
      (
        await admin.post('/v1/api-keys', {
          scopes: ['assignments:read', 'assignments:write'],
          actor: 'crm',
          constraints: { subject_prefix: 'crm/', plan_ids: [planId] },
        })
      ).body.key,
    );
    expect((await limited.put(path('crm/1'), { plan_id: planId })).status).toBe(200);
    expect(await limited.put(path('crm/1'), { plan_id: otherPlanId })).toMatchObject({
      status: 403,
      body: { detail: 'constraint_violation' },
    });
    expect(await limited.put(path('web/1'), { plan_id: planId })).toMatchObject({
      status: 403,
      body: { detail: 'constraint_violation' },
    });
    expect(await limited.get(path('web/1'))).toMatchObject({ status: 403 });
    expect(await limited.get(path('web/1', 'overrides'))).toMatchObject({ status: 403 });

    const other = await h.newTenant();
    expect(await other.admin.get(path('crm/1'))).toMatchObject({ status: 404 });
    expect(await other.admin.put(path('crm/1'), { plan_id: planId })).toMatchObject({
      status: 422,
    });
  });
});
