import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { eventually, startTestService, type TestService } from '../../support/services';
import { REPO_ROOT } from '../../support/stack-env';

const { version } = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
  version: string;
};

/** fetch() refuses TRACE and other methods it calls forbidden; node:http sends any. */
function rawRequest(url: string, method: string) {
  return new Promise<{ status: number; allow?: string; body: unknown }>((resolve, reject) => {
    const request = http.request(url, { method }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () =>
        resolve({
          status: response.statusCode!,
          allow: response.headers.allow,
          body: JSON.parse(text) as unknown,
        }),
      );
    });
    request.on('error', reject);
    request.end();
  });
}

describe('the HTTP platform under every service', () => {
  let ledger: TestService;
  let runs: TestService;
  let quota: TestService;

  beforeAll(async () => {
    [ledger, runs, quota] = await Promise.all([
      startTestService('ledger'),
      startTestService('runs'),
      startTestService('quota'),
    ]);
  });
  afterAll(async () => {
    await Promise.allSettled([ledger?.close(), runs?.close(), quota?.close()]);
  });

  it('answers every liveness and readiness probe with 200 against the running stack', async () => {
    const urls = [
      `${ledger.url}/healthz`,
      `${ledger.url}/ping`,
      `${runs.url}/ping`,
      `${runs.url}/health`,
      `${runs.url}/metrics`,
      `${quota.url}/healthz`,
      `${quota.url}/ping`,
      `${quota.url}/readyz`,
    ];
    // A probe reports what its background check last saw: on a loaded machine a check may time
    // out once (a login past 1 s reads as unreachable), so each probe is given a few seconds.
    for (const url of urls) {
      const status = await eventually(
        async () => ((await fetch(url)).status === 200 ? 200 : undefined),
        10_000,
      ).catch(async () => (await fetch(url)).status);
      expect([url, status]).toEqual([url, 200]);
    }
    expect(await (await fetch(`${ledger.url}/healthz`)).json()).toEqual({
      status: 'ok',
      auth_client_credential: 'ok',
      version,
    });
    expect(await (await fetch(`${runs.url}/health`)).json()).toMatchObject({
      status: 'ok',
      database: 'up',
      cache: 'up',
      container_runtime: 'up',
    });
    expect((await fetch(`${ledger.url}/healthz`, { method: 'HEAD' })).status).toBe(200);
  });

  it('serves Prometheus text on /metrics, counting requests by route', async () => {
    await fetch(`${runs.url}/ping`);
    const response = await fetch(`${runs.url}/metrics`);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await response.text()).toMatch(
      /http_request_duration_seconds_count\{.*route="\/ping".*\} \d+/,
    );
  });

  it('renders unknown paths and wrong methods in each service envelope, with Allow on 405', async () => {
    const notFound = await fetch(`${ledger.url}/v1/nothing-here`);
    expect(notFound.status).toBe(404);
    expect(await notFound.json()).toMatchObject({ error: { code: 'NOT_FOUND' } });

    const wrongMethod = await fetch(`${ledger.url}/healthz`, { method: 'DELETE' });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('HEAD, GET');
    expect(await wrongMethod.json()).toMatchObject({ error: { code: 'METHOD_NOT_ALLOWED' } });

    const runsMissing = await fetch(`${runs.url}/api/v1/nothing`);
    expect(runsMissing.status).toBe(404);
    expect(await runsMissing.json()).toEqual({ detail: 'no route for GET /api/v1/nothing' });

    const quotaMissing = await fetch(`${quota.url}/v1/nothing`);
    expect(quotaMissing.status).toBe(404);
    expect(await quotaMissing.json()).toEqual({ detail: 'not_found' });
  });

  it('answers a method no route uses (TRACE, PROPFIND) with 405 and Allow in each envelope, or 404 where no route has the path', async () => {
    const ledgerTrace = await rawRequest(`${ledger.url}/v1/accounts`, 'TRACE');
    expect(ledgerTrace.status).toBe(405);
    expect(ledgerTrace.allow).toBe('POST, HEAD, GET');
    expect(ledgerTrace.body).toMatchObject({ error: { code: 'METHOD_NOT_ALLOWED' } });

    const runsTrace = await rawRequest(`${runs.url}/api/v1/runs`, 'PROPFIND');
    expect(runsTrace.status).toBe(405);
    expect(runsTrace.allow).toBe('POST, HEAD, GET');
    expect(runsTrace.body).toEqual({ detail: 'method PROPFIND not allowed on /api/v1/runs' });

    const nowhere = await rawRequest(`${runs.url}/api/v1/nothing`, 'TRACE');
    expect(nowhere.status).toBe(404);
    expect(nowhere.body).toEqual({ detail: 'no route for TRACE /api/v1/nothing' });
  });

  describe('JSON bodies', () => {
    const post = (
      body: string,
      headers: Record<string, string> = { 'content-type': 'application/json' },
    ) => fetch(`${runs.url}/api/v1/self-checks`, { method: 'POST', headers, body });

    it('at 1 MiB the body is read; one byte past, 413 before the route runs', async () => {
      const limit = 1024 * 1024;
      const padding = (size: number) =>
        JSON.stringify({ image: 'x'.repeat(size - '{"image":""}'.length) });
      const atLimit = await post(padding(limit));
      expect(atLimit.status).toBe(422); // read and validated: the image is too long
      const pastLimit = await post(padding(limit + 1));
      expect(pastLimit.status).toBe(413);
      expect(await pastLimit.json()).toEqual({ detail: `request body exceeds ${limit} bytes` });
    });

    it('at 64 levels of nesting the body is parsed; at 65, refused before parsing', async () => {
      const nested = (depth: number) =>
        `{"image":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;
      expect((await post(nested(64))).status).toBe(422); // parsed; image is not a string
      const tooDeep = await post(nested(65));
      expect(tooDeep.status).toBe(422);
      expect(await tooDeep.json()).toEqual({ detail: 'JSON nesting deeper than 64 levels' });
    });

    it('answers malformed JSON and a non-JSON media type with a clear error', async () => {
      const malformed = await post('{"image":');
      expect(malformed.status).toBe(400);
      expect(((await malformed.json()) as { detail: string }).detail).toMatch(
        /^malformed JSON body/,
      );
      const wrongType = await post('image=x', {
        'content-type': 'application/x-www-form-urlencoded',
      });
      expect(wrongType.status).toBe(415);
    });
  });

  it('echoes a well-formed X-Request-Id and makes one up otherwise', async () => {
    const given = await fetch(`${runs.url}/ping`, { headers: { 'x-request-id': 'abc-123' } });
    expect(given.headers.get('x-request-id')).toBe('abc-123');
    const made = await fetch(`${runs.url}/ping`, {
      headers: { 'x-request-id': 'bad id with spaces' },
    });
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});
