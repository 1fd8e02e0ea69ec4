import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../../support/stack-env';
import { startQuota, type QuotaHarness } from './support';

/**
 * The typed quota client as an npm package (sdk/typescript): packed by sdk/typescript/pack,
 * installed from its tarball into an empty project outside the clone (so nothing of the monorepo
 * can be resolved from there), a program type-checked against the installed .d.ts, and the
 * README's first calls run from that project against a live quota API.
 */
const PACKAGE_DIR = path.join(REPO_ROOT, 'sdk', 'typescript');
const NAME = '@platform/quota-client';
const readJson = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8')) as Manifest;
const ROOT = readJson(path.join(REPO_ROOT, 'package.json'));

interface Manifest {
  name: string;
  version: string;
  license: string;
  dependencies?: Record<string, string>;
}

// Asynchronous: the API under test answers from this same process.
const execFileAsync = promisify(execFile);
async function run(command: string, args: string[], cwd: string, env: object = {}) {
  const { stdout } = await execFileAsync(command, args, {
    cwd,
    env: { ...process.env, ...env },
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout;
}

/** The README's program: the ts block after its first-calls marker, and the text block after. */
function readmeFirstCalls() {
  const readme = fs.readFileSync(path.join(PACKAGE_DIR, 'README.md'), 'utf8');
  const [, after] = readme.split('<!-- first calls:');
  const found = /```ts\n([\s\S]*?)```[\s\S]*?```text\n([\s\S]*?)```/.exec(after ?? '');
  if (!found)
    throw new Error('sdk/typescript/README.md: no ts block and text block after the marker');
  return { program: found[1]!, prints: found[2]! };
}

/**
 * The consumer's compiler settings: strict, resolving the package through its `exports` as Node
 * does (nodenext), with the web's globals and no @types at all (the project depends on the
 * package alone), the package's own .d.ts checked too (skipLibCheck off), and only syntax that
 * Node's type stripping runs as it is (erasableSyntaxOnly).
 */
const CONSUMER_TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'nodenext',
    lib: ['ES2023', 'DOM'],
    types: [],
    strict: true,
    noUncheckedIndexedAccess: true,
    skipLibCheck: false,
    verbatimModuleSyntax: true,
    erasableSyntaxOnly: true,
    noEmit: true,
  },
  include: ['*.ts'],
};

/** Node's one global the README's program reads, in place of @types/node (not a dependency). */
const NODE_GLOBALS = 'declare const process: { env: Record<string, string | undefined> };\n';

/**
 * Calls the types must refuse: each `@ts-expect-error` fails the check when its line compiles,
 * so a .d.ts that typed the client as `any` fails here. Beside each, the same call made right.
 */
const MISUSE = `import { createQuotaClient, type QuotaClient } from '${NAME}';
import type { components } from '${NAME}/quota-api';

const quota: QuotaClient = createQuotaClient({ baseUrl: 'http://127.0.0.1:8081', apiKey: 'qk_a_b' });
// @ts-expect-error: apiKey is required
createQuotaClient({ baseUrl: 'http://127.0.0.1:8081' });

void quota.GET('/v1/tenant');
// @ts-expect-error: a path the service does not serve
void quota.GET('/v1/nowhere');

const item: components['schemas']['ConsumeItem'] = { resource: 'api-calls', amount: 2 };
void quota.POST('/v1/consume', { body: { subject: 'customer-42', items: [item] } });
// @ts-expect-error: a consume names its items
void quota.POST('/v1/consume', { body: { subject: 'customer-42' } });
// @ts-expect-error: an amount is a number
export const wrong: components['schemas']['ConsumeItem'] = { resource: 'api-calls', amount: '2' };
`;

describe('the quota client as an npm package (sdk/typescript)', () => {
  let quota: QuotaHarness;
  let work: string;
  let tarball: string;
  let consumer: string;
  let installed: Manifest;

  beforeAll(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'quota-client-package-'));
    tarball = (await run(path.join(PACKAGE_DIR, 'pack'), [path.join(work, 'packed')], REPO_ROOT))
      .trim()
      .split('\n')
      .pop()!;

    // An empty project (an ES module, as the README's is) with the tarball as its one dependency.
    consumer = path.join(work, 'consumer');
    fs.mkdirSync(consumer);
    const project = { name: 'quota-client-consumer', private: true, type: 'module' };
    fs.writeFileSync(path.join(consumer, 'package.json'), JSON.stringify(project));
    // npm's cache (~/.npm, outside the clone) keeps the dependencies after the first run.
    await run(
      'npm',
      ['install', tarball, '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'],
      consumer,
    );
    installed = readJson(path.join(consumer, 'node_modules', ...NAME.split('/'), 'package.json'));

    quota = await startQuota();
  }, 180_000);
  afterAll(async () => {
    await quota?.close();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it("packs JavaScript, .d.ts types, the README and the LICENSE, and nothing of the client's sources or tools", async () => {
    const files = (await run('tar', ['-tzf', tarball], work))
      .trim()
      .split('\n')
      .map((file) => file.replace(/^package\//, ''))
      .sort();
    const modules = ['answers', 'catalogue', 'client', 'quota-api'];
    expect(files).toEqual(
      [
        'LICENSE',
        'README.md',
        'package.json',
        ...modules.flatMap((m) => [`dist/${m}.js`, `dist/${m}.d.ts`]),
      ].sort(),
    );
    expect(path.basename(tarball)).toBe(`platform-quota-client-${ROOT.version}.tgz`);
  });

  it("names the root package.json's version and licence, and needs nothing but its declared dependencies", () => {
    expect(installed).toMatchObject({ name: NAME, version: ROOT.version, license: 'Apache-2.0' });
    // The package in the repository says the same as the one installed from its tarball.
    expect(readJson(path.join(PACKAGE_DIR, 'package.json'))).toEqual(installed);
    expect(
      fs.readFileSync(path.join(consumer, 'node_modules', ...NAME.split('/'), 'LICENSE')),
    ).toEqual(fs.readFileSync(path.join(REPO_ROOT, 'LICENSE')));
    // Its runtime dependencies are those the client imports, at the versions the monorepo runs it on.
    const dependencies = installed.dependencies ?? {};
    expect(Object.keys(dependencies).sort()).toEqual(['openapi-fetch', 'ulid']);
    for (const [dependency, version] of Object.entries(dependencies))
      expect(version).toBe(ROOT.dependencies?.[dependency]);
  });

  it('type-checks a consumer against the installed .d.ts: the README program compiles, misuses do not', async () => {
    const { program } = readmeFirstCalls();
    fs.writeFileSync(path.join(consumer, 'tsconfig.json'), JSON.stringify(CONSUMER_TSCONFIG));
    fs.writeFileSync(path.join(consumer, 'first-calls.ts'), program);
    fs.writeFileSync(path.join(consumer, 'misuse.ts'), MISUSE);
    fs.writeFileSync(path.join(consumer, 'node-globals.d.ts'), NODE_GLOBALS);
    // The repository's compiler, a tool: what it checks against is the consumer's node_modules.
    const tsc = path.join(REPO_ROOT, 'node_modules', '.bin', 'tsc');
    const listed = await run(tsc, ['-p', 'tsconfig.json', '--listFiles'], consumer).catch(
      (error: Error & { stdout?: string }) => {
        throw new Error(`tsc refused the consumer:\n${error.stdout || error.message}`);
      },
    );
    // Every declaration it read is the compiler's own lib or the consumer's (no monorepo file).
    const read = listed.trim().split('\n');
    const typescriptLib = path.dirname(require.resolve('typescript'));
    expect(
      read.filter((file) => !file.startsWith(typescriptLib) && !file.startsWith(consumer)),
    ).toEqual([]);
    expect(read).toContain(
      path.join(consumer, 'node_modules', '@platform', 'quota-client', 'dist', 'client.d.ts'),
    );
  }, 120_000);

  it("runs the README's first calls from the empty project against the live API and prints what the README says", async () => {
    // The README's program as its file; node strips its types and runs it.
    const { program, prints } = readmeFirstCalls();
    fs.writeFileSync(path.join(consumer, 'first-calls.ts'), program);
    // A tenant and its admin key as typed-client.test.ts makes them (its grants written), in
    // place of the README's operator CLI; the program makes its catalogue under it.
    const tenant = await quota.newTenant();
    const stdout = await run(process.execPath, ['first-calls.ts'], consumer, {
      QUOTA_URL: quota.service.url,
      QUOTA_API_KEY: tenant.adminKey.key,
    });
    expect(stdout).toBe(prints);

    // The service holds what the program says: two of the day's three used by customer-42.
    const usage = await quota
      .as(tenant.adminKey.key)
      .get<{ usage: unknown[] }>('/v1/subjects/customer-42/usage');
    expect(usage.body.usage).toMatchObject([{ resource: 'api-calls', used: 2, limit: 3 }]);
  }, 60_000);
});
