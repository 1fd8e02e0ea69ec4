import type Router from '@koa/router';
import Joi from 'joi';
import {
  createPlan,
  createPolicy,
  createResource,
  deletePlan,
  deletePolicy,
  deleteResource,
  getPlan,
  getPolicy,
  getResource,
  listPlans,
  listPolicies,
  listResources,
  patchPlan,
  patchPolicy,
  patchResource,
  putPlanPolicies,
} from '../../../services/quota/catalogue';
import { PlanOut, PolicyOut, ResourceOut } from '../models';
import { boundedText } from '../../../platform/text';
import { body, description, id, name } from '../../../services/quota/schemas';
import {
  mountOperation,
  operation,
  principalOf,
  validated,
  type QuotaOperation,
  type QuotaRouteDeps,
} from './operation';
import { POLICY_CREATE, POLICY_PATCH } from './policy-schemas';
import type { QuotaErrorCode } from '../../../services/quota/errors';

/** A unit's name, for people: no control characters. */
const unit = () =>
  boundedText(64, {
    min: 1,
    pattern: '^[^\\u0000-\\u001f\\u007f]*$',
    refuses: 'control characters',
  });
const NAME_RULES =
  'Names are unique in the tenant (409 name_taken) and, for a key with catalog_name_prefix, must start with it (403 constraint_violation), as must the current name of a row it changes or deletes.';

interface Entity {
  label: 'resource' | 'policy' | 'plan';
  plural: string;
  param: string;
  notFound: QuotaErrorCode;
  /** What keeps a row from being deleted. */
  referencedBy: string;
}
const RESOURCE: Entity = {
  label: 'resource',
  plural: 'resources',
  param: 'resource_id',
  notFound: 'resource_not_found',
  referencedBy: 'a policy',
};
const POLICY: Entity = {
  label: 'policy',
  plural: 'policies',
  param: 'policy_id',
  notFound: 'policy_not_found',
  referencedBy: 'a plan; its overrides go with it',
};
const PLAN: Entity = {
  label: 'plan',
  plural: 'plans',
  param: 'plan_id',
  notFound: 'plan_not_found',
  referencedBy: 'an assignment',
};

const idParams = (entity: Entity) => Joi.object({ [entity.param]: id().required() });
const capitalized = (text: string) => text[0]!.toUpperCase() + text.slice(1);

/** The five operations of a catalogue entity: list, create, get, patch, delete. */
function crud(
  entity: Entity,
  out: Joi.Schema,
  create: Joi.Schema,
  patch: Joi.Schema,
  notes: string,
) {
  const path = `/v1/${entity.plural}`;
  const item = `${path}/{${entity.param}}`;
  const Name = capitalized(entity.label);
  const common = { tags: ['catalogue'] };
  return {
    list: operation({
      ...common,
      method: 'get',
      path,
      operationId: `list${capitalized(entity.plural)}`,
      summary: `The tenant's ${entity.plural}, oldest first`,
      access: 'catalog:read',
      responses: { '200': { description: 'the list', schema: Joi.array().items(out) } },
    }),
    create: operation({
      ...common,
      method: 'post',
      path,
      operationId: `create${Name}`,
      summary: `Create a ${entity.label}`,
      description: `${notes} ${NAME_RULES}`,
      access: 'catalog:write',
      request: { body: create },
      responses: { '201': { description: 'created', schema: out } },
      refusals: { 403: ['constraint_violation'], 409: ['name_taken'] },
    }),
    get: operation({
      ...common,
      method: 'get',
      path: item,
      operationId: `get${Name}`,
      summary: `A ${entity.label}`,
      access: 'catalog:read',
      request: { params: idParams(entity) },
      responses: { '200': { description: `the ${entity.label}`, schema: out } },
      refusals: { 404: [entity.notFound] },
    }),
    patch: operation({
      ...common,
      method: 'patch',
      path: item,
      operationId: `patch${Name}`,
      summary: `Change a ${entity.label}`,
      description: NAME_RULES,
      access: 'catalog:write',
      request: { params: idParams(entity), body: patch },
      responses: { '200': { description: `the ${entity.label}`, schema: out } },
      refusals: { 403: ['constraint_violation'], 404: [entity.notFound], 409: ['name_taken'] },
    }),
    delete: operation({
      ...common,
      method: 'delete',
      path: item,
      operationId: `delete${Name}`,
      summary: `Delete a ${entity.label}`,
      description: `409 in_use while it is referenced by ${entity.referencedBy}.`,
      access: 'catalog:write',
      request: { params: idParams(entity) },
      responses: { '204': { description: 'deleted' } },
      refusals: { 403: ['constraint_violation'], 404: [entity.notFound], 409: ['in_use'] },
    }),
  } satisfies Record<string, QuotaOperation>;
}

const resourceFields = { name: name(), description: description(), unit: unit() };

export const CATALOGUE_OPERATIONS = {
  resource: crud(
    RESOURCE,
    ResourceOut,
    body({
      ...resourceFields,
      name: name().required(),
      description: description().default(''),
      unit: unit().default('units'),
    }).id('ResourceCreate'),
    body(resourceFields).min(1).id('ResourcePatch'),
    'A resource is what is counted; consume items name it by `name`. `unit` (default "units") is for people reading usage.',
  ),
  policy: crud(
    POLICY,
    PolicyOut,
    POLICY_CREATE,
    POLICY_PATCH,
    'Fields by kind: quota takes limit_amount and window_kind (fixed and rolling: window_unit, window_size default 1; fixed: tz, default UTC); rate_limit takes bucket_capacity and refill_rate_per_sec. A field of the other kind is 422. resource_id must name a resource of the tenant (422 reference_not_found).',
  ),
  plan: {
    ...crud(
      PLAN,
      PlanOut,
      body({
        name: name().required(),
        description: description().default(''),
        policy_ids: Joi.array().items(id()).unique().max(100).default([]),
      }).id('PlanCreate'),
      body({ name: name().allow(null), description: description().allow(null) }).id('PlanPatch'),
      'policy_ids must name policies of the tenant (422 reference_not_found at the first that does not); a plan may hold several policies of one resource (a rate limit and a monthly quota).',
    ),
    putPolicies: operation({
      tags: ['catalogue'],
      method: 'put',
      path: '/v1/plans/{plan_id}/policies',
      operationId: 'putPlanPolicies',
      summary: "Replace a plan's policies",
      description: 'The plan holds exactly these policies afterwards, in this order.',
      access: 'catalog:write',
      request: {
        params: idParams(PLAN),
        body: body({ policy_ids: Joi.array().items(id()).unique().max(100).required() }).id(
          'PlanPoliciesPut',
        ),
      },
      responses: { '200': { description: 'the plan', schema: PlanOut } },
      refusals: { 403: ['constraint_violation'], 404: ['plan_not_found'] },
    }),
  },
} as const;

type Handlers = {
  list: (deps: QuotaRouteDeps, p: ReturnType<typeof principalOf>) => Promise<unknown>;
  create: (
    deps: QuotaRouteDeps,
    p: ReturnType<typeof principalOf>,
    body: never,
  ) => Promise<unknown>;
  get: (deps: QuotaRouteDeps, p: ReturnType<typeof principalOf>, id: string) => Promise<unknown>;
  patch: (
    deps: QuotaRouteDeps,
    p: ReturnType<typeof principalOf>,
    id: string,
    body: never,
  ) => Promise<unknown>;
  delete: (deps: QuotaRouteDeps, p: ReturnType<typeof principalOf>, id: string) => Promise<void>;
};

function mountCrud(
  router: Router,
  deps: QuotaRouteDeps,
  entity: Entity,
  ops: ReturnType<typeof crud>,
  handlers: Handlers,
): void {
  const idOf = (ctx: Parameters<Parameters<typeof mountOperation>[3]>[0]) =>
    validated<Record<string, string>>(ctx, 'params')[entity.param]!;
  mountOperation(router, deps, ops.list, async (ctx) => {
    ctx.body = await handlers.list(deps, principalOf(ctx));
  });
  mountOperation(router, deps, ops.create, async (ctx) => {
    ctx.status = 201;
    ctx.body = await handlers.create(deps, principalOf(ctx), validated<never>(ctx, 'body'));
  });
  mountOperation(router, deps, ops.get, async (ctx) => {
    ctx.body = await handlers.get(deps, principalOf(ctx), idOf(ctx));
  });
  mountOperation(router, deps, ops.patch, async (ctx) => {
    ctx.body = await handlers.patch(
      deps,
      principalOf(ctx),
      idOf(ctx),
      validated<never>(ctx, 'body'),
    );
  });
  mountOperation(router, deps, ops.delete, async (ctx) => {
    await handlers.delete(deps, principalOf(ctx), idOf(ctx));
    ctx.status = 204;
  });
}

export function mountCatalogueRoutes(router: Router, deps: QuotaRouteDeps): void {
  const ops = CATALOGUE_OPERATIONS;
  mountCrud(router, deps, RESOURCE, ops.resource, {
    list: listResources,
    create: createResource,
    get: getResource,
    patch: patchResource,
    delete: deleteResource,
  });
  mountCrud(router, deps, POLICY, ops.policy, {
    list: listPolicies,
    create: createPolicy,
    get: getPolicy,
    patch: patchPolicy,
    delete: deletePolicy,
  });
  mountCrud(router, deps, PLAN, ops.plan, {
    list: listPlans,
    create: createPlan,
    get: getPlan,
    patch: patchPlan,
    delete: deletePlan,
  });
  mountOperation(router, deps, ops.plan.putPolicies, async (ctx) => {
    const { plan_id } = validated<{ plan_id: string }>(ctx, 'params');
    const { policy_ids } = validated<{ policy_ids: string[] }>(ctx, 'body');
    ctx.body = await putPlanPolicies(deps, principalOf(ctx), plan_id, policy_ids);
  });
}
