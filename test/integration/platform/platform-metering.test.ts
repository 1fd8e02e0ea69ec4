import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ulid } from 'ulid';

/**
 * The wiring of the runs service to the quota service, as an operator runs it: the platform's
 * metering keys (scripts/platform-metering, on top of quota-admin's tenant-key create) and the
 * runs CLI carrying its tiers and keys there. The quota API is the test run's own (QUOTA_URL).
 */
jest.setTimeout(120_000);

const SCRIPTS = path.resolve(__dirname, '../../../scripts');

function run(cli: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      path.join(SCRIPTS, cli),
      args,
      { env: { ...process.env, ...env }, timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? -1) : 0, stdout, stderr }),
    );
  });
}

async function json(cli: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const ran = await run(cli, [...args, '--json'], env);
  expect({ code: ran.code, stderr: ran.stderr }).toEqual({ code: 0, stderr: '' });
  return JSON.parse(ran.stdout) as Record<string, unknown>;
}

const quota = (key: string) => async (method: string, route: string, body?: unknown) => {
  const response = await fetch(`${process.env.QUOTA_URL}${route}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

describe('platform metering: the services wired to the quota service', () => {
  it("when the keys are made, then the runs service's key acts under runs: and runs- only, with the scopes it needs", async () => {
    const tenantName = `platform-metering-${ulid()}`;
    const minted = (await json('platform-metering', [
      'keys',
      'create',
      '--tenant-name',
      tenantName,
      '--quota-url',
      process.env.QUOTA_URL!,
    ])) as { tenant_id: string; env: Record<string, string> };
    expect(minted.env.QUOTA_URL).toBe(process.env.QUOTA_URL);
    expect(minted.env.RUNS_QUOTA_KEY).toMatch(/^qk_/);
    // Made again: the same tenant, found by its name, and a new key.
    const again = (await json('platform-metering', [
      'keys',
      'create',
      '--tenant-name',
      tenantName,
    ])) as typeof minted;
    expect(again.tenant_id).toBe(minted.tenant_id);
    expect(again.env.RUNS_QUOTA_KEY).not.toBe(minted.env.RUNS_QUOTA_KEY);

    const asRuns = quota(minted.env.RUNS_QUOTA_KEY!);
    const resource = await asRuns('POST', '/v1/resources', { name: 'runs-seconds' });
    expect(resource.status).toBe(201);
    expect(await asRuns('POST', '/v1/resources', { name: 'ledger-calls' })).toMatchObject({
      status: 403,
      body: { detail: 'constraint_violation' },
    });
    expect((await asRuns('GET', '/v1/subjects/runs%3At%3Ak/usage')).status).toBe(200);
    expect(await asRuns('GET', '/v1/subjects/ledger%3At/usage')).toMatchObject({
      status: 403,
      body: { detail: 'constraint_violation' },
    });
    expect(await asRuns('GET', '/v1/api-keys')).toMatchObject({
      status: 403,
      body: { detail: 'insufficient_scope' },
    });
  });

  it('when the keys are ensured in a directory, then they are made once, a file each (0600), and kept after', async () => {
    const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'metering-keys-')), 'keys');
    try {
      const args = ['keys', 'ensure', '--dir', dir, '--tenant-name', `platform-metering-${ulid()}`];
      expect(await json('platform-metering', args)).toMatchObject({
        made: ['RUNS_QUOTA_KEY', 'LEDGER_QUOTA_KEY'],
      });
      const read = (name: string) => fs.readFileSync(path.join(dir, name), 'utf8');
      const keys = { runs: read('RUNS_QUOTA_KEY'), ledger: read('LEDGER_QUOTA_KEY') };
      expect(keys.runs).toMatch(/^qk_\S+\n$/);
      expect(fs.statSync(path.join(dir, 'LEDGER_QUOTA_KEY')).mode & 0o777).toBe(0o600);
      expect(await json('platform-metering', args)).toEqual({ dir, made: [] });
      expect({ runs: read('RUNS_QUOTA_KEY'), ledger: read('LEDGER_QUOTA_KEY') }).toEqual(keys);
      // the key read from its file, as a service given RUNS_QUOTA_KEY_FILE does, acts there
      const usage = await quota(keys.runs.trim())('GET', '/v1/subjects/runs%3At%3Ak/usage');
      expect(usage.status).toBe(200);
      expect((await run('platform-metering', ['keys', 'ensure'])).code).toBe(2);
    } finally {
      fs.rmSync(path.dirname(dir), { recursive: true, force: true });
    }
  });

  it('when quota-admin tenant-key create is given a scope outside the catalogue or no tenant, then it is a usage error; an unknown tenant is not found', async () => {
    expect(
      (await run('quota-admin', ['tenant-key', 'create', '--actor', 'a', '--scopes', 'consume']))
        .code,
    ).toBe(2);
    expect(
      (
        await run('quota-admin', [
          'tenant-key',
          'create',
          '--tenant',
          'ten_unknown',
          '--actor',
          'a',
          '--scopes',
          'tenants:admin',
        ])
      ).code,
    ).toBe(2);
    const unknown = await run('quota-admin', [
      'tenant-key',
      'create',
      '--tenant',
      'ten_unknown',
      '--actor',
      'a',
      '--scopes',
      'consume',
      '--json',
    ]);
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stderr)).toMatchObject({ error: 'tenant_not_found' });
  });

  it("when runs-admin sets a metered tier and keys on it, then the quota service holds the tier's plan and each key's subject on it; without metering settings it says metering is off", async () => {
    const tier = `tier-${ulid().toLowerCase().slice(-8)}`;
    const tenant = `t-${ulid().toLowerCase()}`;
    await json('runs-admin', ['tenant', 'create', tenant]);
    const key = (await json('runs-admin', [
      'key',
      'create',
      '--tenant',
      tenant,
      '--permissions',
      'svc_run_read',
    ])) as { key_id: string };
    const set = await json('runs-admin', [
      'tier',
      'set',
      tier,
      '--metered',
      'true',
      '--metered-seconds-per-day',
      '600',
    ]);
    expect(set.metering).toEqual({ tiers: [tier], keys: 0 });
    const onTier = await json('runs-admin', ['key', 'set-tier', key.key_id, '--tier', tier]);
    expect(onTier.metering).toEqual({ tiers: [tier], keys: 1 });

    const asRuns = quota(process.env.RUNS_QUOTA_KEY!);
    const subject = encodeURIComponent(`runs:${tenant}:${key.key_id}`);
    expect(await asRuns('GET', `/v1/subjects/${subject}/usage`)).toMatchObject({
      status: 200,
      body: {
        plan_name: `runs-${tier}`,
        usage: [expect.objectContaining({ resource: 'runs-seconds', limit: 600, used: 0 })],
      },
    });
    expect((await json('runs-admin', ['metering', 'sync'])).metering).toMatchObject({
      tiers: expect.arrayContaining([tier]) as unknown,
    });

    const off = await json('runs-admin', ['tier', 'set', tier, '--timeout-seconds', '60'], {
      QUOTA_URL: '',
    });
    expect(off.metering).toBe('off');
  });

  it('when ledger-admin creates a root tenant, then its subject is on the plan ledger-monthly before its first call; without metering settings it says metering is off', async () => {
    const created = (await json('ledger-admin', ['tenant', 'create', '--name', 'metered'])) as {
      tenant_id: string;
      metering: { subject: string };
    };
    expect(created.metering).toEqual({ subject: `ledger:${created.tenant_id}` });
    const reader = quota(process.env.TEST_QUOTA_READ_KEY!);
    const subject = encodeURIComponent(created.metering.subject);
    expect(await reader('GET', `/v1/subjects/${subject}/usage`)).toMatchObject({
      status: 200,
      body: {
        plan_name: 'ledger-monthly',
        usage: [expect.objectContaining({ resource: 'ledger-calls', used: 0 })],
      },
    });
    const off = await json('ledger-admin', ['tenant', 'create', '--name', 'unmetered'], {
      QUOTA_URL: '',
    });
    expect(off.metering).toBe('off');
  });
});
