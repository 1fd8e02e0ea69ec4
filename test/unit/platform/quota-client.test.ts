import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createQuotaClient, retryDelayMs } from '../../../platform/quota-client/client';

/**
 * The quota client's retry policy, against a local HTTP server that answers as told (the
 * client's own logic; test/integration/quota/typed-client.test.ts runs it against the service).
 */
describe('the quota client', () => {
  const seen: {
    authorization?: string;
    requestId?: string;
    body: Record<string, unknown>;
  }[] = [];
  let answers: { status: number; retryAfter?: string }[] = [];
  let server: http.Server;
  let baseUrl: string;
  beforeAll(async () => {
    server = http.createServer((request, response) => {
      let text = '';
      request.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      request.on('end', () => {
        seen.push({
          authorization: request.headers.authorization,
          requestId: request.headers['x-request-id'] as string | undefined,
          body: JSON.parse(text || '{}') as Record<string, unknown>,
        });
        const answer = answers.shift() ?? { status: 200 };
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (answer.retryAfter !== undefined) headers['retry-after'] = answer.retryAfter;
        response.writeHead(answer.status, headers).end(JSON.stringify({ allowed: true }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));
  beforeEach(() => {
    seen.length = 0;
  });

  const consume = (client: ReturnType<typeof createQuotaClient>, key?: string) =>
    client.POST('/v1/consume', {
      body: {
        subject: 's',
        items: [{ resource: 'r', amount: 1 }],
        ...(key ? { idempotency_key: key } : {}),
      },
    });

  it('sends the id of the request a call is made for as X-Request-Id, on every try, and none outside one', async () => {
    answers = [{ status: 503, retryAfter: '0' }];
    let current: string | undefined = 'req-42';
    const client = createQuotaClient({ baseUrl, apiKey: 'qk_a_b', requestId: () => current });
    await consume(client);
    expect(seen.map((s) => s.requestId)).toEqual(['req-42', 'req-42']);
    current = undefined;
    await consume(client);
    expect(seen[2]!.requestId).toBeUndefined();
    await consume(createQuotaClient({ baseUrl, apiKey: 'qk_a_b' }));
    expect(seen[3]!.requestId).toBeUndefined();
  });

  it('tries a 503 and a 429 again, with one idempotency key it made for the call', async () => {
    answers = [
      { status: 503, retryAfter: '0' },
      { status: 429, retryAfter: '0' },
    ];
    const client = createQuotaClient({ baseUrl, apiKey: 'qk_a_b' });
    const { response } = await consume(client);
    expect(response.status).toBe(200);
    expect(seen).toHaveLength(3);
    const keys = seen.map((s) => s.body.idempotency_key);
    expect(keys[0]).toMatch(/^[0-9A-Z]{26}$/);
    expect(new Set(keys).size).toBe(1);
    expect(seen.every((s) => s.authorization === 'Bearer qk_a_b')).toBe(true);
  });

  it("keeps the caller's idempotency key, and a new call gets a new one", async () => {
    const client = createQuotaClient({ baseUrl, apiKey: 'qk_a_b' });
    await consume(client, 'mine');
    await consume(client);
    await consume(client);
    expect(seen[0]!.body.idempotency_key).toBe('mine');
    expect(seen[1]!.body.idempotency_key).not.toBe(seen[2]!.body.idempotency_key);
  });

  it('answers the last 503 once its tries are spent, and never tries a 4xx or 500 again', async () => {
    answers = [{ status: 503 }, { status: 503 }];
    const client = createQuotaClient({ baseUrl, apiKey: 'k', attempts: 2, maxDelayMs: 1 });
    expect((await consume(client)).response.status).toBe(503);
    expect(seen).toHaveLength(2);
    for (const status of [409, 422, 500]) {
      seen.length = 0;
      answers = [{ status }];
      expect((await consume(client)).response.status).toBe(status);
      expect(seen).toHaveLength(1);
    }
  });

  it('gives no idempotency key to a body that has none in the contract', async () => {
    const client = createQuotaClient({ baseUrl, apiKey: 'k' });
    await client.POST('/v1/check', {
      body: { subject: 's', items: [{ resource: 'r', amount: 1 }] },
    });
    expect(seen[0]!.body).not.toHaveProperty('idempotency_key');
  });

  it('waits as Retry-After says, else 100 ms doubling per try, never past the cap', () => {
    expect(retryDelayMs('2', 1, 5_000)).toBe(2_000);
    expect(retryDelayMs('0', 3, 5_000)).toBe(0);
    expect(retryDelayMs('60', 1, 5_000)).toBe(5_000);
    expect(retryDelayMs(null, 1, 5_000)).toBe(100);
    expect(retryDelayMs(null, 3, 5_000)).toBe(400);
    expect(retryDelayMs('soon', 2, 5_000)).toBe(200);
    expect(retryDelayMs('-1', 1, 5_000)).toBe(100);
    expect(retryDelayMs(null, 20, 5_000)).toBe(5_000);
  });
});
