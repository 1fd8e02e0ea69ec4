import { execFile } from 'node:child_process';
import path from 'node:path';
import { ulid } from 'ulid';
import { v7 as uuidv7 } from 'uuid';

/**
 * The three operator CLIs follow one convention (platform/cli.ts), each run as an operator runs
 * it: its wrapper scripts/<service>-admin as a child process, with the test stack's environment
 * (test/support/load-stack-env.ts and the global setup put it in process.env).
 */
jest.setTimeout(120_000);

const SCRIPTS = path.resolve(__dirname, '../../../scripts');

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

function run(cli: string, args: string[]): Promise<Ran> {
  return new Promise((resolve, reject) => {
    execFile(
      path.join(SCRIPTS, cli),
      args,
      { env: process.env, timeout: 60_000 },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number')
          reject(new Error(`${cli} ${args.join(' ')}: ${error.message}\n${stderr}`));
        else resolve({ code: error ? (error.code as number) : 0, stdout, stderr });
      },
    );
  });
}

/** Exactly one JSON object (one line, not an array) and nothing else. */
function oneJsonObject(text: string): Record<string, unknown> {
  const lines = text.trim().split('\n');
  expect(lines).toHaveLength(1);
  const value: unknown = JSON.parse(lines[0]!);
  expect(value).toEqual(expect.any(Object));
  expect(Array.isArray(value)).toBe(false);
  return value as Record<string, unknown>;
}

/** `{"error": code, "message": "<text>"}`, exactly, as the one JSON object of stderr. */
function expectError(stderr: string, code: string): void {
  const error = oneJsonObject(stderr);
  expect(Object.keys(error).sort()).toEqual(['error', 'message']);
  expect(error.error).toBe(code);
  expect(typeof error.message).toBe('string');
}

/** A command that succeeds and reports it (exit 0), as JSON. */
async function succeeded(cli: string, args: string[]): Promise<Record<string, unknown>> {
  const ran = await run(cli, [...args, '--json']);
  expect({ code: ran.code, stderr: ran.stderr }).toEqual({ code: 0, stderr: '' });
  return oneJsonObject(ran.stdout);
}

interface Case {
  cli: string;
  /** An operation that fails on its own (not a usage error), and the code it fails with. */
  failing: string[];
  failingCode: string;
  /** Makes what a positional command acts on; returns that command and what it must print. */
  positional(): Promise<{ args: string[]; expected: Record<string, unknown> }>;
}

const CASES: Case[] = [
  {
    cli: 'ledger-admin',
    failing: ['tenant', 'suspend', uuidv7()],
    failingCode: 'not_found',
    async positional() {
      const tenant = await succeeded('ledger-admin', ['tenant', 'create', '--name', 'cli-conv']);
      return {
        args: ['tenant', 'suspend', tenant.tenant_id as string],
        expected: { tenant_id: tenant.tenant_id, status: 'suspended' },
      };
    },
  },
  {
    cli: 'runs-admin',
    failing: ['key', 'revoke', `no-such-key-${ulid()}`],
    failingCode: 'not_found',
    async positional() {
      const tenantId = `t-cli-conv-${ulid().toLowerCase()}`;
      expect(await succeeded('runs-admin', ['tenant', 'create', tenantId])).toEqual({
        tenant_id: tenantId,
        created: true,
      });
      const key = await succeeded('runs-admin', [
        'key',
        'create',
        '--tenant',
        tenantId,
        '--permissions',
        'svc_run_read',
      ]);
      return {
        args: ['key', 'revoke', key.key_id as string],
        expected: { key_id: key.key_id, tenant_id: tenantId, revoked: true },
      };
    },
  },
  {
    cli: 'quota-admin',
    failing: ['tenant', 'suspend', `ten_${ulid()}`],
    failingCode: 'tenant_not_found',
    async positional() {
      const tenant = await succeeded('quota-admin', ['tenant', 'create', '--name', 'cli-conv']);
      return {
        args: ['tenant', 'suspend', tenant.id as string],
        expected: { id: tenant.id, status: 'suspended' },
      };
    },
  },
];

describe.each(CASES)('$cli follows the operator CLI convention', (c) => {
  it('when asked for --help, -h or help, then it prints the usage on stdout and exits 0', async () => {
    for (const args of [['--help'], ['-h'], ['help']]) {
      const ran = await run(c.cli, args);
      expect({ code: ran.code, stderr: ran.stderr }).toEqual({ code: 0, stderr: '' });
      expect(ran.stdout).toContain('usage:');
    }
  });

  it('when given an unknown command or none, then it prints the error and the usage on stderr and exits 2', async () => {
    for (const args of [['frobnicate', 'now'], []]) {
      const ran = await run(c.cli, args);
      expect(ran.code).toBe(2);
      expect(ran.stdout).toBe('');
      expect(ran.stderr).toMatch(
        /^\S+-admin: (unknown command: frobnicate now|no command given)\n/,
      );
      expect(ran.stderr).toContain('usage:');
    }
  });

  it('when given an unknown command or option with --json, then stderr is one JSON object with error "usage", exit 2', async () => {
    for (const args of [
      ['frobnicate', 'now', '--json'],
      ['tenant', 'list', '--no-such-option', '--json'],
    ]) {
      const ran = await run(c.cli, args);
      expect(ran.code).toBe(2);
      expect(ran.stdout).toBe('');
      expectError(ran.stderr, 'usage');
    }
  });

  it('when the operation itself fails with --json, then stderr is one JSON object with its code, exit 1', async () => {
    const ran = await run(c.cli, [...c.failing, '--json']);
    expect(ran.code).toBe(1);
    expect(ran.stdout).toBe('');
    expectError(ran.stderr, c.failingCode);
    // Without --json: one readable line.
    const plain = await run(c.cli, c.failing);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(new RegExp(`^${c.cli}: [^\\n]+\\n$`));
  });

  it('when a command names its entity positionally, then it acts on it and prints one JSON object, exit 0', async () => {
    const { args, expected } = await c.positional();
    expect(await succeeded(c.cli, args)).toMatchObject(expected);
  });
});

describe('ledger-admin: the subject once given as --tenant', () => {
  it('when an older script passes --tenant, then it is still taken; given twice, it is a usage error', async () => {
    const tenant = await succeeded('ledger-admin', ['tenant', 'create', '--name', 'cli-legacy']);
    const id = tenant.tenant_id as string;
    await succeeded('ledger-admin', ['tenant', 'suspend', id]);
    expect(await succeeded('ledger-admin', ['tenant', 'activate', '--tenant', id])).toMatchObject({
      tenant_id: id,
      status: 'active',
    });
    const both = await run('ledger-admin', ['tenant', 'suspend', id, '--tenant', id, '--json']);
    expect(both.code).toBe(2);
    expect(oneJsonObject(both.stderr)).toMatchObject({ error: 'usage' });
  });
});
