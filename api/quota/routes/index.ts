import Router from '@koa/router';
import { ALERT_OPERATIONS, mountAlertRoutes } from './alerts';
import { CATALOGUE_OPERATIONS, mountCatalogueRoutes } from './catalogue';
import { CONSUMPTION_OPERATIONS, mountConsumptionRoutes } from './consumption';
import { KEY_OPERATIONS, mountKeyRoutes } from './keys';
import type { QuotaRouteDeps } from './operation';
import { mountOpsRoutes, OPS_OPERATIONS } from './ops';
import { mountProbeRoutes, PROBE_OPERATIONS } from './probes';
import { mountReportingRoutes, REPORTING_OPERATIONS } from './reporting';
import { mountSubjectRoutes, SUBJECT_OPERATIONS } from './subjects';
import { mountTenantRoutes, TENANT_OPERATIONS } from './tenants';
import { CODEC_OPERATIONS, mountCodecRoutes } from './temporal-codec';

export type { QuotaRouteDeps } from './operation';

/** Every operation of the quota service, by name (the OpenAPI document's paths). */
export const QUOTA_OPERATIONS = {
  ...prefixed('probe', PROBE_OPERATIONS),
  ...prefixed('ops', OPS_OPERATIONS),
  ...prefixed('codec', CODEC_OPERATIONS),
  ...prefixed('tenant', TENANT_OPERATIONS),
  ...prefixed('key', KEY_OPERATIONS),
  ...prefixed('resource', CATALOGUE_OPERATIONS.resource),
  ...prefixed('policy', CATALOGUE_OPERATIONS.policy),
  ...prefixed('plan', CATALOGUE_OPERATIONS.plan),
  ...prefixed('subject', SUBJECT_OPERATIONS),
  ...prefixed('consumption', CONSUMPTION_OPERATIONS),
  ...prefixed('reporting', REPORTING_OPERATIONS),
  ...prefixed('alerts', ALERT_OPERATIONS),
};

function prefixed<T extends object>(prefix: string, operations: T) {
  return Object.fromEntries(
    Object.entries(operations).map(([name, op]) => [`${prefix}.${name}`, op as T[keyof T]]),
  );
}

export function quotaRouter(deps: QuotaRouteDeps): Router {
  const router = new Router();
  mountProbeRoutes(router, deps);
  mountOpsRoutes(router, deps);
  mountCodecRoutes(router, deps);
  mountTenantRoutes(router, deps);
  mountKeyRoutes(router, deps);
  mountCatalogueRoutes(router, deps);
  mountSubjectRoutes(router, deps);
  mountConsumptionRoutes(router, deps);
  mountReportingRoutes(router, deps);
  mountAlertRoutes(router, deps);
  return router;
}
