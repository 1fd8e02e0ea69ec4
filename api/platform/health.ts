import { sql, type DatabasePool } from '../../db/pool';
import type { Redis } from '../../db/redis';

export type BackendStatus = 'up' | 'down';
export type BackendCheck = () => Promise<BackendStatus>;

/** How long a probe waits on one backend before calling it down. */
export const BACKEND_CHECK_TIMEOUT_MS = 1_000;

export async function withinTimeout(
  check: () => Promise<unknown>,
  timeoutMs = BACKEND_CHECK_TIMEOUT_MS,
): Promise<BackendStatus> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<BackendStatus>((resolve) => {
    timer = setTimeout(() => resolve('down'), timeoutMs);
  });
  try {
    return await Promise.race([check().then((): BackendStatus => 'up'), timeout]);
  } catch {
    return 'down';
  } finally {
    clearTimeout(timer);
  }
}

/** A round trip through a real transaction, so a stalled commit path counts as down. */
export const postgresCheck =
  (pool: DatabasePool, timeoutMs = BACKEND_CHECK_TIMEOUT_MS): BackendCheck =>
  () =>
    withinTimeout(() => pool.transaction((tx) => tx.oneFirst(sql.unsafe`SELECT 1`)), timeoutMs);

export const redisCheck =
  (redis: Redis, timeoutMs = BACKEND_CHECK_TIMEOUT_MS): BackendCheck =>
  () =>
    withinTimeout(() => redis.ping(), timeoutMs);

export async function checkAll<K extends string>(
  checks: Record<K, BackendCheck>,
): Promise<Record<K, BackendStatus>> {
  const names = Object.keys(checks) as K[];
  const results = await Promise.all(names.map((name) => checks[name]()));
  return Object.fromEntries(names.map((name, i) => [name, results[i]])) as Record<K, BackendStatus>;
}

/**
 * Keeps the last known status of each backend, refreshed in the background, for probes
 * that must answer without a network call of their own (the ledger's /healthz).
 */
export class BackendMonitor<K extends string> {
  private statuses: Record<K, BackendStatus>;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly checks: Record<K, BackendCheck>,
    private readonly intervalMs = 1_000,
  ) {
    this.statuses = Object.fromEntries(Object.keys(checks).map((k) => [k, 'down'])) as Record<
      K,
      BackendStatus
    >;
  }

  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  snapshot(): Record<K, BackendStatus> {
    return { ...this.statuses };
  }

  async refresh(): Promise<void> {
    this.statuses = await checkAll(this.checks);
  }
}
