/* eslint-disable @typescript-eslint/no-unsafe-member-access -- JSON replies in tests */
import { quotaRoutes } from '../../../api/quota/app';
import { openApiDocument } from '../../../api/quota/openapi';
import { lintOpenApi } from '../../support/openapi-lint';
import { undocumentedRoutes } from '../../support/documented-routes';
import { config, startQuota, type QuotaHarness } from './support';

describe('quota: the OpenAPI document and /llms.txt', () => {
  let h: QuotaHarness;
  beforeAll(async () => {
    h = await startQuota();
  });
  afterAll(async () => {
    await h.close();
  });

  it('describes every route the service serves, and lints clean', async () => {
    // Mounting reads the configuration (the codec's keys and origins), nothing else of deps.
    expect(undocumentedRoutes(quotaRoutes({ config } as never), openApiDocument)).toEqual([]);
    expect(await lintOpenApi(openApiDocument)).toEqual([]);
  });

  it('is served at /openapi.json, with the scope each operation needs', async () => {
    const served = await h.as(null).get('/openapi.json');
    expect(served.status).toBe(200);
    expect(served.body).toEqual(JSON.parse(JSON.stringify(openApiDocument)));
    expect(served.body.paths['/v1/api-keys'].post).toMatchObject({
      'x-required-scope': 'keys:write',
      security: [{ bearer: [] }],
      requestBody: {
        content: { 'application/json': { schema: { $ref: '#/components/schemas/ApiKeyCreate' } } },
      },
    });
    expect(served.body.components.schemas.ApiKeyCreate.properties.actor).toMatchObject({
      minLength: 1,
      maxLength: 200,
    });
  });

  it('serves /llms.txt as text, naming every scope and error code', async () => {
    const guide = await h.as(null).get('/llms.txt');
    expect(guide.status).toBe(200);
    expect(guide.headers.get('content-type')).toContain('text/plain');
    for (const text of [
      'consume',
      'assignments:write',
      'tenants:admin',
      '401 unauthorized',
      '403 scope_escalation',
    ])
      expect(guide.body).toContain(text);
  });
});
