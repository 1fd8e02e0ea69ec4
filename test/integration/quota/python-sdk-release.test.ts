import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { DATA_DIR, REPO_ROOT } from '../../support/stack-env';
import { startQuota, type QuotaHarness } from './support';

/**
 * The Python SDK as a user gets a release of it: a wheel and an sdist built by `python -m build`
 * (PyPI's build, pinned in sdk/python/requirements-test.txt), the wheel installed into a fresh
 * venv that holds nothing else, and the README's example run from there against a live quota API.
 * The other Python test (python-sdk.test.ts) runs the SDK's own suite on `pip install ./sdk/python`.
 */
const SDK_DIR = path.join(REPO_ROOT, 'sdk', 'python');
/** The test venv (scripts/lib/python-tools.sh): build, hatchling and pip come from there. */
const TEST_PYTHON = path.join(DATA_DIR, 'venv', 'bin', 'python');
/**
 * The wheels the SDK's dependencies install from, at the versions the test venv pins: fetched
 * from PyPI the first time only, so later runs install offline, in seconds.
 */
const WHEELHOUSE = path.join(DATA_DIR, 'python-sdk-wheelhouse');
const PINS = path.join(SDK_DIR, 'requirements-test.txt');
const ROOT_VERSION = (
  JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }
).version;
const LICENSE = fs.readFileSync(path.join(REPO_ROOT, 'LICENSE'), 'utf8');

// Asynchronous: the API under test answers from this same process.
const execFileAsync = promisify(execFile);
async function run(command: string, args: string[], options: { cwd?: string; env?: object } = {}) {
  const { stdout } = await execFileAsync(command, args, {
    cwd: options.cwd ?? REPO_ROOT,
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', ...options.env },
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout;
}

/** What the built files hold, read by Python's own zipfile and tarfile. */
const INSPECT_DISTRIBUTIONS = `
import email, json, sys, tarfile, zipfile
wheel_path, sdist_path = sys.argv[1:3]
with zipfile.ZipFile(wheel_path) as wheel:
    names = wheel.namelist()
    info = next(n for n in names if n.endswith(".dist-info/METADATA"))
    metadata = email.message_from_bytes(wheel.read(info))
    licence = next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
    wheel_out = {
        "files": names,
        "name": metadata["Name"],
        "version": metadata["Version"],
        "license_expression": metadata["License-Expression"],
        "license_files": metadata.get_all("License-File"),
        "license_text": wheel.read(licence).decode(),
    }
with tarfile.open(sdist_path) as sdist:
    members = sdist.getnames()
    top = members[0].split("/")[0]
    sdist_out = {
        "files": [m.removeprefix(top + "/") for m in members],
        "license_text": sdist.extractfile(top + "/LICENSE").read().decode(),
    }
print(json.dumps({"wheel": wheel_out, "sdist": sdist_out}))
`;

/** What the installed package says of itself, and where it was imported from. */
const INSTALLED = `
import importlib.metadata, json, quota_client
print(json.dumps({
    "version": importlib.metadata.version("quota-client"),
    "module_version": quota_client.__version__,
    "license_expression": importlib.metadata.metadata("quota-client")["License-Expression"],
    "imported_from": quota_client.__file__,
}))
`;

describe('a release of the Python SDK: built with python -m build, installed into a fresh venv', () => {
  let quota: QuotaHarness;
  let work: string;
  /** `git status` of sdk/python before and after the build. */
  let tree: { before: string; after: string };
  let built: string[];
  let wheel: string;
  let sdist: string;
  /** The fresh venv's interpreter. */
  let python: string;

  beforeAll(async () => {
    if (!fs.existsSync(TEST_PYTHON))
      throw new Error(
        `${TEST_PYTHON} is missing: scripts/test makes it (or: . scripts/lib/python-tools.sh && ensure_python_tools)`,
      );
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'quota-sdk-release-'));
    const dist = path.join(work, 'dist');

    // --ignored too: a build that left a build/ or an egg-info behind would show there.
    const status = () => run('git', ['status', '--porcelain', '--ignored', '--', 'sdk/python']);
    const before = await status();
    // build's default: the sdist first, then the wheel from the unpacked sdist (so a file the
    // sdist forgot fails the build). --no-isolation builds with the test venv's pinned hatchling,
    // offline; build still checks it is the version pyproject.toml's [build-system] asks for.
    await run(TEST_PYTHON, ['-m', 'build', '--no-isolation', '--outdir', dist, SDK_DIR]);
    tree = { before, after: await status() };
    built = fs.readdirSync(dist).sort();
    wheel = path.join(dist, `quota_client-${ROOT_VERSION}-py3-none-any.whl`);
    sdist = path.join(dist, `quota_client-${ROOT_VERSION}.tar.gz`);

    // No pip in the new venv: the test venv's pip installs into it (--python), which spares the
    // seconds ensurepip takes. The venv then holds the wheel and its dependencies, nothing else.
    const venv = path.join(work, 'venv');
    await run('python3', ['-m', 'venv', '--without-pip', venv]);
    python = path.join(venv, 'bin', 'python');
    const pip = ['-m', 'pip', '--disable-pip-version-check', '--no-input', '--quiet'];
    const offline = ['install', '--no-index', '--find-links', WHEELHOUSE, wheel];
    const install = () => run(TEST_PYTHON, [...pip, '--python', python, ...offline]);
    await install().catch(async () => {
      // The wheelhouse lacks a dependency (the first run, or a pin changed): fetch, then again.
      const download = ['download', '--dest', WHEELHOUSE, '--constraint', PINS, wheel];
      await run(TEST_PYTHON, [...pip, ...download]);
      // pip download copies the SDK's own wheel there too: the wheelhouse keeps dependencies only.
      for (const file of fs.readdirSync(WHEELHOUSE))
        if (file.startsWith('quota_client-')) fs.rmSync(path.join(WHEELHOUSE, file));
      await install();
    });

    quota = await startQuota();
  }, 180_000);
  afterAll(async () => {
    await quota?.close();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it('is a wheel and an sdist of the version package.json names, built outside the source tree', () => {
    expect(built).toEqual([path.basename(wheel), path.basename(sdist)]);
    // Nothing written into sdk/python, ignored files included.
    expect(tree.after).toBe(tree.before);
  });

  it("ships the licence: the wheel's metadata says Apache-2.0, and both carry the README and LICENSE", async () => {
    const found = JSON.parse(
      await run(TEST_PYTHON, ['-c', INSPECT_DISTRIBUTIONS, wheel, sdist]),
    ) as {
      wheel: Record<string, unknown> & { files: string[] };
      sdist: { files: string[]; license_text: string };
    };
    expect(found.wheel).toMatchObject({
      name: 'quota-client',
      version: ROOT_VERSION,
      license_expression: 'Apache-2.0',
      license_files: ['LICENSE'],
      // sdk/python/LICENSE is a copy of the repository's: the same text, to the byte.
      license_text: LICENSE,
    });
    expect(found.wheel.files).toContain('quota_client/py.typed');
    expect(found.sdist.files).toEqual(
      expect.arrayContaining(['README.md', 'LICENSE', 'pyproject.toml', 'PKG-INFO']),
    );
    expect(found.sdist.license_text).toBe(LICENSE);
    // What a user installs is the package: not the SDK's tests, tools or generator.
    expect(found.sdist.files.filter((file) => /^(tests|tools)\//.test(file))).toEqual([]);
  });

  it('installed, it reports the version package.json names, from the fresh venv', async () => {
    // Run outside the clone, so nothing but the installed package can be imported.
    const installed = JSON.parse(await run(python, ['-c', INSTALLED], { cwd: work })) as {
      imported_from: string;
    };
    expect(installed).toMatchObject({
      version: ROOT_VERSION,
      module_version: ROOT_VERSION,
      license_expression: 'Apache-2.0',
    });
    expect(installed.imported_from.startsWith(path.join(work, 'venv', 'lib'))).toBe(true);
  });

  it("runs the README's example against the live API and prints what its comments say", async () => {
    const readme = fs.readFileSync(path.join(SDK_DIR, 'README.md'), 'utf8');
    const example = /```python\n([\s\S]*?)```/.exec(readme)![1]!;
    const expected = [...example.matchAll(/^\s*print\(.*\)\s+# (.+)$/gm)].map((m) => m[1]);
    expect(expected.length).toBeGreaterThan(0);
    // The example names its resource and plan: a tenant of its own, its key granted.
    const tenant = await quota.newTenant();
    const printed = await run(python, ['-c', example], {
      cwd: work,
      env: { QUOTA_API_KEY: tenant.adminKey.key, QUOTA_BASE_URL: quota.service.url },
    });
    expect(printed.trimEnd().split('\n')).toEqual(expected);
  });
});
