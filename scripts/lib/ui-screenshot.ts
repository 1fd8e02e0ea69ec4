import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { TERMINAL_STATES } from '../../contracts/runs/run';

/**
 * scripts/ui-screenshot [out.png]: what an operator sees in the Temporal Web UI, proven on a real
 * run. Submits a run whose env holds a fresh value, opens a codec session on the login page with
 * a new `payloads:codec` operator key, sets the UI's Codec Server drawer as the README tells
 * operators, and screenshots the run's page once it shows the decoded input and the summary.
 * Then the same page in a browser context without the session must show ciphertext only.
 * Needs the stack and the services (scripts/start); the wrapper evals `scripts/stack env`.
 */

const ROOT = path.resolve(__dirname, '../..');
const { env } = process;
const RUNS_API = `http://127.0.0.1:${env.RUNS_PORT ?? '8082'}`;
const QUOTA_API = `http://127.0.0.1:${env.QUOTA_PORT ?? '8081'}`;
const UI = env.TEMPORAL_UI_URL ?? 'http://127.0.0.1:8233';
const CODEC = env.TEMPORAL_UI_CODEC_ENDPOINT ?? `${QUOTA_API}/v1/ops/temporal-codec`;
const IMAGE = `${env.REGISTRY_ADDRESS ?? '127.0.0.1:5000'}/busybox:latest`;
const CHROMIUM = '/usr/bin/chromium';
const TENANT = 'ui-screenshot';
/** What the UI shows of a payload it could not decode: its encoding, as text or base64. */
const CIPHERTEXT_MARKS = ['binary/encrypted', Buffer.from('binary/encrypted').toString('base64')];

class Failure extends Error {}

async function main(): Promise<void> {
  await requireApis();
  ensureChromium();

  const envValue = `demo-${randomBytes(6).toString('hex')}`;
  const trackId = await submitRun(envValue);
  const out = path.resolve(
    process.argv[2] ?? path.join(ROOT, `.data/ui-screenshots/run-${trackId}.png`),
  );
  const outNoSession = out.replace(/(\.png)?$/i, '-no-session.png');
  mkdirSync(path.dirname(out), { recursive: true });
  const operator = admin('quota-admin', [
    'operator-key',
    'create',
    '--actor',
    'ui-screenshot',
    '--scopes',
    'payloads:codec',
  ]);
  const operatorKey = operator.key as string;

  // Flags from the machine notes: without the background-networking ones Chromium keeps dialing
  // Google's hosts, which this machine's closed network refuses. Playwright gives every launch a
  // new empty --user-data-dir of its own (removed on close), and every context below is isolated.
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  try {
    const workflowUrl = `${UI}/namespaces/default/workflows/${encodeURIComponent(`run/${trackId}`)}`;
    const summary = `run ${IMAGE}`;

    const page = await newPage(browser);
    await openCodecSession(page, operatorKey);
    await configureCodec(page);
    await page.goto(workflowUrl);
    const decoded = await waitForText(page, (text) =>
      [envValue, summary].every((s) => text.includes(s)),
    );
    await screenshot(page, out);
    if (!decoded)
      throw new Failure(
        `the page with a codec session never showed both the env value ${envValue} and the summary "${summary}…" (see ${out})`,
      );
    console.log(`decoded (codec session): ${out}`);

    // The same settings, no session: the codec refuses the UI, which then shows the payloads as
    // they are in Temporal.
    const stranger = await newPage(browser);
    await configureCodec(stranger);
    await stranger.goto(workflowUrl);
    const encrypted = await waitForText(stranger, (text) =>
      CIPHERTEXT_MARKS.some((m) => text.includes(m)),
    );
    await screenshot(stranger, outNoSession);
    // Read after the screenshot's wait, so a late decode would be caught too.
    const leaked = (await pageText(stranger)).includes(envValue);
    if (leaked)
      throw new Failure(`without a codec session the page shows ${envValue} (see ${outNoSession})`);
    if (!encrypted)
      throw new Failure(
        `without a codec session the page never showed ciphertext (see ${outNoSession})`,
      );
    console.log(`ciphertext (no session):  ${outNoSession}`);
  } finally {
    await browser.close();
    // The key was this script's alone: no session outlives it.
    admin('quota-admin', ['operator-key', 'revoke', operator.id as string]);
  }
}

async function requireApis(): Promise<void> {
  for (const probe of [`${RUNS_API}/ping`, `${QUOTA_API}/healthz`, UI]) {
    const ok = await fetch(probe, { signal: AbortSignal.timeout(3000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (!ok)
      throw new Failure(
        `${probe} does not answer: start the stack and the services first (scripts/start)`,
      );
  }
}

function ensureChromium(): void {
  if (existsSync(CHROMIUM)) return;
  // Playwright's own browser download cannot reach its host from here; Debian's package can.
  console.log('installing Debian chromium (apt-get install -y chromium)...');
  const apt = { stdio: 'inherit', env: { ...env, DEBIAN_FRONTEND: 'noninteractive' } } as const;
  execFileSync('apt-get', ['update', '-qq'], apt);
  execFileSync('apt-get', ['install', '-y', '-qq', 'chromium'], apt);
}

/** The operator CLIs' --json answer (scripts/runs-admin, scripts/quota-admin). */
function admin(cli: string, args: string[]): Record<string, unknown> {
  const out = execFileSync(path.join(ROOT, 'scripts', cli), [...args, '--json'], {
    encoding: 'utf8',
  });
  return JSON.parse(out) as Record<string, unknown>;
}

/** A run whose env carries `envValue`, submitted under a short-lived key and waited to its end. */
async function submitRun(envValue: string): Promise<string> {
  admin('runs-admin', ['tenant', 'create', TENANT, '--name', 'UI screenshots']);
  const expiresAt = new Date(Date.now() + 3600_000).toISOString();
  const { key } = admin('runs-admin', [
    'key',
    'create',
    '--tenant',
    TENANT,
    '--permissions',
    'svc_run_submit,svc_run_read',
    '--label',
    'ui-screenshot',
    '--expires-at',
    expiresAt,
  ]) as { key: string };
  const call = async (method: string, url: string, body?: unknown) => {
    const res = await fetch(`${RUNS_API}${url}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) throw new Failure(`${method} ${url}: ${res.status} ${await res.text()}`);
    return (await res.json()) as Record<string, unknown>;
  };
  const { track_id: trackId } = (await call('POST', '/api/v1/runs', {
    image: IMAGE,
    command: ['echo', 'hello from ui-screenshot'],
    env: { API_TOKEN: envValue },
  })) as { track_id: string };
  console.log(`run ${trackId} submitted (env API_TOKEN=${envValue})`);
  for (const deadline = Date.now() + 120_000; Date.now() < deadline;) {
    const { state } = (await call('GET', `/api/v1/runs/${trackId}`)) as { state: string };
    if ((TERMINAL_STATES as readonly string[]).includes(state)) {
      console.log(`run ${trackId} ended: ${state}`);
      return trackId;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  throw new Failure(`run ${trackId} did not end within 120 s (is the worker running?)`);
}

async function newPage(browser: Browser): Promise<Page> {
  // Wide enough for the UI's top navigation and the workflow page's side-by-side cards.
  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  return page;
}

/** The login page puts the key in an HttpOnly cookie of the codec's paths (PUT .../session). */
async function openCodecSession(page: Page, key: string): Promise<void> {
  await page.goto(`${CODEC}/login`);
  await page.locator('input[type=password]').fill(key);
  await page.getByRole('button', { name: 'Open session' }).click();
  await page.locator('output').getByText('Session open').waitFor();
}

/**
 * The UI's Codec Server drawer, clicked as an operator would: "Use my browser setting" (a
 * cluster-level endpoint, set by --ui-codec-endpoint, would otherwise bring the cluster's
 * include-credentials, which is off), the endpoint, "Include cross-origin credentials".
 */
async function configureCodec(page: Page): Promise<void> {
  await page.goto(`${UI}/namespaces/default/workflows`);
  await page
    .locator('[data-testid^="data-encoder-status"]')
    .filter({ visible: true })
    .first()
    .click();
  const override = page.getByRole('radio', { name: /Use my browser setting/ });
  if (!(await override.isVisible()))
    await page.getByTestId('override-accordion').locator('button').first().click();
  await override.check();
  await page.getByTestId('data-encoder-endpoint-input').fill(CODEC);
  const credentials = page.getByRole('switch', { name: 'Include cross-origin credentials' });
  // Space on the focused switch: the UI's sticky top bar can cover its label once the drawer
  // scrolls, and then a click lands on the bar.
  if (!(await credentials.isChecked())) await credentials.press('Space');
  await page.getByTestId('confirm-data-encoder-button').click();
  // The drawer writes persisted stores (JSON in localStorage): check they took, so a changed UI
  // fails here with a clear message rather than later as "not decoded".
  const { origins } = await page.context().storageState();
  const stored = Object.fromEntries(
    (origins.find((o) => o.origin === new URL(UI).origin)?.localStorage ?? []).map((e) => [
      e.name,
      e.value,
    ]),
  );
  const want = {
    endpoint: JSON.stringify(CODEC),
    includeCredentials: 'true',
    overrideRemoteCodecConfiguration: 'true',
  };
  for (const [name, value] of Object.entries(want))
    if (stored[name] !== value)
      throw new Failure(`the codec drawer did not store ${name}=${value} (found ${stored[name]})`);
}

/**
 * The whole page: the UI scrolls inside #content-wrapper, so Playwright's fullPage stops at the
 * viewport; grow the viewport to the content instead (the summary sits in the event history,
 * well below the fold).
 */
async function screenshot(page: Page, file: string): Promise<void> {
  const height = await page.evaluate<number>(
    'document.getElementById("content-wrapper")?.scrollHeight ?? 0',
  );
  const { width } = page.viewportSize()!;
  if (height > 0) await page.setViewportSize({ width, height: Math.min(height + 100, 6000) });
  await page.waitForTimeout(1000); // let the timeline and the event table lay themselves out
  await page.screenshot({ path: file, fullPage: true });
}

/** Every frame's visible text: the UI may render markdown (the summary) in a frame of its own. */
async function pageText(page: Page): Promise<string> {
  const texts = await Promise.all(
    page.frames().map((f) =>
      f
        .locator('body')
        .innerText({ timeout: 1000 })
        .catch(() => ''),
    ),
  );
  return texts.join('\n');
}

async function waitForText(
  page: Page,
  ok: (text: string) => boolean,
  ms = 60_000,
): Promise<boolean> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await page.waitForTimeout(500))
    if (ok(await pageText(page))) return true;
  return false;
}

main().catch((error: unknown) => {
  console.error(`ui-screenshot: ${error instanceof Error ? error.message : String(error)}`);
  if (!(error instanceof Failure) && error instanceof Error) console.error(error.stack);
  process.exit(1);
});
