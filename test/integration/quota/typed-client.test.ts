import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createQuotaClient } from '../../../platform/quota-client/client';
import { REPO_ROOT } from '../../support/stack-env';
import { startQuota, subjectOnPlan, type QuotaHarness } from './support';

/**
 * The typed quota client (platform/quota-client) against the real service: its generated types
 * are those of the document the service serves, and its calls are answered as the contract says.
 */
const CLIENT_DIR = path.join(REPO_ROOT, 'platform', 'quota-client');

describe('the typed quota client', () => {
  let h: QuotaHarness;
  beforeAll(async () => {
    h = await startQuota();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('is generated from the document the service serves (quota-api.ts is current)', async () => {
    // The generator runs as its command does (openapi-typescript is an ES module jest cannot load).
    const out = path.join(os.tmpdir(), `quota-api-${process.pid}.ts`);
    await promisify(execFile)(path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx'), [
      path.join(CLIENT_DIR, 'generate.ts'),
      ...['--openapi', `${h.service.url}/openapi.json`, '--out', out],
    ]);
    expect(fs.readFileSync(out, 'utf8')).toBe(
      fs.readFileSync(path.join(CLIENT_DIR, 'quota-api.ts'), 'utf8'),
    );
    fs.rmSync(out);
  });

  it('consumes with one idempotency key per call: a retried call decides once', async () => {
    const tenant = await h.newTenant();
    const { subject } = await subjectOnPlan(tenant.admin, `typed-${process.pid}`, {
      limits: { day: 10 },
      mode: 'strict',
    });
    const client = createQuotaClient({ baseUrl: h.service.url, apiKey: tenant.adminKey.key });
    const body = { subject, items: [{ resource: `typed-${process.pid}`, amount: 3 }] };
    const made = await client.POST('/v1/consume', { body });
    expect(made.response.status).toBe(200);
    expect(made.data).toMatchObject({ allowed: true });
    const keyed = { ...body, idempotency_key: `retry-${process.pid}` };
    const first = await client.POST('/v1/consume', { body: keyed });
    const again = await client.POST('/v1/consume', { body: keyed });
    expect(again.data!.event_id).toBe(first.data!.event_id);
    const usage = await client.GET('/v1/subjects/{subject}/usage', {
      params: { path: { subject } },
    });
    expect(usage.response.status).toBe(200);
    const ledger = await client.GET('/v1/ledger', { params: { query: { subject } } });
    const keys = ledger.data!.entries.map((e) => e.idempotency_key);
    // The call without a key was given one by the client; the keyed one kept its own.
    expect(keys).toHaveLength(2);
    expect(keys).toContain(`retry-${process.pid}`);
    expect(keys.every((k) => typeof k === 'string' && k.length > 0)).toBe(true);
  });

  it("answers a refusal in the service's envelope, typed", async () => {
    const client = createQuotaClient({ baseUrl: h.service.url, apiKey: 'qk_nope_nope' });
    const refused = await client.GET('/v1/tenant');
    expect(refused.response.status).toBe(401);
    expect(refused.data).toBeUndefined();
    expect(refused.error).toBeDefined();
  });
});
