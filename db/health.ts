import { isLoginRefused, type DatabasePool } from './pool';
import { selectOne } from './probes';
import type { Redis } from './redis';

export type BackendStatus = 'up' | 'down';
export type BackendCheck = () => Promise<BackendStatus>;
/**
 * What postgresLoginCheck sees: 'rejected' is a database that answers but refuses the service's
 * own login (its credential), as opposed to one that is unreachable or stalled ('down').
 */
export type DatabaseStatus = BackendStatus | 'rejected';

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
const roundTrip = (pool: DatabasePool) => pool.transaction((tx) => selectOne(tx));

export const postgresCheck =
  (pool: DatabasePool, timeoutMs = BACKEND_CHECK_TIMEOUT_MS): BackendCheck =>
  () =>
    withinTimeout(() => roundTrip(pool), timeoutMs);

/**
 * postgresCheck that tells a database refusing the service's own credential ('rejected') from one
 * that is unreachable or stalled ('down'). A refusal comes only when the pool opens a connection;
 * connections that logged in before keep working, and so does this check on them.
 */
export const postgresLoginCheck =
  (pool: DatabasePool, timeoutMs = BACKEND_CHECK_TIMEOUT_MS): (() => Promise<DatabaseStatus>) =>
  async () => {
    let refused = false;
    const status = await withinTimeout(
      () =>
        roundTrip(pool).catch((error: unknown) => {
          refused = isLoginRefused(error);
          throw error;
        }),
      timeoutMs,
    );
    return refused ? 'rejected' : status;
  };

export const redisCheck =
  (redis: Redis, timeoutMs = BACKEND_CHECK_TIMEOUT_MS): BackendCheck =>
  () =>
    withinTimeout(() => redis.ping(), timeoutMs);

export async function checkAll<K extends string, S extends string = BackendStatus>(
  checks: Record<K, () => Promise<S>>,
): Promise<Record<K, S>> {
  const names = Object.keys(checks) as K[];
  const results: S[] = await Promise.all(names.map((name) => checks[name]()));
  return Object.fromEntries(names.map((name, i) => [name, results[i]])) as Record<K, S>;
}

/**
 * Keeps the last known status of each backend, refreshed in the background, for probes
 * that must answer without a network call of their own (the ledger's /healthz). A backend
 * is 'unknown' until its first check has completed.
 */
export class BackendMonitor<K extends string, S extends string = BackendStatus> {
  private statuses: Record<K, S | 'unknown'>;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly checks: Record<K, () => Promise<S>>,
    private readonly intervalMs = 1_000,
  ) {
    this.statuses = Object.fromEntries(Object.keys(checks).map((k) => [k, 'unknown'])) as Record<
      K,
      S | 'unknown'
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

  snapshot(): Record<K, S | 'unknown'> {
    return { ...this.statuses };
  }

  async refresh(): Promise<void> {
    this.statuses = await checkAll(this.checks);
  }
}
