import type Router from '@koa/router';
import Joi from 'joi';
import { boundedText } from '../../../platform/text';
import {
  isWebhookUrl,
  WEBHOOK_URL_MAX_LENGTH,
  WEBHOOK_URL_PATTERN,
} from '../../../platform/webhooks/url';
import { listTenantAlertEvents } from '../../../services/quota/alerts/events';
import {
  createAlertRule,
  getAlertRule,
  listTenantAlertRules,
  patchAlertRule,
  removeAlertRule,
} from '../../../services/quota/alerts/rules';
import {
  AlertEventOut,
  AlertRuleOut,
  DeliveryOut,
  WebhookEndpointCreated,
  WebhookEndpointOut,
  WebhookTestResult,
} from '../models';
import { body, description, id, listLimit, name, subject } from '../../../services/quota/schemas';
import {
  createEndpoint,
  getEndpoint,
  listTenantDeliveries,
  listTenantEndpoints,
  patchEndpoint,
  QUOTA_EVENT_TYPES,
  removeEndpoint,
  testEndpoint,
} from '../../../services/quota/webhooks';
import {
  mountOperation,
  operation,
  principalOf,
  validated,
  type QuotaRouteDeps,
} from './operation';

/** The spec's bounds of an alert rule, and ours where it is silent. */
export const ALERT_LIMITS = {
  thresholdPctMax: 1000,
  cooldownSecondsMax: 604_800,
  emailsMax: 10,
  /** Ours: a rule notifies at most this many endpoints. */
  webhooksMax: 20,
  emailChars: 254,
} as const;

const thresholdPct = () => Joi.number().integer().min(1).max(ALERT_LIMITS.thresholdPctMax);
const cooldownSeconds = () => Joi.number().integer().min(0).max(ALERT_LIMITS.cooldownSecondsMax);
const channels = () =>
  Joi.object({
    webhooks: Joi.array()
      .items(id())
      .max(ALERT_LIMITS.webhooksMax)
      .unique()
      .default([])
      .description('ids of the tenant’s webhook endpoints (422 reference_not_found otherwise)'),
    emails: Joi.array()
      .items(Joi.string().max(ALERT_LIMITS.emailChars).email({ tlds: false }))
      .max(ALERT_LIMITS.emailsMax)
      .unique()
      .default([])
      .description(
        'addresses mailed each unsuppressed event of the rule (plain text, one mail per address, through the SMTP server the deployment configures)',
      ),
  })
    .required()
    .id('AlertChannelsIn');

const AlertRuleCreate = body({
  name: name().required(),
  policy_id: id().allow(null).default(null).description('one policy; null: every policy'),
  resource_id: id()
    .allow(null)
    .default(null)
    .description("the resource's policies; null: any resource"),
  subject_filter: subject()
    .allow(null)
    .default(null)
    .description(
      'a subject, exactly; ending in * a prefix (acme:* matches acme:1); null: every subject',
    ),
  threshold_pct: thresholdPct().required().description("percent of the window's limit"),
  channels: channels(),
  cooldown_seconds: cooldownSeconds()
    .default(0)
    .description('after an event, crossings within this many seconds are recorded suppressed'),
  enabled: Joi.boolean().default(true),
}).id('AlertRuleCreate');

const AlertRulePatch = body({
  name: name().allow(null),
  threshold_pct: thresholdPct().allow(null),
  channels: channels().optional().allow(null),
  cooldown_seconds: cooldownSeconds().allow(null),
  enabled: Joi.boolean().allow(null),
}).id('AlertRulePatch');

const webhookUrl = () =>
  boundedText(WEBHOOK_URL_MAX_LENGTH)
    .custom((value: string, helpers) =>
      isWebhookUrl(value)
        ? value
        : helpers.message({ custom: '{{#label}} must be an absolute https url without userinfo' }),
    )
    .meta({ 'x-schema': { pattern: WEBHOOK_URL_PATTERN } });
const eventTypes = () =>
  Joi.array()
    .items(Joi.string().valid(...QUOTA_EVENT_TYPES))
    .min(1)
    .unique();

const WebhookEndpointCreate = body({
  url: webhookUrl().required(),
  description: description().default(''),
  event_types: eventTypes().default([...QUOTA_EVENT_TYPES]),
  enabled: Joi.boolean().default(true),
}).id('WebhookEndpointCreate');

const WebhookEndpointPatch = body({
  url: webhookUrl().allow(null),
  description: description().allow(null),
  event_types: eventTypes().allow(null),
  enabled: Joi.boolean().allow(null),
}).id('WebhookEndpointPatch');

const ruleParams = Joi.object({ rule_id: id().required() });
const endpointParams = Joi.object({ endpoint_id: id().required() });
const alertTags = { tags: ['alerts'] };
const webhookTags = { tags: ['webhooks'] };

export const ALERT_OPERATIONS = {
  listRules: operation({
    ...alertTags,
    method: 'get',
    path: '/v1/alert-rules',
    operationId: 'listAlertRules',
    summary: "The tenant's alert rules, oldest first",
    access: 'alerts:read',
    responses: { '200': { description: 'the rules', schema: Joi.array().items(AlertRuleOut) } },
  }),
  createRule: operation({
    ...alertTags,
    method: 'post',
    path: '/v1/alert-rules',
    operationId: 'createAlertRule',
    summary: 'Create an alert rule',
    description:
      "policy_id, resource_id and channels.webhooks must name the tenant's own (422 reference_not_found at the field); a policy_id not on resource_id is 422 policy_resource_mismatch.",
    access: 'alerts:write',
    request: { body: AlertRuleCreate },
    responses: { '201': { description: 'created', schema: AlertRuleOut } },
  }),
  getRule: operation({
    ...alertTags,
    method: 'get',
    path: '/v1/alert-rules/{rule_id}',
    operationId: 'getAlertRule',
    summary: 'An alert rule',
    access: 'alerts:read',
    request: { params: ruleParams },
    responses: { '200': { description: 'the rule', schema: AlertRuleOut } },
    refusals: { 404: ['alert_rule_not_found'] },
  }),
  patchRule: operation({
    ...alertTags,
    method: 'patch',
    path: '/v1/alert-rules/{rule_id}',
    operationId: 'patchAlertRule',
    summary: 'Change an alert rule (null or absent leaves a field as it is)',
    access: 'alerts:write',
    request: { params: ruleParams, body: AlertRulePatch },
    responses: { '200': { description: 'the rule', schema: AlertRuleOut } },
    refusals: { 404: ['alert_rule_not_found'] },
  }),
  deleteRule: operation({
    ...alertTags,
    method: 'delete',
    path: '/v1/alert-rules/{rule_id}',
    operationId: 'deleteAlertRule',
    summary: 'Delete an alert rule (its events are kept)',
    access: 'alerts:write',
    request: { params: ruleParams },
    responses: { '204': { description: 'deleted' } },
    refusals: { 404: ['alert_rule_not_found'] },
  }),
  listEvents: operation({
    ...alertTags,
    method: 'get',
    path: '/v1/alert-events',
    operationId: 'listAlertEvents',
    summary: 'Alert events, newest first',
    description:
      "One per (rule, subject, policy, window) whose usage crossed the rule's threshold_pct of the window's limit with an admitted consume (usage_pct: the usage then, 2 decimals, rounded down); suppressed when it came within the rule's cooldown of the subject's last unsuppressed event. A strict decision records it in its transaction, a fast one with its ledger entries (visible after the ledger flush, at most about 10 s later). Rule changes apply to this process at once and to others within 5 s.",
    access: 'alerts:read',
    request: {
      query: Joi.object({ subject: subject().description('one subject’s'), limit: listLimit() }),
    },
    responses: {
      '200': { description: 'the events', schema: Joi.array().items(AlertEventOut) },
    },
  }),
  listEndpoints: operation({
    ...webhookTags,
    method: 'get',
    path: '/v1/webhook-endpoints',
    operationId: 'listWebhookEndpoints',
    summary: "The tenant's webhook endpoints, oldest first (never their secrets)",
    access: 'webhooks:read',
    responses: {
      '200': { description: 'the endpoints', schema: Joi.array().items(WebhookEndpointOut) },
    },
  }),
  createEndpoint: operation({
    ...webhookTags,
    method: 'post',
    path: '/v1/webhook-endpoints',
    operationId: 'createWebhookEndpoint',
    summary: 'Create a webhook endpoint (its signing secret is in this answer only)',
    description:
      'Messages are signed by the Standard Webhooks scheme (headers webhook-id, webhook-timestamp, webhook-signature) with the secret answered here, whsec_<base64 of 32 bytes>.',
    access: 'webhooks:write',
    request: { body: WebhookEndpointCreate },
    responses: { '201': { description: 'created', schema: WebhookEndpointCreated } },
  }),
  getEndpoint: operation({
    ...webhookTags,
    method: 'get',
    path: '/v1/webhook-endpoints/{endpoint_id}',
    operationId: 'getWebhookEndpoint',
    summary: 'A webhook endpoint (never its secret)',
    access: 'webhooks:read',
    request: { params: endpointParams },
    responses: { '200': { description: 'the endpoint', schema: WebhookEndpointOut } },
    refusals: { 404: ['webhook_endpoint_not_found'] },
  }),
  patchEndpoint: operation({
    ...webhookTags,
    method: 'patch',
    path: '/v1/webhook-endpoints/{endpoint_id}',
    operationId: 'patchWebhookEndpoint',
    summary: 'Change a webhook endpoint (null or absent leaves a field as it is)',
    access: 'webhooks:write',
    request: { params: endpointParams, body: WebhookEndpointPatch },
    responses: { '200': { description: 'the endpoint', schema: WebhookEndpointOut } },
    refusals: { 404: ['webhook_endpoint_not_found'] },
  }),
  deleteEndpoint: operation({
    ...webhookTags,
    method: 'delete',
    path: '/v1/webhook-endpoints/{endpoint_id}',
    operationId: 'deleteWebhookEndpoint',
    summary: 'Delete a webhook endpoint; its unfinished deliveries are cancelled',
    description: 'An endpoint an alert rule names is 409 in_use: change the rule first.',
    access: 'webhooks:write',
    request: { params: endpointParams },
    responses: { '204': { description: 'deleted' } },
    refusals: { 404: ['webhook_endpoint_not_found'], 409: ['in_use'] },
  }),
  testEndpoint: operation({
    ...webhookTags,
    method: 'post',
    path: '/v1/webhook-endpoints/{endpoint_id}/test',
    operationId: 'testWebhookEndpoint',
    summary: 'Send a signed webhook.test now and answer what the receiver did',
    description:
      'One attempt, in this request, of {type: webhook.test, timestamp, data: {endpoint_id, tenant_id}}, signed as every message; recorded as a delivery (delivered or dead). A disabled endpoint is tested too.',
    access: 'webhooks:write',
    request: { params: endpointParams },
    responses: { '200': { description: 'the attempt', schema: WebhookTestResult } },
    refusals: { 404: ['webhook_endpoint_not_found'] },
  }),
  listDeliveries: operation({
    ...webhookTags,
    method: 'get',
    path: '/v1/webhook-deliveries',
    operationId: 'listWebhookDeliveries',
    summary: "The tenant's webhook deliveries, newest first",
    access: 'webhooks:read',
    request: {
      query: Joi.object({
        endpoint_id: id().description("one endpoint's (a deleted one's too)"),
        limit: listLimit(),
      }),
    },
    responses: { '200': { description: 'deliveries', schema: Joi.array().items(DeliveryOut) } },
  }),
} as const;

type RuleId = { rule_id: string };
type EndpointId = { endpoint_id: string };

export function mountAlertRoutes(router: Router, deps: QuotaRouteDeps): void {
  const ops = ALERT_OPERATIONS;
  const ruleIdOf = (ctx: Parameters<Parameters<typeof mountOperation>[3]>[0]) =>
    validated<RuleId>(ctx, 'params').rule_id;
  const endpointIdOf = (ctx: Parameters<Parameters<typeof mountOperation>[3]>[0]) =>
    validated<EndpointId>(ctx, 'params').endpoint_id;
  mountOperation(router, deps, ops.listEvents, async (ctx) => {
    const q = validated<{ subject?: string; limit: number }>(ctx, 'query');
    ctx.body = await listTenantAlertEvents(deps, principalOf(ctx), {
      subject: q.subject ?? null,
      limit: q.limit,
    });
  });
  mountOperation(router, deps, ops.listRules, async (ctx) => {
    ctx.body = await listTenantAlertRules(deps, principalOf(ctx));
  });
  mountOperation(router, deps, ops.createRule, async (ctx) => {
    ctx.status = 201;
    ctx.body = await createAlertRule(deps, principalOf(ctx), validated(ctx, 'body'));
  });
  mountOperation(router, deps, ops.getRule, async (ctx) => {
    ctx.body = await getAlertRule(deps, principalOf(ctx), ruleIdOf(ctx));
  });
  mountOperation(router, deps, ops.patchRule, async (ctx) => {
    ctx.body = await patchAlertRule(deps, principalOf(ctx), ruleIdOf(ctx), validated(ctx, 'body'));
  });
  mountOperation(router, deps, ops.deleteRule, async (ctx) => {
    await removeAlertRule(deps, principalOf(ctx), ruleIdOf(ctx));
    ctx.status = 204;
  });
  mountOperation(router, deps, ops.listEndpoints, async (ctx) => {
    ctx.body = await listTenantEndpoints(deps, principalOf(ctx));
  });
  mountOperation(router, deps, ops.createEndpoint, async (ctx) => {
    ctx.status = 201;
    ctx.body = await createEndpoint(deps, principalOf(ctx), validated(ctx, 'body'));
  });
  mountOperation(router, deps, ops.getEndpoint, async (ctx) => {
    ctx.body = await getEndpoint(deps, principalOf(ctx), endpointIdOf(ctx));
  });
  mountOperation(router, deps, ops.patchEndpoint, async (ctx) => {
    const patch = validated<Parameters<typeof patchEndpoint>[3]>(ctx, 'body');
    ctx.body = await patchEndpoint(deps, principalOf(ctx), endpointIdOf(ctx), patch);
  });
  mountOperation(router, deps, ops.deleteEndpoint, async (ctx) => {
    await removeEndpoint(deps, principalOf(ctx), endpointIdOf(ctx));
    ctx.status = 204;
  });
  mountOperation(router, deps, ops.testEndpoint, async (ctx) => {
    ctx.body = await testEndpoint(deps, principalOf(ctx), endpointIdOf(ctx));
  });
  mountOperation(router, deps, ops.listDeliveries, async (ctx) => {
    const q = validated<{ endpoint_id?: string; limit: number }>(ctx, 'query');
    ctx.body = await listTenantDeliveries(deps, principalOf(ctx), {
      endpointId: q.endpoint_id ?? null,
      limit: q.limit,
    });
  });
}
