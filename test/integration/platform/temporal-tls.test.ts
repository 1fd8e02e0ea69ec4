import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { Connection } from '@temporalio/client';
import { generate } from 'selfsigned';
import { loadConfig } from '../../../platform/config';
import { temporalConnectionOptions } from '../../../platform/temporal';
import { WORKER_READY_TIMEOUT_MS, ownWorker } from '../runs/own-worker';
import { IMAGE, client, newTenant } from '../runs/support';

/**
 * Temporal behind TLS and mTLS, as a deployment reaches a real cluster or Temporal Cloud: the
 * dev server speaks plaintext, so a TLS terminator in front of it (ALPN h2, a client certificate
 * required) stands where the frontend's own TLS would; every byte still goes to the real server.
 */
jest.setTimeout(120_000);

const SERVER_NAME = 'temporal.platform.test';
const DAY_MS = 86_400_000;

interface Pem {
  cert: string;
  private: string;
}

async function authority(name: string): Promise<Pem> {
  return generate([{ name: 'commonName', value: name }], {
    keyType: 'ec',
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + DAY_MS),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    ],
  });
}

async function leaf(ca: Pem, name: string, usage: 'serverAuth' | 'clientAuth'): Promise<Pem> {
  return generate([{ name: 'commonName', value: name }], {
    keyType: 'ec',
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + DAY_MS),
    ca: { key: ca.private, cert: ca.cert },
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, critical: true },
      { name: 'extKeyUsage', [usage]: true },
      ...(usage === 'serverAuth'
        ? [{ name: 'subjectAltName' as const, altNames: [{ type: 2 as const, value: name }] }]
        : []),
    ],
  });
}

describe('Temporal over TLS and mTLS (TEMPORAL_TLS_*)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'temporal-tls-'));
  const file = (name: string, text: string) => {
    fs.writeFileSync(path.join(dir, name), text, { mode: 0o600 });
    return path.join(dir, name);
  };
  let proxy: tls.Server;
  let address: string;
  let accepted = 0;
  let env: Record<string, string>;
  let stranger: Record<string, string>;

  beforeAll(async () => {
    const ca = await authority('platform test Temporal CA');
    const server = await leaf(ca, SERVER_NAME, 'serverAuth');
    const worker = await leaf(ca, 'platform worker', 'clientAuth');
    const otherCa = await authority('someone else');
    const outsider = await leaf(otherCa, 'outsider', 'clientAuth');
    const [upstreamHost, upstreamPort] = loadConfig().temporalAddress.split(':') as [
      string,
      string,
    ];
    proxy = tls.createServer(
      {
        key: server.private,
        cert: server.cert,
        ca: [ca.cert],
        requestCert: true,
        rejectUnauthorized: true,
        ALPNProtocols: ['h2'],
      },
      (socket) => {
        accepted += 1;
        const upstream = net.connect(Number(upstreamPort), upstreamHost);
        socket.pipe(upstream).pipe(socket);
        socket.on('error', () => upstream.destroy());
        upstream.on('error', () => socket.destroy());
      },
    );
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    address = `127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
    env = {
      TEMPORAL_ADDRESS: address,
      TEMPORAL_TLS_CA_FILE: file('ca.pem', ca.cert),
      TEMPORAL_TLS_CERT_FILE: file('worker.pem', worker.cert),
      TEMPORAL_TLS_KEY_FILE: file('worker-key.pem', worker.private),
      TEMPORAL_TLS_SERVER_NAME: SERVER_NAME,
    };
    stranger = {
      ...env,
      TEMPORAL_TLS_CERT_FILE: file('outsider.pem', outsider.cert),
      TEMPORAL_TLS_KEY_FILE: file('outsider-key.pem', outsider.private),
    };
  });
  afterAll(async () => {
    await new Promise((resolve) => proxy.close(resolve));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** Connects with `settings` over the environment and asks the server who it is. */
  async function reach(settings: Record<string, string>): Promise<string> {
    const config = loadConfig({ ...process.env, ...settings });
    const connection = await Connection.connect({
      ...temporalConnectionOptions(config),
      connectTimeout: 3_000,
    });
    try {
      const info = await connection.workflowService.getSystemInfo({});
      return info.serverVersion;
    } finally {
      await connection.close();
    }
  }

  it('when a client holds the CA, its certificate and the server name, then it reaches the server', async () => {
    const before = accepted;
    expect(await reach(env)).toMatch(/^\d+\.\d+/);
    expect(accepted).toBeGreaterThan(before);
  });

  it('when the certificate, the CA or the name is wrong or missing, then no connection is made', async () => {
    const without = (name: string) =>
      Object.fromEntries(Object.entries(env).filter(([k]) => k !== name));
    const refused = [
      // No client certificate: the frontend requires one.
      { ...without('TEMPORAL_TLS_CERT_FILE'), TEMPORAL_TLS_KEY_FILE: '' },
      // A certificate the frontend's CA did not sign.
      stranger,
      // The server checked against the address's own name, which its certificate does not carry.
      without('TEMPORAL_TLS_SERVER_NAME'),
      // The server's certificate checked against Node's roots only.
      without('TEMPORAL_TLS_CA_FILE'),
    ];
    for (const settings of refused) await expect(reach(settings)).rejects.toThrow();
  });

  it('when a setting is half given or names no file, then the process does not start', () => {
    expect(() => loadConfig({ TEMPORAL_TLS_CERT_FILE: env.TEMPORAL_TLS_CERT_FILE })).toThrow(
      /TEMPORAL_TLS_CERT_FILE and TEMPORAL_TLS_KEY_FILE go together/,
    );
    const config = loadConfig({ TEMPORAL_TLS_CA_FILE: path.join(dir, 'absent.pem') });
    expect(() => temporalConnectionOptions(config)).toThrow(/TEMPORAL_TLS_CA_FILE: cannot read/);
    expect(temporalConnectionOptions(loadConfig({ TEMPORAL_API_KEY: 'k' }))).toMatchObject({
      apiKey: 'k',
      tls: {},
    });
    expect(temporalConnectionOptions(loadConfig({}))).toEqual({ address: '127.0.0.1:7233' });
  });

  it(
    'when a worker and the runs API connect over mTLS, then a submitted run runs to its end through the TLS frontend',
    async () => {
      const own = ownWorker('tls', env);
      const before = accepted;
      const h = await own.start();
      try {
        const api = client(h.service.url, (await newTenant(h.pool)).key);
        const { body } = await api.submit({ image: IMAGE, command: ['echo', 'over tls'] });
        expect((await api.waitFor(body.track_id, ['exited'], 60_000)).exit_code).toBe(0);
        // The worker's connection and the API's client's (made on its first call), at least.
        expect(accepted - before).toBeGreaterThanOrEqual(2);
      } finally {
        await own.stop();
      }
    },
    WORKER_READY_TIMEOUT_MS,
  );
});
