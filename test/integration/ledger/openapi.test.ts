/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-argument -- JSON documents and replies in tests */
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { lintOpenApi } from '../../support/openapi-lint';
import { undocumentedRoutes } from '../../support/documented-routes';
import { ledgerRouter } from '../../../api/ledger/routes';
import { createLedgerBatchers } from '../../../services/ledger/batchers';
import { RememberedKeys } from '../../../services/ledger/credentials';
import { call, LedgerHarness, type Reply, type TenantClients } from './support';

jest.setTimeout(60_000);

describe('ledger /openapi.json and /llms.txt', () => {
  const h = new LedgerHarness();
  let t: TenantClients;
  let doc: any;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  beforeAll(async () => {
    await h.start();
    t = await h.tenant();
    doc = (await call(h.url, 'GET', '/openapi.json', null)).body;
    ajv.addSchema(doc, 'ledger.json');
  });
  afterAll(() => h.stop());

  /** Validates a real response against the schema the document gives for that path, method and status. */
  function conforms(method: string, template: string, reply: Reply): void {
    const responses = doc.paths[template]?.[method.toLowerCase()]?.responses;
    expect([method, template, responses ? 'documented path' : 'undocumented path']).toEqual([
      method,
      template,
      'documented path',
    ]);
    const response = responses[String(reply.status)];
    expect([
      method,
      template,
      reply.status,
      response ? 'documented status' : 'undocumented status',
    ]).toEqual([method, template, reply.status, 'documented status']);
    const schema = response.content?.['application/json']?.schema;
    if (!schema) return;
    const pointer = schema.$ref ? `ledger.json${schema.$ref as string}` : undefined;
    const validate = pointer ? ajv.getSchema(pointer)! : ajv.compile(schema);
    const valid = validate(reply.body);
    expect([method, template, reply.status, valid ? [] : validate.errors]).toEqual([
      method,
      template,
      reply.status,
      [],
    ]);
  }

  it('when the document is linted with Redocly recommended rules, then it is OpenAPI 3.1 with no problems', async () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(await lintOpenApi(doc)).toEqual([]);
  });

  it('when the ledger router is compared with the document, then every route it serves is documented', () => {
    expect(
      undocumentedRoutes(
        ledgerRouter({
          pool: h.pool,
          batchers: createLedgerBatchers(h.pool),
          keys: new RememberedKeys(),
        }),
        doc,
      ),
    ).toEqual([]);
  });

  it('when every route of the spec is exercised, then each real response matches the document', async () => {
    conforms('GET', '/healthz', await call(h.url, 'GET', '/healthz', null));
    conforms('GET', '/ping', await call(h.url, 'GET', '/ping', null));
    const asset = await t.admin.post('/v1/asset-types', { code: 'USD', kind: 'fiat', scale: 2 });
    conforms('POST', '/v1/asset-types', asset);
    conforms(
      'POST',
      '/v1/asset-types',
      await t.admin.post('/v1/asset-types', { code: 'X', kind: 'crypto', scale: 2 }),
    );
    conforms('GET', '/v1/asset-types', await t.reader.get('/v1/asset-types'));
    conforms(
      'PATCH',
      '/v1/asset-types/{asset_type_id}',
      await t.admin.patch(`/v1/asset-types/${asset.body.asset_type_id}`, {
        description: 'dollars',
      }),
    );
    const usd = asset.body.asset_type_id as string;
    const cash = await t.admin.post('/v1/accounts', {
      asset_type_id: usd,
      normal_side: 'debit',
      balance_floor: null,
      name: 'cash',
    });
    conforms('POST', '/v1/accounts', cash);
    const wallet = (
      await t.admin.post('/v1/accounts', {
        asset_type_id: usd,
        normal_side: 'credit',
        metadata: { owner: 'a' },
      })
    ).body.account_id as string;
    conforms('GET', '/v1/accounts', await t.reader.get('/v1/accounts?limit=1'));
    conforms('GET', '/v1/accounts/{account_id}', await t.reader.get(`/v1/accounts/${wallet}`));
    conforms('GET', '/v1/accounts/{account_id}', await t.reader.get(`/v1/accounts/${usd}`));
    conforms(
      'PATCH',
      '/v1/accounts/{account_id}',
      await t.admin.patch(`/v1/accounts/${wallet}`, { name: 'wallet' }),
    );
    const legs = (amount: string) => [
      { account_id: cash.body.account_id, direction: 'debit', amount },
      { account_id: wallet, direction: 'credit', amount },
    ];
    const posted = await t.poster.post('/v1/transactions', {
      entries: legs('10.00'),
      external_id: 'e-1',
      metadata: { a: 1 },
    });
    conforms('POST', '/v1/transactions', posted);
    conforms(
      'POST',
      '/v1/transactions',
      await t.poster.post('/v1/transactions', { entries: legs('1.001') }),
    );
    conforms(
      'POST',
      '/v1/transactions',
      await t.poster.post('/v1/transactions', { entries: legs('1.00') }, null),
    );
    conforms(
      'POST',
      '/v1/transactions',
      await t.poster.post('/v1/transactions', { entries: legs('10.00'), external_id: 'e-1' }),
    );
    const hold = await t.poster.post('/v1/transactions', {
      entries: legs('1.00'),
      pending: true,
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
    });
    conforms(
      'GET',
      '/v1/transactions/{transaction_id}',
      await t.reader.get(`/v1/transactions/${hold.body.transaction_id}`),
    );
    conforms(
      'POST',
      '/v1/transactions/{transaction_id}/commit',
      await t.poster.post(`/v1/transactions/${hold.body.transaction_id}/commit`),
    );
    conforms(
      'POST',
      '/v1/transactions/{transaction_id}/void',
      await t.poster.post(`/v1/transactions/${hold.body.transaction_id}/void`),
    );
    conforms(
      'GET',
      '/v1/accounts/{account_id}/balance',
      await t.reader.get(`/v1/accounts/${wallet}/balance`),
    );
    conforms(
      'GET',
      '/v1/accounts/{account_id}/balance-as-of',
      await t.reader.get(
        `/v1/accounts/${wallet}/balance-as-of?at=${encodeURIComponent(new Date().toISOString())}`,
      ),
    );
    conforms(
      'GET',
      '/v1/accounts/{account_id}/balance-as-of',
      await t.reader.get(`/v1/accounts/${wallet}/balance-as-of?at=2026-01-01T00:00:00+01:00`),
    );
    conforms(
      'GET',
      '/v1/accounts/{account_id}/entries',
      await t.reader.get(`/v1/accounts/${wallet}/entries?limit=1`),
    );
    conforms(
      'GET',
      '/v1/accounts/{account_id}/entries',
      await t.admin.get(`/v1/accounts/${wallet}/entries`),
    );

    const sub = await t.partner.post('/v1/sub-tenants', {
      name: 'client',
      kind: 'sandbox',
      contact_email: 'c@d.ef',
    });
    conforms('POST', '/v1/sub-tenants', sub);
    conforms('GET', '/v1/sub-tenants', await t.partner.get('/v1/sub-tenants'));
    conforms(
      'PATCH',
      '/v1/sub-tenants/{sub_tenant_id}',
      await t.partner.patch(`/v1/sub-tenants/${sub.body.sub_tenant_id}`, { name: 'renamed' }),
    );
    const key = await t.partner.post(`/v1/sub-tenants/${sub.body.sub_tenant_id}/keys`, {
      role: 'ledger_reader',
      label: 'r',
      ttl_days: 5,
    });
    conforms('POST', '/v1/sub-tenants/{sub_tenant_id}/keys', key);
    conforms(
      'GET',
      '/v1/sub-tenants/{sub_tenant_id}/keys',
      await t.partner.get(`/v1/sub-tenants/${sub.body.sub_tenant_id}/keys`),
    );
    conforms(
      'DELETE',
      '/v1/sub-tenants/{sub_tenant_id}/keys/{key_id}',
      await t.partner.del(`/v1/sub-tenants/${sub.body.sub_tenant_id}/keys/${key.body.key_id}`),
    );
    conforms('GET', '/v1/asset-types', await call(h.url, 'GET', '/v1/asset-types', null));
  });

  it('when an agent reads /llms.txt, then it gets the guide to auth, idempotency, money, retries and error codes', async () => {
    const response = await fetch(`${h.url}/llms.txt`);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await response.text();
    for (const topic of [
      '## Auth',
      '## Idempotency',
      '## Money',
      '## Retry rule',
      '## Error codes',
      'INSUFFICIENT_AVAILABLE',
      '%2B',
    ]) {
      expect(text).toContain(topic);
    }
  });
});
