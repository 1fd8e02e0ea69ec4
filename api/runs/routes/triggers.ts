import type Router from '@koa/router';
import type { Context } from 'koa';
import type { PlatformDeps } from '../../../platform/deps';
import { principalOf } from '../auth';
import {
  createTrigger,
  deleteTrigger,
  getTrigger,
  listFires as listTriggerFires,
  listTenantTriggers,
  patchTrigger,
  type TriggerCreateBody,
  type TriggerPatchBody,
} from '../../../services/runs/triggers/triggers';
import { mountOperation, validated } from './operation';
import Joi from 'joi';
import { runsError } from '../../../services/runs/errors';
import { offset, pageLimit, ulidParam } from '../../../services/runs/schemas';
import { areaOperations, done, ok, type RunsOperation } from './operation';
import { SCHEDULE_CATCHUP_WINDOW } from '../../../services/runs/schedules/schedules';
import { cron, timezone } from './schedules';
import { paramValues, refParams, TEMPLATE_NOT_FOUND, templateVersion } from './templates';
import { Trigger, TriggerFireList, TriggerList } from '../../../services/runs/triggers/models';

/** A list asks Temporal for each trigger's next_fire_at: its page is kept small. */
export const TRIGGERS_LIST_LIMIT_DEFAULT = 50;
export const TRIGGERS_LIST_LIMIT_MAX = 100;
export const TRIGGER_FIRES_LIMIT_DEFAULT = 100;
export const TRIGGER_FIRES_LIMIT_MAX = 1000;

const TriggerCreateRequest = Joi.object({
  cron: cron().required(),
  timezone: timezone().required(),
  params: paramValues()
    .default({})
    .description(
      "The template's parameters for every launch, checked against the version launched (the pinned one, or the latest) now and at each fire. Secret parameters' values are sealed (AES-256-GCM) and never shown.",
    ),
  version: templateVersion()
    .allow(null)
    .default(null)
    .description(
      'Pins a version (404 template_version_not_found); null (default): the latest at each fire.',
    ),
  enabled: Joi.boolean().default(true),
})
  .required()
  .unknown(false)
  .id('TriggerCreateRequest');

const TriggerPatchRequest = Joi.object({
  cron: cron(),
  timezone: timezone(),
  params: paramValues().description('Replaces the parameters (checked as at creation).'),
  version: templateVersion().allow(null),
  enabled: Joi.boolean().description(
    'true re-enables a trigger a fire disabled (disabled_reason cleared) and takes a max_triggers slot.',
  ),
})
  .min(1)
  .required()
  .unknown(false)
  .id('TriggerPatchRequest');

const listQuery = Joi.object({
  limit: pageLimit(TRIGGERS_LIST_LIMIT_MAX, TRIGGERS_LIST_LIMIT_DEFAULT),
  offset: offset().default(0),
});
const firesQuery = Joi.object({
  limit: pageLimit(TRIGGER_FIRES_LIMIT_MAX, TRIGGER_FIRES_LIMIT_DEFAULT),
  offset: offset().default(0),
});
const triggerParams = Joi.object({
  trigger_id: ulidParam(() => runsError('trigger_not_found')),
});

const TRIGGER_REFUSALS = {
  '400': 'Malformed JSON, or an unknown query parameter (the detail names the supported set).',
  '403': "`permission_denied`: the key lacks the operation's svc_template_* permission.",
  '429': '`rate_limited` (with `Retry-After`).',
  '503':
    'A backend is briefly unreachable (Postgres, Redis, or Temporal: `schedule_unavailable`); with Retry-After.',
} as const;
const TRIGGER_NOT_FOUND =
  "`trigger_not_found`: no such trigger, or not this tenant's (whatever the id's shape).";
const INVALID =
  'Schema mismatch (joi message); `invalid_cron: <why>`, `invalid_timezone`; `unknown_template_param:<name>`, `missing_template_param:<name>`, `invalid_template_param:<name>` (the params against the version a fire would launch).';

const triggerOperation = areaOperations(TRIGGER_REFUSALS);
const write = triggerOperation('svc_template_write');
const read = triggerOperation('svc_template_read');

/** The template trigger operations of the runs service (the spec's Triggers rows, and more). */
export const TRIGGER_OPERATIONS = {
  triggerCreate: write({
    method: 'post',
    path: '/api/v1/templates/{ref}/triggers',
    operationId: 'createTrigger',
    routeName: 'trigger.create',
    summary: 'Create a trigger: launch the template at each cron occurrence in its time zone',
    description: `One Temporal Schedule trigger/<trigger_id> (overlap ALLOW_ALL, catch-up window ${SCHEDULE_CATCHUP_WINDOW}, pause on failure, paused while disabled; the daylight-saving rule of schedules) starts triggerFireWorkflow at each occurrence, which records it in the fire ledger and launches the template as a workflow, once per occurrence, as the key that created the trigger (its tier, allowlist and quotas; the launch is the template run's own path). A launch refused for good (template deleted, parameters no longer valid, a quota, the key revoked) disables the trigger with disabled_reason. Counted against max_triggers while enabled. Atomic: if Temporal refuses, nothing is kept (503 schedule_unavailable).`,
    request: { params: refParams, body: TriggerCreateRequest },
    responses: { '201': ok(Trigger, 'Created') },
    refusals: {
      '404': `${TEMPLATE_NOT_FOUND} \`template_version_not_found\`: the pinned version does not exist.`,
      '422': INVALID,
      '429':
        '`trigger_quota_exceeded` (the tenant has max_triggers enabled triggers; only when created enabled), or `rate_limited` (with `Retry-After`).',
      '503':
        '`secrets_unavailable` (a secret parameter is given and the service has no RUNS_SECRETS_KEY), `schedule_unavailable` (Temporal), or a backend briefly unreachable.',
    },
  }),
  templateTriggers: read({
    method: 'get',
    path: '/api/v1/templates/{ref}/triggers',
    operationId: 'listTemplateTriggers',
    routeName: 'trigger.list_of_template',
    summary: "The template's triggers, newest first, with next_fire_at",
    request: { params: refParams, query: listQuery },
    responses: { '200': ok(TriggerList) },
    refusals: { '404': TEMPLATE_NOT_FOUND },
  }),
  triggerList: read({
    method: 'get',
    path: '/api/v1/triggers',
    operationId: 'listTriggers',
    routeName: 'trigger.list',
    summary: "The tenant's triggers (of every template), newest first, with next_fire_at",
    request: { query: listQuery },
    responses: { '200': ok(TriggerList) },
  }),
  triggerGet: read({
    method: 'get',
    path: '/api/v1/triggers/{trigger_id}',
    operationId: 'getTrigger',
    routeName: 'trigger.get',
    summary: 'A trigger with next_fire_at and, if a fire disabled it, why',
    request: { params: triggerParams },
    responses: { '200': ok(Trigger) },
    refusals: { '404': TRIGGER_NOT_FOUND },
  }),
  triggerPatch: write({
    method: 'patch',
    path: '/api/v1/triggers/{trigger_id}',
    operationId: 'updateTrigger',
    routeName: 'trigger.update',
    summary: 'Enable or disable a trigger, or change its cron, timezone, params or version',
    description:
      'enabled false pauses its Temporal Schedule and frees its max_triggers slot (the fire ledger is kept); enabled true unpauses it, clears disabled_reason and takes a slot. params and version are checked against the template as at creation. The row and the Temporal Schedule change together: if Temporal refuses, nothing changes (503 schedule_unavailable).',
    request: { params: triggerParams, body: TriggerPatchRequest },
    responses: { '200': ok(Trigger) },
    refusals: {
      '404': `${TRIGGER_NOT_FOUND} \`template_not_found\`, \`template_version_not_found\` when params or version are given and the template or version is gone.`,
      '422': INVALID,
      '429': '`trigger_quota_exceeded` (enabling at max_triggers), or `rate_limited`.',
    },
  }),
  triggerDelete: write({
    method: 'delete',
    path: '/api/v1/triggers/{trigger_id}',
    operationId: 'deleteTrigger',
    routeName: 'trigger.delete',
    summary: 'Delete a trigger, its Temporal Schedule and its fire ledger',
    description: 'Workflows it launched go on.',
    request: { params: triggerParams },
    responses: { '204': done('Deleted') },
    refusals: { '404': TRIGGER_NOT_FOUND },
  }),
  triggerFires: read({
    method: 'get',
    path: '/api/v1/triggers/{trigger_id}/fires',
    operationId: 'listTriggerFires',
    routeName: 'trigger.fires',
    summary: "The trigger's fire ledger: which occurrence launched which workflow, newest first",
    request: { params: triggerParams, query: firesQuery },
    responses: { '200': ok(TriggerFireList) },
    refusals: { '404': TRIGGER_NOT_FOUND },
  }),
} satisfies Record<string, RunsOperation>;

/** The template trigger routes (triggers/): create, list, read, change, delete, the fire ledger. */
export function mountTriggerRoutes(router: Router, deps: PlatformDeps): void {
  const ops = TRIGGER_OPERATIONS;
  const triggerIdOf = (ctx: Context) => validated<{ trigger_id: string }>(ctx, 'params').trigger_id;
  const refOf = (ctx: Context) => validated<{ ref: string }>(ctx, 'params').ref;
  const pageOf = (ctx: Context) => validated<{ limit: number; offset: number }>(ctx, 'query');
  const tenantOf = (ctx: Context) => principalOf(ctx).tenantId;
  mountOperation(router, ops.triggerCreate, async (ctx) => {
    const body = validated<TriggerCreateBody>(ctx, 'body');
    ctx.status = 201;
    ctx.body = await createTrigger(deps, principalOf(ctx), refOf(ctx), body);
  });
  mountOperation(router, ops.templateTriggers, async (ctx) => {
    ctx.body = await listTenantTriggers(deps, tenantOf(ctx), refOf(ctx), pageOf(ctx));
  });
  mountOperation(router, ops.triggerList, async (ctx) => {
    ctx.body = await listTenantTriggers(deps, tenantOf(ctx), null, pageOf(ctx));
  });
  mountOperation(router, ops.triggerGet, async (ctx) => {
    ctx.body = await getTrigger(deps, tenantOf(ctx), triggerIdOf(ctx));
  });
  mountOperation(router, ops.triggerPatch, async (ctx) => {
    const body = validated<TriggerPatchBody>(ctx, 'body');
    ctx.body = await patchTrigger(deps, principalOf(ctx), triggerIdOf(ctx), body);
  });
  mountOperation(router, ops.triggerDelete, async (ctx) => {
    await deleteTrigger(deps, principalOf(ctx), triggerIdOf(ctx));
    ctx.status = 204;
  });
  mountOperation(router, ops.triggerFires, async (ctx) => {
    ctx.body = await listTriggerFires(deps, tenantOf(ctx), triggerIdOf(ctx), pageOf(ctx));
  });
}
