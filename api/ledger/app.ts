import Router from '@koa/router';
import { createApp } from '../platform/http/app';
import { BackendMonitor, postgresCheck } from '../platform/health';
import type { PlatformDeps, ServiceInstance } from '../platform/service';
import { ledgerEnvelope } from './envelope';
import { ledgerRouter } from './routes';

/** Request bodies past this size are refused by the application (the edge allows less). */
export const LEDGER_BODY_LIMIT_BYTES = 1024 * 1024;
export const LEDGER_JSON_DEPTH_MAX = 64;

export function createLedgerApi(deps: PlatformDeps): ServiceInstance {
  // /healthz makes no network call of its own: it reads what the monitor last saw.
  const monitor = new BackendMonitor({ database: postgresCheck(deps.pool) });
  const router = new Router();
  router.get('/healthz', (ctx) => {
    const { database } = monitor.snapshot();
    if (database === 'down') {
      ctx.status = 503;
      ctx.body = { status: 'unhealthy', reason: 'database unreachable' };
      return;
    }
    // Keys are verified against the ledger's own Postgres tables, so the authorization
    // store is reachable exactly when the database is.
    ctx.body = { status: 'ok', auth_client_credential: 'ok' };
  });

  const { app, metrics } = createApp({
    service: 'ledger',
    logger: deps.logger,
    envelope: ledgerEnvelope,
    body: { limitBytes: LEDGER_BODY_LIMIT_BYTES, maxDepth: LEDGER_JSON_DEPTH_MAX },
    routers: [router, ledgerRouter({ pool: deps.pool })],
    quietPaths: ['/healthz'],
  });
  return {
    name: 'ledger',
    app,
    metrics,
    start: () => monitor.start(),
    stop: () => Promise.resolve(monitor.stop()),
  };
}
