import type Router from '@koa/router';
import type { Context } from 'koa';
import type { PlatformDeps } from '../../../platform/deps';
import type { DeliveryFilter, DeliveryState } from '../../../db/runs/webhooks';
import { RequestValidationError } from '../../../platform/errors';
import { principalOf } from '../auth';
import {
  getDelivery,
  listEndpointDeliveries,
  listRunDeliveries,
  listWorkflowDeliveries,
  recoverEndpoint,
  redeliver,
} from '../../../services/runs/webhooks/deliveries';
import {
  createEndpoint,
  deleteEndpoint,
  getEndpoint,
  listTenantEndpoints,
  patchEndpoint,
  rotateSecret,
  sendTestDelivery,
  type EndpointPatch,
} from '../../../services/runs/webhooks/endpoints';
import { mountOperation, trackIdOf, validated, workflowIdOf, type Starters } from './operation';
import Joi from 'joi';
import { DELIVERY_STATES } from '../../../db/runs/webhooks';
import { boundedText } from '../../../platform/text';
import { jsonSchemaOf } from '../../http/json-schema';
import { runsError } from '../../../services/runs/errors';
import {
  offset,
  pageLimit,
  stateFilter,
  ulidParam,
  utcInstant,
} from '../../../services/runs/schemas';
import { ok, done, runsOperation, type RunsOperation } from './operation';
import {
  NODE_EVENTS,
  NOTICE_EVENTS,
  RUN_EVENTS,
  TEST_EVENT,
  WORKFLOW_EVENTS,
} from '../../../services/runs/webhooks/catalogue';
import { suppliedSecret, webhookEvents, webhookUrl } from '../../../services/runs/webhooks/inline';
import {
  CreatedWebhookEndpoint,
  RotatedWebhookSecret,
  UpdatedWebhookEndpoint,
  WebhookDeliveryDetail,
  WebhookDeliveryList,
  WebhookEndpoint,
  WebhookEndpointList,
  WebhookRecoverAccepted,
  WebhookRedeliveryAccepted,
  WebhookTestAccepted,
} from '../../../services/runs/webhooks/models';

export const WEBHOOK_DESCRIPTION_MAX_LENGTH = 1024;
export const ENDPOINTS_LIST_LIMIT_DEFAULT = 100;
export const ENDPOINTS_LIST_LIMIT_MAX = 1000;
export const DELIVERIES_LIMIT_DEFAULT = 100;
export const DELIVERIES_LIMIT_MAX = 1000;
/** Events one recover call re-sends at most (its `limit`); the next call takes the rest. */
export const RECOVER_LIMIT_MAX = 10_000;

/** The concrete event types a test may carry: every one an event can be, and webhook.test. */
export const TESTABLE_EVENTS = [
  TEST_EVENT,
  ...RUN_EVENTS,
  ...WORKFLOW_EVENTS,
  ...NODE_EVENTS,
  ...NOTICE_EVENTS,
];

const description = () => boundedText(WEBHOOK_DESCRIPTION_MAX_LENGTH).allow('', null);

const EndpointCreateRequest = Joi.object({
  url: webhookUrl().required(),
  events: webhookEvents().required(),
  secret: suppliedSecret().description(
    'Optional: without it a 32-byte secret is generated (64 hex characters, secret_origin generated); with it the key is this string verbatim (secret_origin supplied). Either is answered once.',
  ),
  description: description().default(null),
})
  .required()
  .unknown(false)
  .id('WebhookEndpointCreateRequest');

const EndpointPatchRequest = Joi.object({
  url: webhookUrl(),
  events: webhookEvents().description('Replaces the list.'),
  description: description(),
  active: Joi.boolean().description(
    'true re-enables: disabled_reason null, consecutive_failures 0, and every delivery held while it was disabled, however old, is released and sent in order. false disables (disabled_reason disabled_by_tenant; an endpoint already disabled keeps its reason); its events are then held, never sent and never dropped.',
  ),
  secret: suppliedSecret().description(
    'A supplied secret (secret_origin supplied), answered once in this response. A generated one: POST .../rotate-secret.',
  ),
})
  .min(1)
  .required()
  .unknown(false)
  .id('WebhookEndpointPatchRequest');

const RecoverRequest = Joi.object({
  since: utcInstant()
    .required()
    .description('Events whose first delivery to this endpoint was made at or after this instant.'),
  until: utcInstant().description('And before this one (default: now); after since, else 422.'),
  limit: pageLimit(RECOVER_LIMIT_MAX, RECOVER_LIMIT_MAX).description(
    'Events re-sent by this call at most, the earliest first; `more` says whether others are left.',
  ),
})
  .custom((value: { since: string; until?: string }, helpers) =>
    value.until !== undefined && Date.parse(value.until) <= Date.parse(value.since)
      ? helpers.message({ custom: '"until" must be later than "since"' })
      : value,
  )
  .required()
  .unknown(false)
  .id('WebhookRecoverRequest');

/** The test's body is optional: absent is `{}` (mountWebhookRoutes validates it). */
export const TestRequest = Joi.object({
  event_type: Joi.string()
    .valid(...TESTABLE_EVENTS)
    .default(TEST_EVENT)
    .description(
      'webhook.test, or a concrete event type the endpoint subscribes to (an entry, alias or wildcard of its events matches it), else 422 event_type_not_subscribed.',
    ),
}).unknown(false);

const endpointParams = Joi.object({
  endpoint_id: ulidParam(() => runsError('webhook_not_found')),
});
/** A delivery id in a path; one of any other shape is not found, as an id that is no ULID. */
const deliveryParams = Joi.object({
  delivery_id: Joi.number()
    .integer()
    .min(1)
    .max(Number.MAX_SAFE_INTEGER)
    .required()
    .error(() => runsError('delivery_not_found')),
});
const trackParams = Joi.object({ track_id: ulidParam(() => runsError('run_not_found')) });
const workflowParams = Joi.object({
  workflow_id: ulidParam(() => runsError('workflow_not_found')),
});

const deliveriesQuery = Joi.object({
  state_filter: stateFilter(DELIVERY_STATES),
  since: offset()
    .default(0)
    .description('A delivery_id: only later ones (exclusive); 0 from the first.'),
  limit: pageLimit(DELIVERIES_LIMIT_MAX, DELIVERIES_LIMIT_DEFAULT).description(
    'Ascending order, so the newest are the ones cut off: page forward with since.',
  ),
});

/** What each refusal means for a webhook operation (not a run's wording). */
const WEBHOOK_REFUSALS = {
  '400': 'Malformed JSON, or an unknown query parameter (the detail names the supported set).',
  '403':
    "`permission_denied`: the key lacks the operation's svc_webhook_* permission (run and workflow permissions grant no webhook route).",
  '429': '`rate_limited` (with `Retry-After`).',
  '503': 'A backend is briefly unreachable (Postgres or Redis restarting); with Retry-After.',
} as const;
const SUBSCRIPTION_400 =
  'Malformed JSON; `invalid_webhook_url` (not absolute https, userinfo, or not a parseable url); `unknown_event_type` (an events entry that is no event type, alias, wildcard or notice).';
const ENDPOINT_NOT_FOUND =
  "`webhook_not_found`: no such endpoint, deleted, an inline webhook, or not this tenant's (whatever the id's shape).";
const DELIVERY_NOT_FOUND =
  "`delivery_not_found`: no such delivery, or not this tenant's (whatever the id's shape).";

type WebhookOperation = Omit<RunsOperation, 'permission'>;

const webhookOperation =
  (permission: 'svc_webhook_admin' | 'svc_webhook_read') => (op: WebhookOperation) =>
    runsOperation({ ...op, permission, refusals: { ...WEBHOOK_REFUSALS, ...op.refusals } });
const admin = webhookOperation('svc_webhook_admin');
const read = webhookOperation('svc_webhook_read');

/** The webhook operations of the runs service (the spec's Webhooks table and the two reads). */
export const WEBHOOK_OPERATIONS = {
  // First: their paths would also match /webhooks/{endpoint_id}/... (the spec's own paths are
  // ambiguous for an endpoint id "deliveries", which is no ULID), and routes are mounted in order.
  deliveryGet: read({
    method: 'get',
    path: '/api/v1/webhooks/deliveries/{delivery_id}',
    operationId: 'getWebhookDelivery',
    routeName: 'webhook.delivery.get',
    summary: 'One delivery with its attempts',
    request: { params: deliveryParams },
    responses: { '200': ok(WebhookDeliveryDetail) },
    refusals: { '404': DELIVERY_NOT_FOUND },
  }),
  deliveryRedeliver: admin({
    method: 'post',
    path: '/api/v1/webhooks/deliveries/{delivery_id}/redeliver',
    operationId: 'redeliverWebhookDelivery',
    routeName: 'webhook.delivery.redeliver',
    summary: 'Deliver a finished delivery again, as a new delivery',
    description:
      "A new delivery (its own id, attempts and budget) of the same event (same event_id and body) to the same subscription, redelivery_of the original. Pending, started at once; held instead while the endpoint is disabled (delivered when it is re-enabled). An inline webhook's delivery can be redelivered too.",
    request: { params: deliveryParams },
    responses: { '202': ok(WebhookRedeliveryAccepted, 'Accepted') },
    refusals: {
      '404': DELIVERY_NOT_FOUND,
      '409':
        '`delivery_not_terminal` (the delivery is not delivered, dead or cancelled), or `endpoint_deleted` (its endpoint was deleted).',
    },
  }),
  endpointCreate: admin({
    method: 'post',
    path: '/api/v1/webhooks',
    operationId: 'createWebhookEndpoint',
    routeName: 'webhook.create',
    summary: 'Register a webhook endpoint',
    description:
      "Answers the secret this once. Counted against max_webhook_endpoints (the tenant's endpoints not deleted; inline webhooks are not counted).",
    request: { body: EndpointCreateRequest },
    responses: { '201': ok(CreatedWebhookEndpoint, 'Created') },
    refusals: {
      '400': SUBSCRIPTION_400,
      '422':
        'Schema mismatch (joi message): an unknown field, a url over 2048 characters, no events or over 64, a repeated entry, a secret over 256 characters, ...',
      '429':
        '`webhook_quota_exceeded` (the tenant has max_webhook_endpoints endpoints), or `rate_limited` (with `Retry-After`).',
    },
  }),
  endpointList: read({
    method: 'get',
    path: '/api/v1/webhooks',
    operationId: 'listWebhookEndpoints',
    routeName: 'webhook.list',
    summary: "The tenant's webhook endpoints, oldest first (never a secret)",
    request: {
      query: Joi.object({
        limit: pageLimit(ENDPOINTS_LIST_LIMIT_MAX, ENDPOINTS_LIST_LIMIT_DEFAULT),
        offset: offset().default(0),
      }),
    },
    responses: { '200': ok(WebhookEndpointList) },
  }),
  endpointGet: read({
    method: 'get',
    path: '/api/v1/webhooks/{endpoint_id}',
    operationId: 'getWebhookEndpoint',
    routeName: 'webhook.get',
    summary: 'A webhook endpoint (never its secret)',
    request: { params: endpointParams },
    responses: { '200': ok(WebhookEndpoint) },
    refusals: { '404': ENDPOINT_NOT_FOUND },
  }),
  endpointPatch: admin({
    method: 'patch',
    path: '/api/v1/webhooks/{endpoint_id}',
    operationId: 'updateWebhookEndpoint',
    routeName: 'webhook.update',
    summary: 'Change a webhook endpoint (partial merge)',
    request: { params: endpointParams, body: EndpointPatchRequest },
    responses: { '200': ok(UpdatedWebhookEndpoint) },
    refusals: {
      '400': SUBSCRIPTION_400,
      '404': ENDPOINT_NOT_FOUND,
      '422':
        'Schema mismatch (joi message): an empty body, an unknown field, a field out of its bounds.',
    },
  }),
  endpointDelete: admin({
    method: 'delete',
    path: '/api/v1/webhooks/{endpoint_id}',
    operationId: 'deleteWebhookEndpoint',
    routeName: 'webhook.delete',
    summary: 'Delete a webhook endpoint',
    description:
      'It lists and matches no more, and frees its max_webhook_endpoints slot; its held, pending and retrying deliveries are cancelled (state cancelled); one in flight finds it deleted before its next attempt. Its deliveries stay readable by id.',
    request: { params: endpointParams },
    responses: { '204': done('Deleted') },
    refusals: { '404': ENDPOINT_NOT_FOUND },
  }),
  endpointRotateSecret: admin({
    method: 'post',
    path: '/api/v1/webhooks/{endpoint_id}/rotate-secret',
    operationId: 'rotateWebhookSecret',
    routeName: 'webhook.rotate_secret',
    summary: 'Replace the secret with a generated one, answered once',
    description:
      'Always generated (a supplied-secret endpoint becomes generated). Attempts made from now on are signed with the new secret.',
    request: { params: endpointParams },
    responses: { '200': ok(RotatedWebhookSecret) },
    refusals: { '404': ENDPOINT_NOT_FOUND },
  }),
  endpointTest: admin({
    method: 'post',
    path: '/api/v1/webhooks/{endpoint_id}/test',
    operationId: 'testWebhookEndpoint',
    routeName: 'webhook.test',
    summary: 'Send a test delivery',
    description:
      'A pending delivery of a fresh event (envelope `test: true`, `data: {}`, resource `{type: webhook, id: <endpoint_id>}`), attempted as any delivery.',
    request: { params: endpointParams },
    responses: { '202': ok(WebhookTestAccepted, 'Accepted') },
    refusals: {
      '404': ENDPOINT_NOT_FOUND,
      '409': '`endpoint_disabled`: the endpoint is not active (PATCH active: true first).',
      '422':
        '`event_type_not_subscribed` (the endpoint does not subscribe to that type), or a schema mismatch (joi message: an unknown field, a type that is no concrete event type).',
    },
    extensions: {
      requestBody: {
        required: false,
        content: { 'application/json': { schema: jsonSchemaOf(TestRequest) } },
      },
    },
  }),
  endpointRecover: admin({
    method: 'post',
    path: '/api/v1/webhooks/{endpoint_id}/recover',
    operationId: 'recoverWebhookEndpoint',
    routeName: 'webhook.recover',
    summary: 'Re-send, in order, every event the endpoint never received since a time',
    description:
      "Each event of this endpoint whose first delivery was made in [since, until) and whose every delivery ended dead (none delivered, none held or under way) gets one new delivery: its own id and attempt budget, the same event_id and body, redelivery_of the newest dead one. They are sent in event order, one at a time to the endpoint, as the endpoint's other deliveries; a repeat re-sends nothing already under way or delivered. Test deliveries are not events and are not recovered. Audited as webhook.recover.",
    request: { params: endpointParams, body: RecoverRequest },
    responses: { '202': ok(WebhookRecoverAccepted, 'Accepted') },
    refusals: {
      '404': ENDPOINT_NOT_FOUND,
      '409':
        '`endpoint_disabled`: the endpoint is not active (PATCH active: true, which also releases what was held for it).',
      '422':
        'Schema mismatch (joi message): since missing or not a UTC instant, until not later than since, limit outside 1..10000, an unknown field.',
    },
  }),
  endpointDeliveries: read({
    method: 'get',
    path: '/api/v1/webhooks/{endpoint_id}/deliveries',
    operationId: 'listWebhookEndpointDeliveries',
    routeName: 'webhook.deliveries',
    summary: "An endpoint's deliveries, ascending delivery_id",
    request: { params: endpointParams, query: deliveriesQuery },
    responses: { '200': ok(WebhookDeliveryList) },
    refusals: { '404': ENDPOINT_NOT_FOUND },
  }),
  runDeliveries: read({
    method: 'get',
    path: '/api/v1/runs/{track_id}/deliveries',
    operationId: 'listRunDeliveries',
    routeName: 'run.deliveries',
    summary: "Deliveries of the run's events, ascending delivery_id",
    description: "To the tenant's endpoints and to the run's inline webhook (endpoint_id null).",
    request: { params: trackParams, query: deliveriesQuery },
    responses: { '200': ok(WebhookDeliveryList) },
    refusals: { '404': "`run_not_found`: no such run, or not this tenant's." },
  }),
  workflowDeliveries: read({
    method: 'get',
    path: '/api/v1/workflows/{workflow_id}/deliveries',
    operationId: 'listWorkflowDeliveries',
    routeName: 'workflow.deliveries',
    summary: "Deliveries of the workflow's events, ascending delivery_id",
    description:
      "Its own, its nodes' and their runs' events, to the tenant's endpoints and to inline webhooks (endpoint_id null).",
    request: { params: workflowParams, query: deliveriesQuery },
    responses: { '200': ok(WebhookDeliveryList) },
    refusals: {
      '404':
        "`workflow_not_found`: no such workflow, or not this tenant's (whatever the id's shape).",
    },
  }),
} satisfies Record<string, RunsOperation>;

/**
 * A body a route may go without (its document says `required: false`): absent is `{}`, and what
 * joi refuses is a 422 as for any body.
 */
function optionalBody<T>(ctx: Context, schema: Joi.Schema<T>): T {
  const body = ctx.request.body === undefined ? {} : ctx.request.body;
  const result: Joi.ValidationResult<T> = schema.validate(body, {
    abortEarly: false,
    errors: { wrap: { label: false } },
  });
  if (result.error)
    throw new RequestValidationError(
      result.error.details.map((d) => ({
        location: 'body',
        path: d.path,
        message: d.message,
        type: d.type,
      })),
    );
  return result.value;
}

type DeliveriesQuery = { state_filter?: string; since: number; limit: number };
const deliveryFilterOf = (ctx: Context): DeliveryFilter => {
  const q = validated<DeliveriesQuery>(ctx, 'query');
  return {
    states: q.state_filter ? (q.state_filter.split(',') as DeliveryState[]) : null,
    since: String(q.since),
    limit: q.limit,
  };
};
const tenantOf = (ctx: Context) => principalOf(ctx).tenantId;
const endpointIdOf = (ctx: Context) =>
  validated<{ endpoint_id: string }>(ctx, 'params').endpoint_id;
const deliveryIdOf = (ctx: Context) =>
  String(validated<{ delivery_id: number }>(ctx, 'params').delivery_id);

/** The webhook routes (webhooks/): endpoints, deliveries, and the per-run and per-workflow reads. */
export function mountWebhookRoutes(router: Router, deps: PlatformDeps, starters: Starters): void {
  const ops = WEBHOOK_OPERATIONS;
  const starter = starters.deliveries;
  // The delivery routes first: /webhooks/deliveries/{id} also matches /webhooks/{endpoint_id}/...
  mountOperation(router, ops.deliveryGet, async (ctx) => {
    ctx.body = await getDelivery(deps, tenantOf(ctx), deliveryIdOf(ctx));
  });
  mountOperation(router, ops.deliveryRedeliver, async (ctx) => {
    ctx.status = 202;
    ctx.body = await redeliver(deps, starter, principalOf(ctx), deliveryIdOf(ctx));
  });
  mountOperation(router, ops.endpointCreate, async (ctx) => {
    ctx.status = 201;
    ctx.body = await createEndpoint(deps, principalOf(ctx), validated(ctx, 'body'));
  });
  mountOperation(router, ops.endpointList, async (ctx) => {
    ctx.body = await listTenantEndpoints(deps, tenantOf(ctx), validated(ctx, 'query'));
  });
  mountOperation(router, ops.endpointGet, async (ctx) => {
    ctx.body = await getEndpoint(deps, tenantOf(ctx), endpointIdOf(ctx));
  });
  mountOperation(router, ops.endpointPatch, async (ctx) => {
    const patch = validated<EndpointPatch>(ctx, 'body');
    ctx.body = await patchEndpoint(deps, starter, principalOf(ctx), endpointIdOf(ctx), patch);
  });
  mountOperation(router, ops.endpointDelete, async (ctx) => {
    await deleteEndpoint(deps, principalOf(ctx), endpointIdOf(ctx));
    ctx.status = 204;
  });
  mountOperation(router, ops.endpointRotateSecret, async (ctx) => {
    ctx.body = await rotateSecret(deps, principalOf(ctx), endpointIdOf(ctx));
  });
  mountOperation(router, ops.endpointTest, async (ctx) => {
    const endpointId = endpointIdOf(ctx);
    const { event_type } = optionalBody<{ event_type: string }>(ctx, TestRequest);
    ctx.status = 202;
    ctx.body = await sendTestDelivery(deps, starter, principalOf(ctx), endpointId, event_type);
  });
  mountOperation(router, ops.endpointRecover, async (ctx) => {
    const { since, until, limit } = validated<{ since: string; until?: string; limit: number }>(
      ctx,
      'body',
    );
    const window = { since, until: until ?? new Date().toISOString(), limit };
    ctx.status = 202;
    ctx.body = await recoverEndpoint(deps, starter, principalOf(ctx), endpointIdOf(ctx), window);
  });
  mountDeliveryLists(router, deps);
}

/** The delivery lists: per endpoint, per run, per workflow. */
function mountDeliveryLists(router: Router, deps: PlatformDeps): void {
  const ops = WEBHOOK_OPERATIONS;
  mountOperation(router, ops.endpointDeliveries, async (ctx) => {
    const filter = deliveryFilterOf(ctx);
    ctx.body = await listEndpointDeliveries(deps, tenantOf(ctx), endpointIdOf(ctx), filter);
  });
  mountOperation(router, ops.runDeliveries, async (ctx) => {
    ctx.body = await listRunDeliveries(deps, tenantOf(ctx), trackIdOf(ctx), deliveryFilterOf(ctx));
  });
  mountOperation(router, ops.workflowDeliveries, async (ctx) => {
    const filter = deliveryFilterOf(ctx);
    ctx.body = await listWorkflowDeliveries(deps, tenantOf(ctx), workflowIdOf(ctx), filter);
  });
}
