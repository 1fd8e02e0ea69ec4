import Ajv2020 from 'ajv/dist/2020';
import { openApiDocument } from '../../../api/runs/openapi';
import { client, newTenant, startHarness, type Harness } from './support';

/**
 * PUT /api/v1/tenant/quotas accepts exactly the values its OpenAPI document allows (what
 * schemathesis generates from): at the bounds, a value the document allows is stored and one it
 * does not is refused 422.
 */
describe('tenant quota bounds, the document against the route', () => {
  let h: Harness;
  const ajv = new Ajv2020({ strict: false });
  const quotas = openApiDocument.components.schemas.TenantQuotas as {
    properties: Record<string, object>;
  };
  const allowed = ajv.compile(quotas.properties.max_cpu_cores!);

  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h?.close());

  it('max_cpu_cores: every value near the bounds is accepted exactly when the document allows it', async () => {
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    const values = [
      0.0001, 0.0004, 0.0005, 0.0009, 0.001, 0.0015, 2, 9999.9994, 10_000, 10_000.0001,
    ];
    const verdicts = [];
    for (const value of values) {
      const reply = await api.call('PUT', '/api/v1/tenant/quotas', { max_cpu_cores: value });
      verdicts.push({ value, documented: allowed(value), status: reply.status });
    }
    expect(verdicts).toEqual(verdicts.map((v) => ({ ...v, status: v.documented ? 200 : 422 })));
  });
});
