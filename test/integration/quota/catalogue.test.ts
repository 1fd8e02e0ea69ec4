/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return -- JSON replies in tests */
import { sql } from '../../../db/pool';
import { startQuota, type QuotaClient, type QuotaHarness } from './support';

const MAX = Number.MAX_SAFE_INTEGER;

describe('quota: the catalogue (resources, policies, plans)', () => {
  let h: QuotaHarness;
  let admin: QuotaClient;
  let tenantId: string;
  beforeAll(async () => {
    h = await startQuota();
    ({ admin, id: tenantId } = await h.newTenant());
  });
  afterAll(async () => {
    await h.close();
  });

  const resource = async (name: string) => (await admin.post('/v1/resources', { name })).body;
  const quota = (resourceId: string, extra: Record<string, unknown> = {}) => ({
    name: `q-${Math.random()}`,
    resource_id: resourceId,
    kind: 'quota',
    limit_amount: 100,
    window_kind: 'fixed',
    window_unit: 'month',
    tz: 'Europe/Berlin',
    ...extra,
  });

  it('creates, reads, renames and deletes a resource; names are unique in the tenant', async () => {
    const created = await admin.post('/v1/resources', { name: 'api-calls', description: 'calls' });
    expect(created).toMatchObject({
      status: 201,
      body: {
        id: expect.stringMatching(/^res_/),
        name: 'api-calls',
        description: 'calls',
        unit: 'units',
      },
    });
    expect(await admin.post('/v1/resources', { name: 'api-calls' })).toMatchObject({
      status: 409,
      body: { detail: 'name_taken' },
    });
    const renamed = await admin.patch(`/v1/resources/${created.body.id}`, {
      name: 'requests',
      unit: 'requests',
    });
    expect(renamed.body).toMatchObject({ name: 'requests', unit: 'requests' });
    expect((await admin.get(`/v1/resources/${created.body.id}`)).body.name).toBe('requests');
    expect((await admin.get('/v1/resources')).body.map((r: { id: string }) => r.id)).toContain(
      created.body.id,
    );
    expect((await admin.delete(`/v1/resources/${created.body.id}`)).status).toBe(204);
    expect(await admin.get(`/v1/resources/${created.body.id}`)).toMatchObject({
      status: 404,
      body: { detail: 'resource_not_found' },
    });
  });

  it('takes each policy kind with its own fields, with defaults, and refuses the fields of the other kind', async () => {
    const res = await resource('tokens');
    const monthly = await admin.post('/v1/policies', quota(res.id, { name: 'monthly' }));
    expect(monthly).toMatchObject({
      status: 201,
      body: {
        kind: 'quota',
        limit_amount: 100,
        window_kind: 'fixed',
        window_unit: 'month',
        window_size: 1,
        tz: 'Europe/Berlin',
        bucket_capacity: null,
        refill_rate_per_sec: null,
        enforcement_mode: 'fast',
        on_exceed: 'block',
        on_backend_error: null,
        enabled: true,
      },
    });
    // A link of the tz database is kept as given, not made its target.
    for (const tz of ['Etc/UTC', 'US/Eastern'])
      expect((await admin.post('/v1/policies', quota(res.id, { tz }))).body.tz).toBe(tz);
    const lifetime = await admin.post('/v1/policies', {
      name: 'ever',
      resource_id: res.id,
      kind: 'quota',
      limit_amount: MAX,
      window_kind: 'lifetime',
      enforcement_mode: 'strict',
    });
    expect(lifetime.body).toMatchObject({
      limit_amount: MAX,
      window_unit: null,
      window_size: null,
      tz: null,
    });
    const bucket = await admin.post('/v1/policies', {
      name: 'rate',
      resource_id: res.id,
      kind: 'rate_limit',
      bucket_capacity: 10,
      refill_rate_per_sec: 5.000001e-7,
    });
    expect(bucket.body).toMatchObject({
      kind: 'rate_limit',
      bucket_capacity: 10,
      limit_amount: null,
      window_kind: null,
    });

    const refusals: [Record<string, unknown>, string][] = [
      [{ ...quota(res.id), bucket_capacity: 5 }, 'bucket_capacity'],
      [{ ...quota(res.id), limit_amount: undefined }, 'limit_amount'],
      [{ ...quota(res.id), limit_amount: 0 }, 'limit_amount'],
      [{ ...quota(res.id), limit_amount: MAX + 1 }, 'limit_amount'],
      [{ ...quota(res.id), window_unit: undefined }, 'window_unit'],
      [{ ...quota(res.id), window_kind: 'lifetime', tz: null }, 'window_unit'],
      [{ ...quota(res.id), window_kind: 'rolling' }, 'tz'],
      [{ ...quota(res.id), tz: 'Mars/Olympus' }, 'tz'],
      [{ ...quota(res.id), tz: '+02:00' }, 'tz'],
      // Only the tz database's own spelling (platform/time-zone.ts), case included.
      [{ ...quota(res.id), tz: 'europe/berlin' }, 'tz'],
      [{ ...quota(res.id), tz: 'etc/utc' }, 'tz'],
      [{ ...quota(res.id), tz: 'UTC+1' }, 'tz'],
      [{ ...quota(res.id), window_size: 0 }, 'window_size'],
      [
        {
          name: 'r',
          resource_id: res.id,
          kind: 'rate_limit',
          bucket_capacity: 1,
          refill_rate_per_sec: 5e-7,
        },
        'refill_rate_per_sec',
      ],
      [
        {
          name: 'r',
          resource_id: res.id,
          kind: 'rate_limit',
          bucket_capacity: 1,
          refill_rate_per_sec: 1e14,
        },
        'refill_rate_per_sec',
      ],
      [
        {
          name: 'r',
          resource_id: res.id,
          kind: 'rate_limit',
          bucket_capacity: 1,
          refill_rate_per_sec: 1,
          limit_amount: 3,
        },
        'limit_amount',
      ],
      [
        { name: 'r', resource_id: res.id, kind: 'rate_limit', refill_rate_per_sec: 1 },
        'bucket_capacity',
      ],
      [{ ...quota(res.id), name: 'n'.repeat(201) }, 'name'],
      [{ ...quota(res.id), kind: 'meter' }, 'kind'],
    ];
    for (const [body, field] of refusals) {
      const reply = await admin.post('/v1/policies', body);
      expect({
        status: reply.status,
        locs: reply.body.detail?.map((d: { loc: string[] }) => d.loc[1]),
      }).toEqual({
        status: 422,
        locs: expect.arrayContaining([field]),
      });
    }
    expect(
      (
        await admin.post('/v1/policies', {
          ...quota(res.id),
          name: 'n'.repeat(200),
          refill_rate_per_sec: null,
        })
      ).status,
    ).toBe(201);
    const rate = await admin.post('/v1/policies', {
      name: 'fast-rate',
      resource_id: res.id,
      kind: 'rate_limit',
      bucket_capacity: MAX,
      refill_rate_per_sec: 9.9e13,
    });
    expect(rate.status).toBe(201);
    expect(await admin.post('/v1/policies', { ...quota('res_nope') })).toMatchObject({
      status: 422,
      body: { detail: [{ loc: ['body', 'resource_id'], type: 'reference_not_found' }] },
    });
  });

  it('patches what may change and refuses window shape, kind and enforcement mode', async () => {
    const res = await resource('bytes');
    const policy = (await admin.post('/v1/policies', quota(res.id))).body;
    const patched = await admin.patch(`/v1/policies/${policy.id}`, {
      limit_amount: 500,
      on_exceed: 'allow_overage',
      on_backend_error: 'deny',
      enabled: false,
      name: null,
    });
    expect(patched.body).toMatchObject({
      limit_amount: 500,
      on_exceed: 'allow_overage',
      on_backend_error: 'deny',
      enabled: false,
      name: policy.name,
    });
    for (const field of [
      'kind',
      'window_kind',
      'window_unit',
      'window_size',
      'tz',
      'enforcement_mode',
      'resource_id',
    ]) {
      const reply = await admin.patch(`/v1/policies/${policy.id}`, {
        [field]: policy[field] ?? 'x',
      });
      expect(reply).toMatchObject({
        status: 422,
        body: { detail: [{ loc: ['body', field], msg: expect.stringContaining('cannot change') }] },
      });
    }
    expect(await admin.patch(`/v1/policies/${policy.id}`, { bucket_capacity: 3 })).toMatchObject({
      status: 422,
      body: { detail: [{ loc: ['body', 'bucket_capacity'], type: 'kind_mismatch' }] },
    });
    expect(
      (await admin.patch(`/v1/policies/${policy.id}`, { on_backend_error: null })).body
        .on_backend_error,
    ).toBeNull();
  });

  it('groups policies into plans, replaces them with PUT, and keeps what is referenced from deletion', async () => {
    const res = await resource('seats');
    const a = (await admin.post('/v1/policies', quota(res.id))).body;
    const b = (await admin.post('/v1/policies', quota(res.id))).body;
    const plan = await admin.post('/v1/plans', { name: 'pro', policy_ids: [b.id, a.id] });
    expect(plan).toMatchObject({
      status: 201,
      body: { name: 'pro', description: '', policy_ids: [b.id, a.id] },
    });
    const replaced = await admin.put(`/v1/plans/${plan.body.id}/policies`, { policy_ids: [a.id] });
    expect(replaced.body.policy_ids).toEqual([a.id]);
    expect(
      await admin.put(`/v1/plans/${plan.body.id}/policies`, { policy_ids: [a.id, 'pol_nope'] }),
    ).toMatchObject({
      status: 422,
      body: { detail: [{ loc: ['body', 'policy_ids', 1], type: 'reference_not_found' }] },
    });
    expect(await admin.delete(`/v1/policies/${a.id}`)).toMatchObject({
      status: 409,
      body: { detail: 'in_use' },
    });
    expect(await admin.delete(`/v1/resources/${res.id}`)).toMatchObject({
      status: 409,
      body: { detail: 'in_use' },
    });
    expect(
      (await admin.patch(`/v1/plans/${plan.body.id}`, { description: 'Pro plan', name: null }))
        .body,
    ).toMatchObject({
      name: 'pro',
      description: 'Pro plan',
    });
    expect((await admin.delete(`/v1/plans/${plan.body.id}`)).status).toBe(204);
    expect((await admin.delete(`/v1/policies/${a.id}`)).status).toBe(204);
    expect((await admin.delete(`/v1/policies/${b.id}`)).status).toBe(204);
    expect((await admin.delete(`/v1/resources/${res.id}`)).status).toBe(204);

    const audit = await h.pool.anyFirst(sql.unsafe`
      SELECT action FROM quota.audit WHERE tenant_id = ${tenantId} AND entity_id = ${plan.body.id} ORDER BY seq`);
    expect(audit).toEqual(['plan.create', 'plan.set_policies', 'plan.update', 'plan.delete']);
  });

  it("bounds a key's catalogue writes by catalog_name_prefix, and needs catalog:write to write", async () => {
    const scoped = h.as(
      (
        await admin.post('/v1/api-keys', {
          scopes: ['catalog:read', 'catalog:write'],
          actor: 'team-a',
          constraints: { catalog_name_prefix: 'team-a/' },
        })
      ).body.key,
    );
    expect((await scoped.post('/v1/resources', { name: 'team-a/gpu' })).status).toBe(201);
    expect(await scoped.post('/v1/resources', { name: 'team-b/gpu' })).toMatchObject({
      status: 403,
      body: { detail: 'constraint_violation' },
    });
    const other = await resource('shared');
    expect(await scoped.patch(`/v1/resources/${other.id}`, { description: 'x' })).toMatchObject({
      status: 403,
    });
    expect(await scoped.delete(`/v1/resources/${other.id}`)).toMatchObject({ status: 403 });
    expect((await scoped.get(`/v1/resources/${other.id}`)).status).toBe(200);

    const reader = h.as(
      (await admin.post('/v1/api-keys', { scopes: ['catalog:read'], actor: 'r' })).body.key,
    );
    expect(await reader.post('/v1/resources', { name: 'x' })).toMatchObject({
      status: 403,
      body: { detail: 'insufficient_scope' },
    });
  });

  it("answers another tenant's catalogue ids 404", async () => {
    const res = await resource('private');
    const other = await h.newTenant();
    expect(await other.admin.get(`/v1/resources/${res.id}`)).toMatchObject({
      status: 404,
      body: { detail: 'resource_not_found' },
    });
    expect(await other.admin.delete(`/v1/resources/${res.id}`)).toMatchObject({ status: 404 });
    expect(await other.admin.post('/v1/policies', quota(res.id))).toMatchObject({ status: 422 });
  });
});
