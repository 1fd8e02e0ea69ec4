import net from 'node:net';
import { loadConfig } from '../../../platform/config';
import {
  createWebhookSender,
  type SendOutcome,
  type WebhookRequest,
} from '../../../platform/webhooks/http-delivery';
import { startHttpsReceiver, type Receiver } from '../../support/https-receiver';
import { eventually } from '../../support/services';
import {
  WEBHOOK_TEST_EGRESS_ALLOW,
  webhookTestEnv,
  webhookTestFiles,
} from '../../support/webhook-test-env';

/**
 * The webhook sender against a real HTTPS receiver on loopback, whose certificate the test CA
 * signed: the verdict of every kind of answer, what the receiver saw, and the egress and TLS
 * refusals. The sender that reaches the receiver is configured as the worker is, from the
 * environment global-setup prepared.
 */
const ATTEMPT_TIMEOUT_MS = 3_000;
/** Bounds a test allows itself around a timing it asserts (a loaded CI machine is slow). */
const SLACK_MS = 1_500;
const STREAMED_BODY_BYTES = 10 * 1024 * 1024;

const config = loadConfig();
const configured = createWebhookSender({
  egressAllow: config.webhooks.egressAllow,
  caFile: config.webhooks.caFile,
  timeoutMs: ATTEMPT_TIMEOUT_MS,
});
const withoutAllowList = createWebhookSender({
  egressAllow: [],
  caFile: webhookTestFiles().caFile,
  timeoutMs: ATTEMPT_TIMEOUT_MS,
});
const withoutTestCa = createWebhookSender({
  egressAllow: WEBHOOK_TEST_EGRESS_ALLOW.split(','),
  caFile: null,
  timeoutMs: ATTEMPT_TIMEOUT_MS,
});

let receiver: Receiver;

beforeAll(async () => {
  receiver = await startHttpsReceiver();
});
afterAll(() => receiver.close());
beforeEach(() => {
  receiver.requests.length = 0;
  receiver.respondWith(() => ({ status: 200 }));
});

const BODY = JSON.stringify({ event_id: 'evt_1', note: 'naïve café — 東京 🚀', amount: 12.5 });
const HEADERS = {
  'Content-Type': 'application/json',
  'X-Svc-Event': 'run.completed',
  'X-Svc-Event-Id': 'evt_1',
  'X-Svc-Timestamp': '1764000000',
  'X-Svc-Signature': 'sha256=00ff',
  'User-Agent': 'Svc/0.1.0',
};

const requestTo = (url: string, path = '/hooks/runs?tenant=t1'): WebhookRequest => ({
  url: `${url}${path}`,
  headers: HEADERS,
  body: BODY,
});

async function timed(promise: Promise<SendOutcome>) {
  const startedAt = Date.now();
  const outcome = await promise;
  return { outcome, elapsedMs: Date.now() - startedAt };
}

describe('a receiver that answers', () => {
  it('when it answers 2xx, then the attempt is delivered and it saw the raw bytes and headers', async () => {
    receiver.respondWith(() => ({ status: 204 }));

    const outcome = await configured.send(requestTo(receiver.url));

    expect(outcome).toEqual({
      verdict: 'delivered',
      status: 204,
      durationMs: expect.any(Number) as number,
    });
    const [seen] = await receiver.waitForRequests(1);
    expect(seen!.method).toBe('POST');
    expect(seen!.path).toBe('/hooks/runs?tenant=t1');
    expect(seen!.rawBody.equals(Buffer.from(BODY, 'utf8'))).toBe(true);
    for (const [name, value] of Object.entries(HEADERS))
      expect(seen!.headers[name.toLowerCase()]).toBe(value);
    expect(seen!.headers['content-length']).toBe(String(Buffer.byteLength(BODY)));
    expect(seen!.headers.host).toBe(`localhost:${receiver.port}`);
    expect(seen!.headers.connection).toBe('close');
  });

  it.each([
    [500, 'retry'],
    [503, 'retry'],
    [429, 'retry'],
    [408, 'retry'],
    [401, 'dead'],
    [404, 'dead'],
  ] as const)('when it answers %i, then the verdict is %s', async (status, verdict) => {
    receiver.respondWith(() => ({ status, body: '{"error":"nope"}' }));

    const outcome = await configured.send(requestTo(receiver.url));

    expect(outcome).toEqual({
      verdict,
      status,
      error: `http:${status}`,
      durationMs: expect.any(Number) as number,
    });
    expect(receiver.requests).toHaveLength(1);
  });

  it('when it answers 301, then the redirect is not followed and the attempt is retried', async () => {
    receiver.respondWith(() => ({ status: 301, headers: { Location: '/moved-here' } }));

    const outcome = await configured.send(requestTo(receiver.url));

    expect(outcome).toMatchObject({ verdict: 'retry', status: 301, error: 'redirect:301' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.requests.map((request) => request.path)).toEqual(['/hooks/runs?tenant=t1']);
  });

  it('when it answers within the attempt timeout, then it is delivered', async () => {
    receiver.respondWith(() => ({ status: 200, delayMs: ATTEMPT_TIMEOUT_MS / 3 }));

    const { outcome } = await timed(configured.send(requestTo(receiver.url)));

    expect(outcome.verdict).toBe('delivered');
  });

  it('when it never answers, then the attempt ends as a timeout after about timeoutMs', async () => {
    receiver.respondWith(() => 'hang');

    const { outcome, elapsedMs } = await timed(configured.send(requestTo(receiver.url)));

    expect(outcome).toMatchObject({ verdict: 'retry', status: null, error: 'timeout' });
    expect(elapsedMs).toBeGreaterThanOrEqual(ATTEMPT_TIMEOUT_MS - 50);
    expect(elapsedMs).toBeLessThan(ATTEMPT_TIMEOUT_MS + SLACK_MS);
    await eventually(() =>
      Promise.resolve(receiver.requests[0]?.response.state === 'aborted' || undefined),
    );
  });

  it('when it sends its status but never the end of its body, then the attempt times out', async () => {
    receiver.respondWith(() => ({ status: 200, hangAfterHeaders: true }));

    const { outcome, elapsedMs } = await timed(configured.send(requestTo(receiver.url)));

    expect(outcome).toMatchObject({ verdict: 'retry', status: 200, error: 'timeout' });
    expect(elapsedMs).toBeGreaterThanOrEqual(ATTEMPT_TIMEOUT_MS - 50);
    expect(elapsedMs).toBeLessThan(ATTEMPT_TIMEOUT_MS + SLACK_MS);
  });

  it('when it streams 10 MB, then the send returns at the cap and the rest is never read', async () => {
    receiver.respondWith(() => ({ status: 200, streamBytes: STREAMED_BODY_BYTES }));

    const { outcome, elapsedMs } = await timed(configured.send(requestTo(receiver.url)));

    expect(outcome.verdict).toBe('delivered');
    expect(elapsedMs).toBeLessThan(SLACK_MS);
    const { response } = receiver.requests[0]!;
    await eventually(() => Promise.resolve(response.state === 'aborted' || undefined), 5_000);
    expect(response.bytesWritten).toBeLessThan(STREAMED_BODY_BYTES);
  });

  it('when nothing listens on the port, then the attempt is retried as a transport failure', async () => {
    const closedPort = await freePort();

    const outcome = await configured.send(requestTo(`https://127.0.0.1:${closedPort}`));

    expect(outcome).toMatchObject({
      verdict: 'retry',
      status: null,
      error: 'transport:ECONNREFUSED',
    });
  });

  it('when the name does not resolve, then the attempt is retried as a DNS failure', async () => {
    const outcome = await configured.send(requestTo('https://no-such-receiver.invalid'));

    expect(outcome).toMatchObject({ verdict: 'retry', status: null });
    expect(outcome.verdict !== 'delivered' && outcome.error).toMatch(/^dns:(ENOTFOUND|EAI_AGAIN)$/);
  });

  it('when the URL is not https, then the delivery is dead without a request', async () => {
    const outcome = await configured.send(requestTo(receiver.url.replace('https:', 'http:')));

    expect(outcome).toMatchObject({ verdict: 'dead', status: null, error: 'invalid_url' });
    expect(receiver.requests).toHaveLength(0);
  });
});

describe('egress', () => {
  it('the test environment allows loopback and trusts the test CA through configuration', () => {
    expect(config.webhooks.egressAllow).toEqual(['127.0.0.1/32', '::1/128']);
    expect(config.webhooks.caFile).toBe(webhookTestFiles().caFile);
    expect(loadConfig({ ...process.env, ...webhookTestEnv() }).webhooks).toEqual(config.webhooks);
  });

  it.each([
    ['127.0.0.1', () => `https://127.0.0.1:${receiver.port}`, /^egress_refused:127\.0\.0\.1$/],
    // Resolved by the sender and the address checked: ::1 where the hosts file lists it first.
    ['localhost', () => receiver.url, /^egress_refused:(127\.0\.0\.1|::1)$/],
    ['[::1]', () => `https://[::1]:${receiver.port}`, /^egress_refused:::1$/],
    [
      'IPv4-mapped loopback',
      () => `https://[::ffff:127.0.0.1]:${receiver.port}`,
      /^egress_refused:::ffff:7f00:1$/,
    ],
    ['10.0.0.1', () => 'https://10.0.0.1', /^egress_refused:10\.0\.0\.1$/],
    [
      'the metadata address',
      () => 'https://169.254.169.254',
      /^egress_refused:169\.254\.169\.254$/,
    ],
  ])(
    'without an allow-list, a target at %s is dead without a connection',
    async (_target, url, error) => {
      const outcome = await withoutAllowList.send(requestTo(url(), '/latest/meta-data'));

      expect(outcome).toMatchObject({ verdict: 'dead', status: null });
      expect(outcome.verdict !== 'delivered' && outcome.error).toMatch(error);
      expect(outcome.durationMs).toBeLessThan(SLACK_MS);
      expect(receiver.requests).toHaveLength(0);
    },
  );

  it.each([
    ['127.0.0.1', () => `https://127.0.0.1:${receiver.port}`],
    ['localhost', () => receiver.url],
    ['[::1]', () => receiver.ipv6Url],
  ])('with the allow-list, the receiver at %s is delivered to', async (_target, url) => {
    const target = url();
    if (target === null) return console.warn('no IPv6 loopback on this host: [::1] not tried');

    const outcome = await configured.send(requestTo(target));

    expect(outcome.verdict).toBe('delivered');
    expect(receiver.requests).toHaveLength(1);
  });
});

describe('TLS', () => {
  it('a sender that does not trust the test CA fails the handshake and retries', async () => {
    const outcome = await withoutTestCa.send(requestTo(receiver.url));

    expect(outcome).toMatchObject({ verdict: 'retry', status: null });
    expect(outcome.verdict !== 'delivered' && outcome.error).toMatch(
      /^tls:(UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)$/,
    );
    expect(receiver.requests).toHaveLength(0);
  });

  it('the same receiver is delivered to once the CA file is configured', async () => {
    const outcome = await configured.send(requestTo(receiver.url));

    expect(outcome.verdict).toBe('delivered');
  });
});

/** A port nothing listens on: one the OS just handed out and took back. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
