/* eslint-disable @typescript-eslint/no-unsafe-member-access -- JSON replies in tests */
import { QUOTA_OPERATIONS } from '../../../api/quota/routes';
import { isOperatorScope, TENANT_SCOPE_NAMES } from '../../../services/quota/scopes';
import { startQuota, type QuotaHarness } from './support';

/**
 * Every operation of the document, called by a key that lacks exactly the scope it needs (and
 * by the wrong kind of key): refused before anything else is looked at, whatever the request.
 */
describe('quota: every route needs its scope', () => {
  let h: QuotaHarness;
  let tenantAdmin: string;
  beforeAll(async () => {
    h = await startQuota();
    tenantAdmin = (await h.newTenant()).adminKey.key;
  });
  afterAll(async () => {
    await h.close();
  });

  const operations = Object.values(QUOTA_OPERATIONS).filter((op) => op.access !== 'public');
  const concrete = (path: string) => path.replace(/\{[a-z_]+\}/g, 'x');
  const call = (key: string, op: (typeof operations)[number]) =>
    h
      .as(key)
      .call(op.method.toUpperCase(), concrete(op.path), op.method === 'get' ? undefined : {});

  it.each(
    operations
      .filter((op) => op.access !== 'tenant' && !isOperatorScope(op.access))
      .map((op) => [op.operationId, op]),
  )('%s: 403 insufficient_scope for a key with every other tenant scope', async (_id, op) => {
    const others = TENANT_SCOPE_NAMES.filter((scope) => scope !== op.access);
    const key = (
      await h.as(tenantAdmin).post('/v1/api-keys', { scopes: others, actor: 'no-scope' })
    ).body.key as string;
    const refused = await call(key, op);
    expect(refused).toMatchObject({ status: 403, body: { detail: 'insufficient_scope' } });
    // RFC 6750's challenge names the scope the key lacks.
    expect(refused.headers.get('www-authenticate')).toBe(
      `Bearer error="insufficient_scope", scope="${op.access}"`,
    );
    expect(await call(h.operatorKey, op)).toMatchObject({
      status: 403,
      body: { detail: 'tenant_key_required' },
    });
  });

  it.each(
    operations
      .filter((op) => op.access !== 'tenant' && isOperatorScope(op.access))
      .map((op) => [op.operationId, op]),
  )('%s: 403 operator_key_required for a tenant key', async (_id, op) => {
    expect(await call(tenantAdmin, op)).toMatchObject({
      status: 403,
      body: { detail: 'operator_key_required' },
    });
  });

  it.each(operations.map((op) => [op.operationId, op]))(
    '%s: 401 without a key',
    async (_id, op) => {
      const reply = await h
        .as(null)
        .call(op.method.toUpperCase(), concrete(op.path), op.method === 'get' ? undefined : {});
      expect(reply).toMatchObject({ status: 401, body: { detail: 'unauthorized' } });
    },
  );
});
