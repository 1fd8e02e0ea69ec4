/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument -- JSON replies in tests */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { ulid } from 'ulid';
import { runAdmin } from '../../../cli/quota';
import {
  CODEC_BODY_LIMIT_BYTES,
  CODEC_MAX_METADATA,
  CODEC_MAX_PAYLOADS,
} from '../../../api/http/codec-endpoint';
import { EncryptionCodec, ENCRYPTED_ENCODING } from '../../../platform/payload-codec';
import { CODEC_PATH, CODEC_SESSION_COOKIE } from '../../../api/quota/routes/temporal-codec';
import { runWorkflowId } from '../../../contracts/runs/run';
import { IMAGE, client, config, newTenant, startHarness, type Harness } from '../runs/support';
import { startQuota, type QuotaHarness } from '../quota/support';

jest.setTimeout(120_000);

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

/** Every payload of a history in its protobuf JSON (anything with base64 metadata.encoding). */
function payloadsOf(node: unknown): JsonPayload[] {
  if (Array.isArray(node)) return node.flatMap(payloadsOf);
  if (node === null || typeof node !== 'object') return [];
  const record = node as Record<string, unknown>;
  const metadata = record.metadata as Record<string, unknown> | undefined;
  if (typeof metadata?.encoding === 'string') return [record];
  return Object.values(record).flatMap(payloadsOf);
}

/** What the tests read of a history in its JSON form. */
interface HistoryJson {
  events: {
    workflowExecutionStartedEventAttributes?: { input: { payloads: JsonPayload[] } };
    userMetadata?: { summary?: JsonPayload };
  }[];
}

const text = (base64 = '') => Buffer.from(base64, 'base64').toString('utf8');
const encodingOf = (p: JsonPayload) => text(p.metadata?.encoding);

describe('Temporal payloads, encrypted at rest and decoded for operators only', () => {
  const SECRET = `sk-live-${ulid()}`;
  let runs: Harness;
  let quota: QuotaHarness;
  let raw: Client;
  let trackId: string;
  let history: HistoryJson;
  let codecOnly: string;

  const codec = (key: string | null) => quota.as(key);
  const admin = () => ({ config, pool: quota.pool, redis: quota.redis });
  const newCodecKey = async (actor: string) =>
    (
      await runAdmin(
        [
          'operator-key',
          'create',
          '--actor',
          `${actor}-${process.pid}`,
          '--scopes',
          'payloads:codec',
        ],
        admin(),
      )
    ).json as { id: string; key: string };
  const startInput = () =>
    history.events[0]!.workflowExecutionStartedEventAttributes!.input.payloads;
  const decode = (key: string | null, payloads: JsonPayload[]) =>
    codec(key).post(`${CODEC_PATH}/decode`, { payloads });

  beforeAll(async () => {
    [runs, quota] = await Promise.all([startHarness(), startQuota()]);
    // A client without the codec: what Temporal itself holds, as anyone with its API reads it.
    raw = new Client({
      connection: await Connection.connect({ address: config.temporalAddress }),
      namespace: config.temporalNamespace,
    });
    const { key } = await newTenant(runs.pool);
    const api = client(runs.service.url, key);
    trackId = (await api.submit({ image: IMAGE, command: ['true'], env: { API_TOKEN: SECRET } }))
      .body.track_id;
    await api.waitFor(trackId, ['exited']);
    history = JSON.parse(
      historyToJSON(await raw.workflow.getHandle(runWorkflowId(trackId)).fetchHistory()),
    ) as HistoryJson;
    codecOnly = (await newCodecKey('codec')).key;
  });
  afterAll(async () => {
    await raw?.connection.close();
    await Promise.all([runs?.close(), quota?.close()]);
  });

  it('when a run with an env value has run, then its history in Temporal holds the value nowhere, its input, summary and results all ciphertext', () => {
    const payloads = payloadsOf(history);
    expect(startInput().map(encodingOf)).toEqual([ENCRYPTED_ENCODING]);
    expect(encodingOf(history.events[0]!.userMetadata!.summary!)).toBe(ENCRYPTED_ENCODING);
    expect(payloads.some((p) => text(p.data).includes(SECRET))).toBe(false);
    expect(JSON.stringify(history)).not.toContain(SECRET);
  });

  it('when an operator key with payloads:codec posts the payloads to the codec endpoint, then it reads the env value; without a key, with a tenant key or without the scope it is refused', async () => {
    const input = startInput();
    const decoded = await decode(codecOnly, input);
    expect(decoded.status).toBe(200);
    expect(text(decoded.body.payloads[0].metadata.encoding)).toBe('json/plain');
    expect(JSON.parse(text(decoded.body.payloads[0].data)).env).toEqual({ API_TOKEN: SECRET });

    expect((await decode(null, input)).status).toBe(401);
    const tenant = await quota.newTenant();
    expect((await decode(tenant.adminKey.key, input)).body).toEqual({
      detail: 'operator_key_required',
    });
    const jobsOnly = await runAdmin(
      ['operator-key', 'create', '--actor', `jobs-${process.pid}`, '--scopes', 'ops:admin'],
      admin(),
    );
    const refused = await decode((jobsOnly.json as { key: string }).key, input);
    expect([refused.status, refused.body.detail]).toEqual([403, 'insufficient_scope']);
    expect(refused.headers.get('www-authenticate')).toContain('scope="payloads:codec"');
  });

  it('when an operator runs `temporal workflow show` with the codec endpoint and its key, then it reads the input in clear; without them, ciphertext', async () => {
    const shownInput = async (...codecArgs: string[]) => {
      const { stdout } = await promisify(execFile)(process.env.TEMPORAL_CLI!, [
        ...['workflow', 'show', '--workflow-id', runWorkflowId(trackId), '--output', 'json'],
        ...['--address', config.temporalAddress, '--namespace', config.temporalNamespace],
        ...codecArgs,
      ]);
      const [input] = (JSON.parse(stdout) as HistoryJson).events[0]!
        .workflowExecutionStartedEventAttributes!.input.payloads;
      return { encoding: encodingOf(input!), data: text(input!.data) };
    };
    const endpoint = `${quota.service.url}${CODEC_PATH}`;
    const decoded = await shownInput(
      '--codec-endpoint',
      endpoint,
      '--codec-auth',
      `Bearer ${codecOnly}`,
    );
    expect(decoded.encoding).toBe('json/plain');
    expect(JSON.parse(decoded.data).env).toEqual({ API_TOKEN: SECRET });
    // The endpoint without a key: 401, and the CLI gives up rather than print ciphertext as input.
    await expect(
      shownInput('--codec-endpoint', endpoint, '--command-timeout', '3s'),
    ).rejects.toThrow();
    const withoutCodec = await shownInput();
    expect(withoutCodec.encoding).toBe(ENCRYPTED_ENCODING);
    expect(withoutCodec.data).not.toContain(SECRET);
  });

  it('when a browser opens a session with the key, then the cookie alone decodes (HttpOnly, SameSite=Strict, these paths only), until the session is closed or its key revoked', async () => {
    const input = startInput();
    const opened = await codec(codecOnly).put(`${CODEC_PATH}/session`, undefined);
    expect(opened.status).toBe(204);
    const setCookie = opened.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(
      new RegExp(`^${CODEC_SESSION_COOKIE}=${codecOnly}; path=${CODEC_PATH}; `),
    );
    expect(setCookie).toMatch(/; samesite=strict; httponly/);
    const cookie = setCookie.split(';')[0]!;
    const withCookie = (path: string, init: RequestInit = {}) =>
      fetch(`${quota.service.url}${path}`, {
        ...init,
        headers: { cookie, 'content-type': 'application/json', ...init.headers },
      });
    const decoded = await withCookie(`${CODEC_PATH}/decode`, {
      method: 'POST',
      body: JSON.stringify({ payloads: input }),
    });
    expect(decoded.status).toBe(200);
    const [payload] = ((await decoded.json()) as { payloads: JsonPayload[] }).payloads;
    expect(JSON.parse(text(payload!.data)).env).toEqual({ API_TOKEN: SECRET });
    // The cookie is the codec's only: any other route still wants Authorization.
    expect((await withCookie('/v1/ops/jobs')).status).toBe(401);
    // The key is checked on every request: once revoked (quota-admin), its session is over.
    const second = await newCodecKey('revoked');
    const opened2 = await codec(second.key).put(`${CODEC_PATH}/session`, undefined);
    const secondCookie = (opened2.headers.get('set-cookie') ?? '').split(';')[0]!;
    await runAdmin(['operator-key', 'revoke', second.id], admin());
    const afterRevoke = await fetch(`${quota.service.url}${CODEC_PATH}/decode`, {
      method: 'POST',
      headers: { cookie: secondCookie, 'content-type': 'application/json' },
      body: JSON.stringify({ payloads: input }),
    });
    expect(afterRevoke.status).toBe(401);
    const listed = (
      (await runAdmin(['operator-key', 'list'], admin())).json as {
        keys: { id: string; status: string }[];
      }
    ).keys;
    expect(listed.find((k) => k.id === second.id)?.status).toBe('revoked');

    const closed = await codec(null).delete(`${CODEC_PATH}/session`);
    expect(closed.status).toBe(204);
    expect(closed.headers.get('set-cookie')).toMatch(new RegExp(`^${CODEC_SESSION_COOKIE}=; `));
  });

  it("when the Web UI's origin preflights and posts, then CORS answers it with credentials; another origin gets no CORS headers", async () => {
    const [uiOrigin] = config.temporalCodecCorsOrigins;
    expect(uiOrigin).toBeDefined();
    const preflight = (origin: string) =>
      fetch(`${quota.service.url}${CODEC_PATH}/decode`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type,x-namespace',
        },
      });
    const allowed = await preflight(uiOrigin!);
    expect(allowed.status).toBe(204);
    expect(Object.fromEntries(allowed.headers)).toMatchObject({
      'access-control-allow-origin': uiOrigin,
      'access-control-allow-credentials': 'true',
      'access-control-allow-methods': 'POST',
    });
    expect(allowed.headers.get('access-control-allow-headers')).toContain('X-Namespace');
    const other = await preflight('https://evil.example');
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const refused = await fetch(`${quota.service.url}${CODEC_PATH}/decode`, {
      method: 'POST',
      headers: { origin: uiOrigin!, 'content-type': 'application/json' },
      body: JSON.stringify({ payloads: [] }),
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe(uiOrigin);
  });

  it('decodes a payload written before encryption as it is, refuses one under a key it does not hold at its index, and encodes under the active key', async () => {
    const clear = {
      metadata: { encoding: Buffer.from('json/plain').toString('base64') },
      data: Buffer.from('"x"').toString('base64'),
    };
    const [foreign] = await new EncryptionCodec([{ id: 'elsewhere', key: randomBytes(32) }]).encode(
      [{ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('"y"') }],
    );
    const foreignJson = {
      metadata: Object.fromEntries(
        Object.entries(foreign!.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
      ),
      data: Buffer.from(foreign!.data!).toString('base64'),
    };
    expect((await decode(codecOnly, [clear])).body).toEqual({ payloads: [clear] });
    const refused = await decode(codecOnly, [clear, foreignJson]);
    expect(refused.status).toBe(422);
    expect(refused.body.detail).toEqual([
      expect.objectContaining({
        loc: ['body', 'payloads', 1],
        type: 'payload_not_decryptable',
        msg: expect.stringContaining('no key "elsewhere"'),
      }),
    ]);
    const encoded = await codec(codecOnly).post(`${CODEC_PATH}/encode`, { payloads: [clear] });
    expect(text(encoded.body.payloads[0].metadata.encoding)).toBe(ENCRYPTED_ENCODING);
    expect((await decode(codecOnly, encoded.body.payloads)).body).toEqual({ payloads: [clear] });
  });

  it(`takes ${CODEC_MAX_PAYLOADS} payloads and bodies up to ${CODEC_BODY_LIMIT_BYTES} bytes, refusing one payload more (422) and a byte more (413)`, async () => {
    const empty = { metadata: {}, data: '' };
    expect((await decode(codecOnly, Array(CODEC_MAX_PAYLOADS).fill(empty))).status).toBe(200);
    const tooMany = await decode(codecOnly, Array(CODEC_MAX_PAYLOADS + 1).fill(empty));
    expect([tooMany.status, tooMany.body.detail[0].loc]).toEqual([422, ['body', 'payloads']]);
    const padded = (bytes: number) => {
      const frame = JSON.stringify({ payloads: [{ metadata: {}, data: '' }] });
      const data = 'A'.repeat(Math.floor((bytes - frame.length) / 4) * 4);
      return `${JSON.stringify({ payloads: [{ metadata: {}, data }] })}${' '.repeat(bytes - frame.length - data.length)}`;
    };
    const atLimit = await codec(codecOnly).call(
      'POST',
      `${CODEC_PATH}/decode`,
      padded(CODEC_BODY_LIMIT_BYTES),
    );
    expect(atLimit.status).toBe(200);
    const past = await codec(codecOnly).call(
      'POST',
      `${CODEC_PATH}/decode`,
      padded(CODEC_BODY_LIMIT_BYTES + 1),
    );
    expect([past.status, past.body.detail]).toEqual([413, 'payload_too_large']);
  });

  it(`takes ${CODEC_MAX_METADATA} metadata entries named by up to 256 characters, refusing one entry more and a name of 257 (422)`, async () => {
    const entries = (count: number, nameLength = 8) =>
      Object.fromEntries(
        Array.from({ length: count }, (_, i) => [`${i}`.padStart(nameLength, 'm'), 'AA==']),
      );
    const status = async (metadata: Record<string, string>) =>
      (await decode(codecOnly, [{ metadata, data: '' }])).status;
    expect(await status(entries(CODEC_MAX_METADATA))).toBe(200);
    expect(await status(entries(CODEC_MAX_METADATA + 1))).toBe(422);
    expect(await status(entries(1, 256))).toBe(200);
    expect(await status(entries(1, 257))).toBe(422);
  });
});
