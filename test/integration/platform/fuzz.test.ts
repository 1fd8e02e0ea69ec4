import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DATA_DIR, REPO_ROOT } from '../../support/stack-env';
import { LedgerHarness } from '../ledger/support';
import { config, newTenant, startHarness, type Harness } from '../runs/support';
import { createTemporalClient } from '../../../platform/temporal';
import { sql } from '../../../db/pool';
import { scheduleTemporalId } from '../../../contracts/runs/schedule-fire';
import { ALL_WORKFLOW_PERMISSIONS } from '../runs/dag-support';
import { flushLedgerStream } from '../../../services/quota/consumption/ledger-flush';
import { startQuota, type QuotaHarness } from '../quota/support';

/**
 * Contract fuzzing: schemathesis (pinned in test/fuzz/requirements.txt; scripts/test installs it
 * into $STACK_DATA_DIR/venv) reads each service's /openapi.json and sends what it generates from
 * it, valid and invalid, once per key role, with every check on. A run passes when schemathesis
 * found nothing: no 5xx, no status or body the document does not declare, no invalid request
 * accepted, no valid request refused except where test/fuzz/schemathesis.toml names the
 * operation's documented refusals of valid data (a posting that does not balance, ...).
 */
const SCHEMATHESIS = path.join(DATA_DIR, 'venv', 'bin', 'schemathesis');
const FUZZ_DIR = path.join(REPO_ROOT, 'test', 'fuzz');
/**
 * Test cases per operation and phase: enough to reach every bound, small enough for 2 cores.
 * FUZZ_MAX_EXAMPLES and FUZZ_SEED explore further by hand (e.g. FUZZ_MAX_EXAMPLES=200 FUZZ_SEED=7).
 */
const MAX_EXAMPLES = Number(process.env.FUZZ_MAX_EXAMPLES ?? 20);
/**
 * A role refused most operations (a reader, an operator on tenant routes) gets its refusals
 * whatever the body: fewer cases, and no coverage phase (the edge values of every field, which
 * the full role's run has already sent, at three quarters of the time of a run).
 */
const NARROW_MAX_EXAMPLES = Number(process.env.FUZZ_MAX_EXAMPLES ?? 8);
const NARROW = [
  '--max-examples',
  String(NARROW_MAX_EXAMPLES),
  '--phases',
  'examples,fuzzing,stateful',
];
/** Fixed: the same requests on every run, so a failure in CI reproduces locally. */
const SEED = Number(process.env.FUZZ_SEED ?? 20261124);
/** A request the service does not answer in this long is a finding (a hang), not a wait. */
const REQUEST_TIMEOUT_SECONDS = 30;
const ROLE_TIMEOUT_MS = 300_000;

interface FuzzResult {
  exitCode: number | null;
  operations: number;
  failures: number;
  errors: number;
  requests: number;
  serverErrors: number;
  output: string;
}

/** Probes whose 503 is their documented answer about the shared stack (schemathesis.toml too). */
const STACK_PROBES = /route="\/(readyz|healthz\/jobs|healthz\/worker)"/;

/**
 * Requests the service answered so far, all and 5xx (a stack probe's 503 aside), from its
 * request-duration histogram.
 */
async function answered(url: string): Promise<{ all: number; serverErrors: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let all = 0;
  let serverErrors = 0;
  for (const [, labels = '', value = '0'] of text.matchAll(
    /^http_request_duration_seconds_count\{([^}]*)\} (\S+)$/gm,
  )) {
    all += Number(value);
    if (/status="5\d\d"/.test(labels) && !STACK_PROBES.test(labels)) serverErrors += Number(value);
  }
  return { all, serverErrors };
}

/** The totals of schemathesis's JUnit report (one test case per operation). */
function junitTotals(file: string): { operations: number; failures: number; errors: number } {
  const head = /<testsuites ([^>]*)>/.exec(fs.readFileSync(file, 'utf8'))?.[1] ?? '';
  const attribute = (name: string) => Number(new RegExp(`${name}="(\\d+)"`).exec(head)?.[1] ?? NaN);
  return {
    operations: attribute('tests'),
    failures: attribute('failures'),
    errors: attribute('errors'),
  };
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv, cwd: string) {
  return new Promise<{ exitCode: number | null; output: string }>((resolve, reject) => {
    // Asynchronous: the services under test answer from this same process.
    const child = spawn(command, args, { cwd, env: { ...process.env, ...env } });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (exitCode) => resolve({ exitCode, output }));
  });
}

/** The command line: every check, bounded and seeded, a JUnit report to `junit`. */
const schemathesisArgs = (url: string, junit: string, extraArgs: string[]) => [
  '--config-file',
  path.join(FUZZ_DIR, 'schemathesis.toml'),
  'run',
  `${url}/openapi.json`,
  '--checks',
  'all',
  '--max-examples',
  String(MAX_EXAMPLES),
  '--seed',
  String(SEED),
  // No example database: what ran before must not change what runs now.
  '--generation-database',
  'none',
  '--request-timeout',
  String(REQUEST_TIMEOUT_SECONDS),
  '--report',
  'junit',
  '--report-junit-path',
  junit,
  '--no-color',
  ...extraArgs,
];

/** One schemathesis run against `url` with `bearer`; its full output goes to .data/logs. */
async function fuzz(
  name: string,
  url: string,
  bearer: string,
  extraArgs: string[] = [],
): Promise<FuzzResult> {
  if (!fs.existsSync(SCHEMATHESIS))
    throw new Error(
      `${SCHEMATHESIS} is missing: scripts/test installs it (or: . scripts/lib/python-tools.sh && ensure_python_tools)`,
    );
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuzz-'));
  const junit = path.join(workDir, 'junit.xml');
  try {
    const before = await answered(url);
    const { exitCode, output } = await run(
      SCHEMATHESIS,
      schemathesisArgs(url, junit, extraArgs),
      { FUZZ_BEARER: bearer, SCHEMATHESIS_HOOKS: path.join(FUZZ_DIR, 'hooks.py') },
      workDir,
    );
    fs.writeFileSync(path.join(DATA_DIR, 'logs', `fuzz-${name}.log`), output);
    const after = await answered(url);
    const result: FuzzResult = {
      exitCode,
      ...(fs.existsSync(junit)
        ? junitTotals(junit)
        : { operations: 0, failures: NaN, errors: NaN }),
      // Less the one scrape of /metrics that `before` made.
      requests: after.all - before.all - 1,
      serverErrors: after.serverErrors - before.serverErrors,
      output,
    };
    console.log(
      `fuzz ${name}: ${result.operations} operations, ${result.requests} requests, ` +
        `${result.failures} failures, ${result.errors} errors, ${result.serverErrors} answered 5xx`,
    );
    return result;
  } finally {
    fs.rmSync(workDir, { recursive: true, force: true });
  }
}

/** What a failed run reported, short enough to read in a jest failure. */
const findings = (output: string) =>
  (output.split(/^=+ FAILURES =+$/m)[1] ?? output.slice(-4000))
    .split('\n')
    .map((line) => (line.length > 300 ? `${line.slice(0, 300)}...` : line))
    .join('\n')
    .slice(0, 8000);

function expectClean(result: FuzzResult): void {
  const verdict = {
    exitCode: result.exitCode,
    failures: result.failures,
    errors: result.errors,
    serverErrors: result.serverErrors,
  };
  const clean = { exitCode: 0, failures: 0, errors: 0, serverErrors: 0 };
  if (JSON.stringify(verdict) !== JSON.stringify(clean)) console.log(findings(result.output));
  expect(verdict).toEqual(clean);
  expect(result.operations).toBeGreaterThan(0);
}

describe('the ledger under schemathesis', () => {
  const h = new LedgerHarness();
  let keys: Record<string, string>;

  beforeAll(async () => {
    // LedgerHarness.start widens the edge rate limit: the fuzzer sends hundreds a second.
    await h.start();
    const t = await h.tenant('fuzz');
    keys = {
      ledger_admin: t.admin.token,
      ledger_poster: t.poster.token,
      ledger_reader: t.reader.token,
      ledger_partner: t.partner.token,
    };
  });
  afterAll(() => h.stop());

  it.each(['ledger_admin', 'ledger_poster', 'ledger_reader', 'ledger_partner'])(
    'with a %s key, finds nothing the document does not declare',
    async (role) => {
      const narrow = role === 'ledger_reader' ? NARROW : [];
      expectClean(await fuzz(`ledger-${role}`, h.url, keys[role]!, narrow));
    },
    ROLE_TIMEOUT_MS,
  );
});

describe('the runs service under schemathesis', () => {
  let h: Harness;
  let keys: Record<string, string>;
  let tenantIds: string[] = [];

  beforeAll(async () => {
    // The per-tenant request limit is configuration: wide, or the fuzzer meets 429 throughout.
    h = await startHarness({ RUNS_RATE_LIMIT_REQUESTS: '1000000' });
    // Every run, workflow, webhook, template and timer (and schedule) permission; and every read.
    const all = `${ALL_WORKFLOW_PERMISSIONS},svc_webhook_admin,svc_webhook_read,svc_template_write,svc_template_read,svc_template_run,svc_timer_write,svc_timer_read`;
    const read = 'svc_run_read,svc_workflow_read,svc_webhook_read,svc_template_read,svc_timer_read';
    const tenants = {
      all: await newTenant(h.pool, { permissions: all }),
      read: await newTenant(h.pool, { permissions: read }),
    };
    tenantIds = Object.values(tenants).map((t) => t.tenantId);
    keys = { all: tenants.all.key, read: tenants.read.key };
  });
  afterAll(async () => {
    // The schedules the fuzzer made each have a Temporal Schedule: deleted here (tests share a
    // namespace; the global teardown would otherwise count them as left behind).
    if (h) {
      const ids = (await h.pool.anyFirst(sql.unsafe`
        SELECT schedule_id FROM runs.schedules
        WHERE tenant_id = ANY(${sql.array(tenantIds, 'text')})`)) as string[];
      const temporal = createTemporalClient(config);
      for (const id of ids)
        await temporal.schedule
          .getHandle(scheduleTemporalId(id))
          .delete()
          .catch(() => undefined);
      await temporal.connection.close();
    }
    await h?.close();
  });

  it.each(['all', 'read'])(
    'with a key of %s permissions, finds nothing the document does not declare',
    async (permissions) => {
      // Self-checks are the operator's diagnostic (private networks only) and each starts a
      // container: not a tenant API, and not fuzzed. Submitted runs are fuzzed: an image the
      // fuzzer makes up is never in the registry, so such a run ends image_pull_failed without
      // a container (the global teardown ends any workflow still running).
      expectClean(
        await fuzz(`runs-${permissions}`, h.service.url, keys[permissions]!, [
          '--exclude-path-regex',
          '^/api/v1/self-checks',
          ...(permissions === 'read' ? NARROW : []),
        ]),
      );
    },
    ROLE_TIMEOUT_MS,
  );
});

describe('the quota service under schemathesis', () => {
  let h: QuotaHarness;
  let keys: Record<string, string>;

  beforeAll(async () => {
    h = await startQuota();
    const tenant = await h.newTenant('fuzz');
    keys = { tenant_admin: tenant.adminKey.key, operator: h.operatorKey };
  });
  afterAll(() => h?.close());
  // The suite's fast-mode decisions wait in the shared Redis stream (its services run without
  // the ledger-flush schedule): flushed here, so /healthz/worker reports the fuzzer's own
  // decisions, not those other test files left minutes ago (its 503 past the budget is right).
  beforeEach(() => flushLedgerStream(h));

  it.each(['tenant_admin', 'operator'])(
    'with a %s key, finds nothing the document does not declare',
    async (role) => {
      // An operator key sees every tenant of the shared database (other tests' too): the fuzzer
      // must not suspend or re-bootstrap them, so the operator's changes of existing tenants are
      // left to test/integration/quota/tenants-keys.test.ts.
      const spareOtherTenants = [
        '--exclude-name',
        'DELETE /v1/tenants/{tenant_id}',
        '--exclude-name',
        'PATCH /v1/tenants/{tenant_id}',
        '--exclude-name',
        'POST /v1/tenants/{tenant_id}/bootstrap-authz',
      ];
      expectClean(
        await fuzz(
          `quota-${role}`,
          h.service.url,
          keys[role]!,
          role === 'operator' ? [...spareOtherTenants, ...NARROW] : [],
        ),
      );
    },
    ROLE_TIMEOUT_MS,
  );
});
