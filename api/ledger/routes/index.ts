import Router from '@koa/router';
import { ACCOUNT_OPERATIONS, mountAccountRoutes } from './accounts';
import { ASSET_TYPE_OPERATIONS, mountAssetTypeRoutes } from './asset-types';
import { BALANCE_OPERATIONS, mountBalanceRoutes } from './balances';
import { KEY_OPERATIONS, mountKeyRoutes } from './keys';
import type { LedgerOperation, LedgerRouteDeps } from './operation';
import { PROBE_OPERATIONS } from './probes';
import { mountSubTenantRoutes, SUB_TENANT_OPERATIONS } from './sub-tenants';
import { mountTransactionRoutes, TRANSACTION_OPERATIONS } from './transactions';

export type { LedgerOperation, LedgerRouteDeps } from './operation';

/**
 * Every operation of the ledger, by name, in the OpenAPI document's order (the probes first).
 * The probes are mounted by app.ts (mountProbeRoutes: they answer from the app's monitor, document
 * and metrics); every other area by ledgerRouter.
 */
export const LEDGER_OPERATIONS: Readonly<Record<string, LedgerOperation>> = {
  ...PROBE_OPERATIONS,
  ...ASSET_TYPE_OPERATIONS,
  ...ACCOUNT_OPERATIONS,
  ...BALANCE_OPERATIONS,
  ...TRANSACTION_OPERATIONS,
  ...SUB_TENANT_OPERATIONS,
  ...KEY_OPERATIONS,
};

/** The ledger's authenticated routes, area by area. */
export function ledgerRouter(deps: LedgerRouteDeps): Router {
  const router = new Router();
  mountAssetTypeRoutes(router, deps);
  mountAccountRoutes(router, deps);
  mountBalanceRoutes(router, deps);
  mountTransactionRoutes(router, deps);
  mountSubTenantRoutes(router, deps);
  mountKeyRoutes(router, deps);
  return router;
}
