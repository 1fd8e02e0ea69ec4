import Router from '@koa/router';
import type { Middleware } from 'koa';
import { MCP_OPERATIONS, mountMcpRoutes } from './mcp';
import { useTenantGuards, type RunsDeps, type Starters } from './operation';
import { PROBE_OPERATIONS } from './probes';
import { mountRunRoutes, RUN_OPERATIONS } from './runs';
import { mountScheduleRoutes, SCHEDULE_OPERATIONS } from './schedules';
import { SELF_CHECK_OPERATIONS } from './self-checks';
import { mountTemplateRoutes, TEMPLATE_OPERATIONS } from './templates';
import { mountTenantRoutes, TENANT_OPERATIONS } from './tenant';
import { mountTimerRoutes, TIMER_OPERATIONS } from './timers';
import { mountTriggerRoutes, TRIGGER_OPERATIONS } from './triggers';
import { mountWebhookRoutes, WEBHOOK_OPERATIONS } from './webhooks';
import { mountWorkflowRoutes, WORKFLOW_OPERATIONS } from './workflows';

export type { RunsDeps, RunsOperation, Starters } from './operation';

/**
 * Every operation of the runs service, by name, in the OpenAPI document's order (the probes
 * first); the MCP tools are picked from it. The probes and self-checks are mounted by app.ts
 * (mountProbeRoutes, mountSelfCheckRoutes: no key; the probes answer from the app's document,
 * guide and metrics); every other area by runsRouter.
 */
export const RUNS_OPERATIONS = {
  ...PROBE_OPERATIONS,
  ...MCP_OPERATIONS,
  ...SELF_CHECK_OPERATIONS,
  ...RUN_OPERATIONS,
  ...TENANT_OPERATIONS,
  ...WORKFLOW_OPERATIONS,
  ...WEBHOOK_OPERATIONS,
  ...TEMPLATE_OPERATIONS,
  ...TIMER_OPERATIONS,
  ...SCHEDULE_OPERATIONS,
  ...TRIGGER_OPERATIONS,
};

/**
 * Every /api/v1 route of the tenant API, area by area, behind the bearer key, per-tenant rate
 * limit and each operation's permission. `mcp`, the MCP endpoint's handler, is mounted at POST
 * /mcp behind the same key and rate limit (no permission: each tool call is a REST request that
 * checks its own).
 */
export function runsRouter(deps: RunsDeps, starters: Starters, mcp?: Middleware): Router {
  const router = new Router();
  useTenantGuards(router, deps);
  mountRunRoutes(router, deps, starters);
  mountTenantRoutes(router, deps);
  if (mcp) mountMcpRoutes(router, mcp);
  mountWorkflowRoutes(router, deps, starters);
  mountWebhookRoutes(router, deps, starters);
  mountTemplateRoutes(router, deps, starters);
  mountTimerRoutes(router, deps, starters);
  mountScheduleRoutes(router, deps);
  mountTriggerRoutes(router, deps);
  return router;
}
