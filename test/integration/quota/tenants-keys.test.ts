/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-return -- JSON replies in tests */
import fs from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { sql } from '../../../db/pool';
import { createTemporalClient } from '../../../platform/temporal';
import { TENANT_SCOPE_NAMES } from '../../../services/quota/scopes';
import { bootstrapWorkflowId } from '../../../contracts/quota/bootstrap';
import { eventually } from '../../support/services';
import { config, startQuota, type QuotaHarness } from './support';

describe('quota: tenants and API keys', () => {
  let h: QuotaHarness;
  beforeAll(async () => {
    h = await startQuota();
  });
  afterAll(async () => {
    await h.close();
  });

  it('when an operator creates a tenant, then its first key holds every tenant scope once its bootstrap workflow has written the grants', async () => {
    const created = await h.operator.post('/v1/tenants', {
      name: 'Acme',
      admin_actor: 'alice@acme.test',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'Acme',
      status: 'active',
      bootstrap: { state: 'pending', attempts: 0, error: null },
      admin_key: {
        scopes: TENANT_SCOPE_NAMES,
        actor: 'alice@acme.test',
        created_by_actor: h.operatorActor,
        status: 'active',
        key: expect.stringMatching(/^qk_[0-9A-Z]{26}_[A-Za-z0-9_-]{43}$/),
      },
    });
    const admin = h.as(created.body.admin_key.key);
    const own = await eventually(async () => {
      const reply = await admin.get('/v1/tenant');
      if (reply.status === 503) expect(reply.body).toEqual({ detail: 'tenant_bootstrap_pending' });
      return reply.status === 200 ? reply : undefined;
    });
    expect(own.body).toMatchObject({ id: created.body.id, bootstrap: { state: 'done' } });
    // One attempt on a quiet machine; a statement timed out under load is attempted again.
    expect(own.body.bootstrap.attempts).toBeGreaterThanOrEqual(1);

    const temporal = createTemporalClient(config);
    try {
      const handle = temporal.workflow.getHandle(bootstrapWorkflowId(created.body.id));
      expect(await handle.result()).toEqual({ keys: 1 });
      const described = await handle.describe();
      expect(described.searchAttributes).toMatchObject({
        TenantId: [created.body.id],
        Service: ['quota'],
      });
      if (process.env.RECORD_HISTORIES === '1') {
        const dir = path.join(__dirname, '../../histories/quota');
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(
          path.join(dir, 'bootstrap-done.json'),
          historyToJSON(await handle.fetchHistory()),
        );
      }

      // A re-run writes nothing new and ends done again, under the same workflow id.
      const rerun = await h.operator.post(`/v1/tenants/${created.body.id}/bootstrap-authz`);
      expect(rerun.status).toBe(200);
      expect(rerun.body.bootstrap.state).toBe('pending');
      const again = await eventually(async () => {
        const tenant = await h.operator.get(`/v1/tenants/${created.body.id}`);
        return tenant.body.bootstrap.state === 'done' ? tenant.body : undefined;
      });
      expect(again.bootstrap.attempts).toBe(2);
      expect((await admin.get('/v1/tenant')).status).toBe(200);
    } finally {
      await temporal.connection.close();
    }
  }, 60_000);

  it('keeps operator routes to operator keys and tenant routes to tenant keys', async () => {
    const { admin } = await h.newTenant();
    expect(await admin.get('/v1/tenants')).toMatchObject({
      status: 403,
      body: { detail: 'operator_key_required' },
    });
    expect(await h.operator.get('/v1/api-keys')).toMatchObject({
      status: 403,
      body: { detail: 'tenant_key_required' },
    });
    expect(await h.as(null).get('/v1/tenant')).toMatchObject({
      status: 401,
      body: { detail: 'unauthorized' },
    });
    const wrong = await h.as('qk_01JAAAAAAAAAAAAAAAAAAAAAAA_' + 'a'.repeat(43)).get('/v1/tenant');
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('mints keys with what the minting key holds, and no more (scopes, constraints); records a delegated issuer', async () => {
    const { admin } = await h.newTenant();
    const minted = await admin.post('/v1/api-keys', {
      name: 'billing',
      scopes: ['keys:write', 'catalog:read'],
      actor: 'billing-bot',
      constraints: { subject_prefix: 'org-1/' },
    });
    expect(minted.status).toBe(201);
    expect(minted.body).toMatchObject({
      name: 'billing',
      scopes: ['keys:write', 'catalog:read'],
      actor: 'billing-bot',
      created_by_actor: expect.any(String),
      constraints: { subject_prefix: 'org-1/', plan_ids: null, catalog_name_prefix: null },
      last_used_at: null,
    });
    const billing = h.as(minted.body.key);
    // A scope it lacks, and constraints looser than its own, are escalations.
    for (const body of [
      { scopes: ['catalog:write'], actor: 'x' },
      { scopes: ['catalog:read'], actor: 'x' },
      { scopes: ['catalog:read'], actor: 'x', constraints: { subject_prefix: 'org-' } },
    ])
      expect(await billing.post('/v1/api-keys', body)).toMatchObject({
        status: 403,
        body: { detail: 'scope_escalation' },
      });
    const narrower = await billing.post('/v1/api-keys', {
      scopes: ['catalog:read'],
      actor: 'billing-bot',
      constraints: { subject_prefix: 'org-1/team-2/' },
    });
    expect(narrower.status).toBe(201);
    expect(narrower.body.created_by_actor).toBeNull();
    // keys:read is not part of keys:write.
    expect(await billing.get('/v1/api-keys')).toMatchObject({
      status: 403,
      body: { detail: 'insufficient_scope' },
    });
    const listed = await admin.get('/v1/api-keys');
    expect(listed.body.map((k: { name: string }) => k.name)).toEqual(['admin', 'billing', '']);
    expect(JSON.stringify(listed.body)).not.toContain('"key"');
  });

  it('rotates a secret on the same row (the old one fails at once), tightens constraints in place, revokes for the next request', async () => {
    const { admin } = await h.newTenant();
    const minted = await admin.post('/v1/api-keys', { scopes: ['keys:read'], actor: 'ci' });
    const old = h.as(minted.body.key);
    expect((await old.get('/v1/api-keys')).status).toBe(200);

    const rotated = await admin.post(`/v1/api-keys/${minted.body.id}/rotate`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.id).toBe(minted.body.id);
    expect(rotated.body.key_id).not.toBe(minted.body.key_id);
    expect((await old.get('/v1/api-keys')).status).toBe(401);
    const current = h.as(rotated.body.key);
    expect((await current.get('/v1/api-keys')).status).toBe(200);

    const tightened = await admin.patch(`/v1/api-keys/${minted.body.id}`, {
      name: 'ci-reader',
      constraints: { subject_prefix: 'ci/' },
    });
    expect(tightened.body).toMatchObject({
      name: 'ci-reader',
      constraints: { subject_prefix: 'ci/' },
    });
    expect(
      await admin.patch(`/v1/api-keys/${minted.body.id}`, { constraints: null }),
    ).toMatchObject({
      status: 403,
      body: { detail: 'scope_escalation' },
    });

    const revoked = await admin.delete(`/v1/api-keys/${minted.body.id}`);
    expect(revoked.body).toMatchObject({ id: minted.body.id, status: 'revoked' });
    expect((await current.get('/v1/api-keys')).status).toBe(401);
    expect((await admin.delete(`/v1/api-keys/${minted.body.id}`)).body.status).toBe('revoked');
    expect(await admin.post(`/v1/api-keys/${minted.body.id}/rotate`)).toMatchObject({
      status: 409,
      body: { detail: 'key_revoked' },
    });
    expect(await admin.patch(`/v1/api-keys/${minted.body.id}`, { name: 'x' })).toMatchObject({
      status: 409,
      body: { detail: 'key_revoked' },
    });
  });

  it("answers another tenant's key ids 404, and writes each change to the tenant's audit, which the database keeps append-only", async () => {
    const a = await h.newTenant();
    const b = await h.newTenant();
    const minted = await a.admin.post('/v1/api-keys', { scopes: ['keys:read'], actor: 'ci' });
    for (const reply of [
      await b.admin.delete(`/v1/api-keys/${minted.body.id}`),
      await b.admin.post(`/v1/api-keys/${minted.body.id}/rotate`),
      await b.admin.patch(`/v1/api-keys/${minted.body.id}`, { name: 'x' }),
    ])
      expect(reply).toMatchObject({ status: 404, body: { detail: 'key_not_found' } });

    const audit = await h.pool.any(sql.unsafe`
      SELECT action, entity_type, actor, before IS NULL AS created FROM quota.audit
      WHERE tenant_id = ${a.id} ORDER BY seq`);
    expect(audit).toEqual([
      { action: 'tenant.create', entity_type: 'tenant', actor: h.operatorActor, created: true },
      { action: 'api_key.create', entity_type: 'api_key', actor: a.adminKey.actor, created: true },
    ]);
    await expect(
      h.pool.query(sql.unsafe`UPDATE quota.audit SET actor = 'x' WHERE tenant_id = ${a.id}`),
    ).rejects.toThrow(/append-only/);
    await expect(
      h.pool.query(sql.unsafe`DELETE FROM quota.audit WHERE tenant_id = ${a.id}`),
    ).rejects.toThrow(/append-only/);
  });

  it('suspends a tenant softly: its keys are refused from the next request, and work again once it is reactivated', async () => {
    const { id, admin } = await h.newTenant();
    const suspended = await h.operator.delete(`/v1/tenants/${id}`);
    expect(suspended.body).toMatchObject({
      id,
      status: 'suspended',
      suspended_at: expect.any(String),
    });
    expect(await admin.get('/v1/tenant')).toMatchObject({
      status: 403,
      body: { detail: 'tenant_suspended' },
    });
    const active = await h.operator.patch(`/v1/tenants/${id}`, { status: 'active' });
    expect(active.body).toMatchObject({ status: 'active', suspended_at: null });
    expect((await admin.get('/v1/tenant')).status).toBe(200);
    expect(await h.operator.get('/v1/tenants/ten_nope')).toMatchObject({
      status: 404,
      body: { detail: 'tenant_not_found' },
    });
  });

  it('records last_used_at in batches, without a write per request', async () => {
    const { admin } = await h.newTenant();
    await admin.get('/v1/tenant');
    const used = await eventually(
      async () => {
        const keys = (await admin.get('/v1/api-keys')).body as {
          name: string;
          last_used_at: string | null;
        }[];
        return keys.find((k) => k.name === 'admin')?.last_used_at ?? undefined;
      },
      15_000,
      500,
    );
    expect(Date.parse(used)).toBeGreaterThan(Date.now() - 60_000);
  }, 20_000);

  it("refuses bad bodies with 422 in FastAPI's shape, at and past each bound", async () => {
    const { admin } = await h.newTenant();
    const mint = (body: unknown) => admin.post('/v1/api-keys', body);
    const ok = await mint({ scopes: ['check'], actor: 'a'.repeat(200), name: 'n'.repeat(200) });
    expect(ok.status).toBe(201);
    const cases: [unknown, (string | number)[], string][] = [
      [{ scopes: ['check'], actor: 'a'.repeat(201) }, ['body', 'actor'], 'string.max'],
      [{ scopes: ['check'], actor: '' }, ['body', 'actor'], 'string.empty'],
      [{ scopes: [], actor: 'a' }, ['body', 'scopes'], 'array.min'],
      [{ scopes: ['nope'], actor: 'a' }, ['body', 'scopes', 0], 'any.only'],
      [{ scopes: ['check'] }, ['body', 'actor'], 'any.required'],
      [{ scopes: ['check'], actor: 'a', extra: 1 }, ['body', 'extra'], 'object.unknown'],
      [
        { scopes: ['check'], actor: 'a', constraints: { subject_prefix: 'p'.repeat(129) } },
        ['body', 'constraints', 'subject_prefix'],
        'string.max',
      ],
      [
        { scopes: ['check'], actor: 'a', constraints: { subject_prefix: 'a{b' } },
        ['body', 'constraints', 'subject_prefix'],
        'custom',
      ],
      [
        { scopes: ['check'], actor: 'a', constraints: { plan_ids: [] } },
        ['body', 'constraints', 'plan_ids'],
        'array.min',
      ],
    ];
    for (const [body, loc, type] of cases) {
      const reply = await mint(body);
      expect({ status: reply.status, item: reply.body.detail?.[0] }).toEqual({
        status: 422,
        item: { loc, msg: expect.any(String), type: expect.stringContaining(type) },
      });
    }
    const notJson = await admin.call('POST', '/v1/api-keys', '{"scopes": [');
    expect(notJson).toMatchObject({
      status: 422,
      body: { detail: [{ loc: ['body'], type: 'json_invalid' }] },
    });
    const prefixAtBound = await mint({
      scopes: ['check'],
      actor: 'a',
      constraints: { subject_prefix: 'p'.repeat(128) },
    });
    expect(prefixAtBound.status).toBe(201);
  });
});
