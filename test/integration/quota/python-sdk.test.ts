import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { DATA_DIR, REPO_ROOT } from '../../support/stack-env';
import { startQuota, type QuotaHarness } from './support';

/**
 * The quota service's Python SDK (sdk/python): its pytest suite against this live API. The venv
 * (scripts/lib/python-tools.sh, run by scripts/test) holds the SDK as `pip install ./sdk/python`
 * installs it, and its pinned test tools. The suite is given the API's address and an operator
 * key only: it makes its own tenants, keys and catalogue through the SDK itself.
 */
const PYTHON = path.join(DATA_DIR, 'venv', 'bin', 'python');
const SUITE_TIMEOUT_MS = 600_000;

function run(command: string, args: string[], env: NodeJS.ProcessEnv) {
  return new Promise<{ exitCode: number | null; output: string }>((resolve, reject) => {
    // Asynchronous: the API under test answers from this same process.
    const child = spawn(command, args, { cwd: REPO_ROOT, env: { ...process.env, ...env } });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (exitCode) => resolve({ exitCode, output }));
  });
}

describe('the Python SDK against the live quota API', () => {
  let quota: QuotaHarness;

  beforeAll(async () => {
    quota = await startQuota();
  });
  afterAll(() => quota.close());

  it(
    'passes its pytest suite',
    async () => {
      if (!fs.existsSync(PYTHON))
        throw new Error(
          `${PYTHON} is missing: scripts/test makes it (or: . scripts/lib/python-tools.sh && ensure_python_tools)`,
        );
      const { exitCode, output } = await run(
        PYTHON,
        ['-m', 'pytest', 'sdk/python/tests', '-p', 'no:cacheprovider', '-rfEs', '--color=no'],
        {
          QUOTA_BASE_URL: quota.service.url,
          QUOTA_OPERATOR_KEY: quota.operatorKey,
          // The SDK's own environment defaults must not leak in from the caller's shell.
          QUOTA_API_KEY: '',
          PYTHONDONTWRITEBYTECODE: '1',
        },
      );
      fs.writeFileSync(path.join(DATA_DIR, 'logs', 'python-sdk-pytest.log'), output);
      const summary = output.trimEnd().split('\n').pop() ?? '';
      if (exitCode !== 0) console.log(output.slice(-20_000));
      expect(exitCode).toBe(0);
      expect(summary).toMatch(/ passed/);
      expect(summary).not.toMatch(/failed|error/);
    },
    SUITE_TIMEOUT_MS,
  );
});
