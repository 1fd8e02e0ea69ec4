import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../../support/stack-env';
import { LedgerHarness, newKey, transfer, type TenantClients } from '../ledger/support';
import { IMAGE, startHarness, type Harness } from '../runs/support';

export { freePort } from '../../support/throwaway-backends';

/** How long a restart of one part of the stack may take before the test gives up. */
export const RESTART_TIMEOUT_MS = 120_000;
/** A retried request waits Retry-After, but never longer than this (the outage is short). */
const RETRY_WAIT_MAX_MS = 1_000;
/** Wait between retries of a request that got no answer at all (connection refused or reset). */
const NO_ANSWER_WAIT_MS = 200;

/**
 * Restarts one part of the local stack with the repo's own script, as an operator would:
 * `immediate` stops Postgres without a checkpoint, like a crash, and kills Temporal's server.
 */
export async function restartStackPart(
  part: 'postgres' | 'redis' | 'temporal',
  options: { immediate?: boolean } = {},
): Promise<void> {
  await promisify(execFile)(
    path.join(REPO_ROOT, 'scripts', 'stack'),
    ['restart', part, ...(options.immediate ? ['--immediate'] : [])],
    { timeout: RESTART_TIMEOUT_MS },
  );
}

/** Every answer a fault test's clients saw, by status ('no answer' for a failed connection). */
export class Answers {
  readonly counts = new Map<number | 'no answer', number>();

  add(status: number | 'no answer'): void {
    this.counts.set(status, (this.counts.get(status) ?? 0) + 1);
  }

  get total(): number {
    return [...this.counts.values()].reduce((a, b) => a + b, 0);
  }

  /** Statuses no client should ever see: a server error other than 503. */
  serverErrors(): number[] {
    return [...this.counts.keys()].filter(
      (s): s is number => typeof s === 'number' && s >= 500 && s !== 503,
    );
  }

  toString(): string {
    return [...this.counts.entries()].map(([s, n]) => `${s}: ${n}`).join(', ');
  }
}

/**
 * Sends a request until its answer is final, by the services' retry rule: a 503, and a 409 or
 * 429 with Retry-After, is sent again as it was (same Idempotency-Key) after Retry-After; so is
 * a request that got no answer (the service or its backend restarting). Gives up at the deadline.
 */
export async function sendUntilFinal(
  send: () => Promise<Response>,
  answers: Answers,
  deadlineMs: number,
): Promise<{ status: number; body: unknown }> {
  for (;;) {
    let response: Response | null = null;
    try {
      response = await send();
    } catch {
      answers.add('no answer');
    }
    if (response) {
      answers.add(response.status);
      const text = await response.text();
      const retryAfter = response.headers.get('retry-after');
      const transient =
        response.status === 503 ||
        ((response.status === 409 || response.status === 429) && retryAfter !== null);
      if (!transient)
        return { status: response.status, body: text ? (JSON.parse(text) as unknown) : null };
    }
    if (Date.now() > deadlineMs) throw new Error('no final answer before the deadline');
    const waitMs = response
      ? Math.min(Number(response.headers.get('retry-after') ?? 1) * 1000, RETRY_WAIT_MAX_MS)
      : NO_ANSWER_WAIT_MS;
    await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
}

/** How long a freshly started API process may take to answer its probe. */
const API_READY_TIMEOUT_MS = 60_000;

/**
 * The ledger API as its own process (`tsx api/main.ts ledger`, in its own process group so a
 * test can kill -9 all of it), answering on `port` once /healthz does.
 */
export async function startLedgerProcess(
  port: number,
  env: NodeJS.ProcessEnv,
  logFile: string,
): Promise<ChildProcess> {
  const log = fs.openSync(logFile, 'a');
  const api = spawn(
    path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx'),
    ['api/main.ts', 'ledger'],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env, LEDGER_PORT: String(port) },
      stdio: ['ignore', log, log],
      detached: true,
    },
  );
  const deadline = Date.now() + API_READY_TIMEOUT_MS;
  for (;;) {
    const status = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.status,
      () => null,
    );
    if (status === 200) return api;
    if (api.exitCode !== null)
      throw new Error(`ledger API exited with ${api.exitCode}; see ${logFile}`);
    if (Date.now() > deadline) throw new Error(`ledger API not ready; see ${logFile}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** SIGKILL to the whole process group, as a crash or an OOM kill would. */
export function killHard(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    process.kill(-child.pid!, 'SIGKILL');
  });
}

/** The ledger and the runs service in this process, as most fault tests need both. */
export function bothServices() {
  const services = { ledger: new LedgerHarness(), runs: undefined as unknown as Harness };
  beforeAll(async () => {
    await services.ledger.start();
    services.runs = await startHarness();
  });
  afterAll(async () => {
    await services.ledger.stop();
    await services.runs?.close();
  });
  return services;
}

/** A fresh ledger tenant with a cash account without a floor and `count` wallets to pay into. */
export async function tenantWithWallets(ledger: LedgerHarness, count: number) {
  const t = await ledger.tenant();
  const usd = await ledger.assetType(t);
  const cash = await ledger.account(t, usd, { normal_side: 'debit', balance_floor: null });
  const wallets = await Promise.all(Array.from({ length: count }, () => ledger.account(t, usd)));
  return { t, cash, wallets };
}

/** A send of one posting of 1.00 from cash to `wallet` under a key of its own, to repeat as it is. */
export function transferSend(url: string, t: TenantClients, cash: string, wallet: string) {
  const key = newKey();
  const body = JSON.stringify(transfer(cash, wallet, '1.00'));
  return () =>
    fetch(`${url}/v1/transactions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${t.poster.token}`,
        'content-type': 'application/json',
        'idempotency-key': key,
      },
      body,
    });
}

/** A send of one run submit, to repeat as it is. */
export function submitSend(url: string, key: string, command: string[]) {
  return () =>
    fetch(`${url}/api/v1/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ image: IMAGE, command }),
    });
}
