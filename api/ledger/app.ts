import Router from '@koa/router';
import type { Middleware } from 'koa';
import client from 'prom-client';
import { createApp } from '../http/app';
import { BackendMonitor, postgresLoginCheck, type DatabaseStatus } from '../../db/health';
import type { ServiceInstance } from '../service';
import type { PlatformDeps } from '../../platform/deps';
import { ledgerBody } from './envelope';
import { LEDGER_ERRORS } from '../../services/ledger/errors';
import { ledgerRouter, type LedgerRouteDeps } from './routes';
import { mountProbeRoutes } from './routes/probes';
import { HoldDispatcher } from '../../services/ledger/holds';
import { edgeBodyLimit, edgeRateLimit } from './edge';
import { quotaCallMeter } from '../../services/ledger/metering';
import { startUnmeteredReplay } from '../../services/ledger/metering-replay';
import { openApiDocument } from './openapi';
import { postingBatchMetrics } from '../../services/ledger/metrics';
import { createLedgerBatchers, type LedgerBatchers } from '../../services/ledger/batchers';
import { RememberedKeys } from '../../services/ledger/credentials';
import { drainAsyncBalances } from '../../db/ledger/accounts';
import { enableAutoPipelining } from '../../db/redis';

/** Request bodies past this size are refused by the application (the edge allows less). */
export const LEDGER_BODY_LIMIT_BYTES = 1024 * 1024;
export const LEDGER_JSON_DEPTH_MAX = 64;
/** How often async accounts' balances are advanced from their queued deltas. */
export const ASYNC_ROLLUP_INTERVAL_MS = 1_000;
/** A backlog is drained in batches for at most this long per tick; the next tick goes on. */
export const ASYNC_ROLLUP_BUDGET_MS = 500;

/**
 * /healthz from what the monitor last saw of the database. Keys are verified against the ledger's
 * own Postgres tables, reached with the service's own database credential, so the database is the
 * authorization service: up, the credential is ok; refusing the service's login, every keyed
 * request gets 503 AUTHZ_CREDENTIAL_REJECTED, so the credential is rejected; unreachable, or not
 * yet checked, nobody can say.
 */
export function ledgerHealth(database: DatabaseStatus | 'unknown'): {
  status: 200 | 503;
  body: { status: 'ok' | 'unhealthy'; reason?: string; auth_client_credential: string };
} {
  switch (database) {
    case 'up':
      return { status: 200, body: { status: 'ok', auth_client_credential: 'ok' } };
    case 'unknown':
      return { status: 200, body: { status: 'ok', auth_client_credential: 'unknown' } };
    case 'rejected':
      return {
        status: 503,
        body: {
          status: 'unhealthy',
          reason: "database refuses the service's credential",
          auth_client_credential: 'rejected',
        },
      };
    case 'down':
      return {
        status: 503,
        body: {
          status: 'unhealthy',
          reason: 'database unreachable',
          auth_client_credential: 'unknown',
        },
      };
  }
}

/** ledger_postings_total, registered once the app's registry exists. */
function postingsCounter() {
  return new client.Counter({
    name: 'ledger_postings_total',
    help: 'POST /v1/transactions by path (one_statement: a remembered key, in one statement; general: key lookup and claim first) and outcome',
    labelNames: ['path', 'outcome'],
    registers: [],
  });
}

/** The edge: the rate limit per source address, then the edge's body limit. */
function ledgerEdge(deps: PlatformDeps): Middleware[] {
  const ledgerConfig = deps.config.ledger;
  return [
    edgeRateLimit({
      redis: deps.redis,
      logger: deps.logger,
      ratePerSecond: ledgerConfig.edgeRatePerSecond,
      burst: ledgerConfig.edgeBurst,
      bodyLimitBytes: ledgerConfig.edgeBodyLimitBytes,
    }),
    edgeBodyLimit({ bodyLimitBytes: ledgerConfig.edgeBodyLimitBytes }),
  ];
}

/**
 * What the routes call out to: the app's batchers and remembered keys, the monthly meter, holds'
 * expiry workflows, the posting count.
 */
function ledgerRouteDeps(
  deps: PlatformDeps,
  batchers: LedgerBatchers,
  holds: HoldDispatcher,
  postings: ReturnType<typeof postingsCounter>,
  callMeter: ReturnType<typeof quotaCallMeter> | null,
): LedgerRouteDeps {
  return {
    pool: deps.pool,
    batchers,
    keys: new RememberedKeys(),
    meter: callMeter?.meter ?? null,
    holdPlaced: (principal, created) =>
      holds.dispatch({
        tenantId: principal.tenantId,
        transactionId: created.transaction_id,
        expiresAtMs: created.hold!.expiresAtMs,
      }),
    holdSettled: (settled) => holds.settled(settled.transaction_id, settled.state),
    countPosting: (path, outcome) => postings.inc({ path, outcome }),
  };
}

/**
 * Advances async accounts' balances from their queued deltas every ASYNC_ROLLUP_INTERVAL_MS.
 * Every API process runs it: concurrent consumers skip each other's accounts, and an empty queue
 * costs one index probe, so there is no leader to elect.
 */
function startAsyncRollup(deps: PlatformDeps): NodeJS.Timeout {
  let rolling = false;
  const rollup = setInterval(() => {
    if (rolling) return;
    rolling = true;
    drainAsyncBalances(deps.pool, ASYNC_ROLLUP_BUDGET_MS)
      .catch((error: unknown) => deps.logger.warn({ err: error }, 'async rollup failed'))
      .finally(() => {
        rolling = false;
      });
  }, ASYNC_ROLLUP_INTERVAL_MS);
  rollup.unref();
  return rollup;
}

export function createLedgerApi(deps: PlatformDeps): ServiceInstance {
  // /healthz makes no network call of its own: it reads what the monitor last saw.
  const monitor = new BackendMonitor({ database: postgresLoginCheck(deps.pool) });
  let rollup: NodeJS.Timeout | undefined;
  let replay: NodeJS.Timeout | undefined;
  const holds = new HoldDispatcher(deps);
  const batchers = createLedgerBatchers(deps.pool);
  // Every request makes a small Redis call (the edge limit): concurrent ones share writes.
  enableAutoPipelining(deps.redis);
  const probes = new Router();
  mountProbeRoutes(probes, {
    health: () => ledgerHealth(monitor.snapshot().database),
    document: openApiDocument,
    metrics: () => metrics,
  });
  const postings = postingsCounter();
  const { metering } = deps.config.ledger;
  const callMeter =
    metering &&
    quotaCallMeter({
      metering,
      pool: deps.pool,
      logger: deps.logger,
      monthlyCallQuota: deps.config.ledger.monthlyCallQuota,
    });
  const { app, metrics } = createApp({
    service: 'ledger',
    trustedProxies: deps.config.trustedProxies,
    logger: deps.logger,
    envelope: ledgerBody,
    errors: LEDGER_ERRORS,
    body: { limitBytes: LEDGER_BODY_LIMIT_BYTES, maxDepth: LEDGER_JSON_DEPTH_MAX },
    edge: ledgerEdge(deps),
    routers: [probes, ledgerRouter(ledgerRouteDeps(deps, batchers, holds, postings, callMeter))],
    quietPaths: ['/healthz', '/ping', '/metrics'],
  });
  metrics.registerMetric(postings);
  for (const metric of postingBatchMetrics) metrics.registerMetric(metric);
  return {
    name: 'ledger',
    app,
    metrics,
    start: async () => {
      await monitor.start();
      holds.start();
      rollup = startAsyncRollup(deps);
      if (metering && deps.config.ledger.unmeteredReplay)
        replay = startUnmeteredReplay({ ...deps, metering });
      if (!metering)
        deps.logger.warn(
          'ledger: metering is off (QUOTA_URL or LEDGER_QUOTA_KEY unset): the monthly call quota is not kept',
        );
    },
    stop: async () => {
      clearInterval(rollup);
      clearInterval(replay);
      // Postings and key lookups still in flight finish on the pool before it is closed.
      await batchers.drain();
      await callMeter?.stop();
      monitor.stop();
      await holds.stop();
    },
  };
}
