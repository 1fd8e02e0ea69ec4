import Joi from 'joi';
import { DELIVERY_STATUSES } from '../../db/quota/webhooks';
import { TENANT_SCOPE_NAMES } from '../../services/quota/scopes';

/**
 * The response models of the quota service as joi schemas named for the OpenAPI document's
 * components (contract.ts converts them). Every field is present unless marked optional.
 */
export const model = (name: string, keys: Joi.PartialSchemaMap) =>
  Joi.object(keys).prefs({ presence: 'required' }).id(name);

export const instant = () => Joi.string().isoDate();
const text = () => Joi.string().allow('');

const tenantFields = {
  id: Joi.string(),
  name: Joi.string(),
  status: Joi.string().valid('active', 'suspended'),
  bootstrap: Joi.object({
    state: Joi.string()
      .valid('pending', 'running', 'done', 'failed')
      .description('the initial grants (workflow quota-bootstrap/<tenant id>)'),
    attempts: Joi.number().integer().min(0),
    error: Joi.string().allow(null),
  }),
  created_at: instant(),
  updated_at: instant(),
  suspended_at: instant().allow(null),
};
export const TenantOut = model('TenantOut', tenantFields);

export const KeyConstraintsOut = Joi.object({
  plan_ids: Joi.array().items(Joi.string()).allow(null),
  subject_prefix: Joi.string().allow(null),
  catalog_name_prefix: Joi.string().allow(null),
}).id('KeyConstraints');

const apiKeyFields = {
  id: Joi.string().description('the key row id (paths); never changes'),
  key_id: Joi.string().description("the secret's public half; changes on rotate"),
  name: text(),
  scopes: Joi.array().items(Joi.string().valid(...TENANT_SCOPE_NAMES)),
  actor: Joi.string(),
  status: Joi.string().valid('active', 'revoked'),
  constraints: KeyConstraintsOut.allow(null),
  created_by_actor: Joi.string()
    .allow(null)
    .description('the issuer, when the key was minted for another actor'),
  created_at: instant(),
  last_used_at: instant()
    .allow(null)
    .description('written in batches: at most 10 s behind the last request'),
};
export const ApiKeyOut = model('ApiKeyOut', apiKeyFields);
export const ApiKeyMinted = model('ApiKeyMinted', {
  ...apiKeyFields,
  key: Joi.string().description('the secret: shown here once, never again'),
});

export const TenantCreated = model('TenantCreated', {
  ...tenantFields,
  admin_key: ApiKeyMinted.description("the tenant's first key, with every tenant scope"),
});

export const ResourceOut = model('ResourceOut', {
  id: Joi.string(),
  name: Joi.string(),
  description: text(),
  unit: Joi.string(),
  created_at: instant(),
  updated_at: instant(),
});

const nullableInteger = () => Joi.number().integer().allow(null);
export const PolicyOut = model('PolicyOut', {
  id: Joi.string(),
  name: Joi.string(),
  resource_id: Joi.string(),
  kind: Joi.string().valid('quota', 'rate_limit'),
  limit_amount: nullableInteger(),
  window_kind: Joi.string().valid('fixed', 'rolling', 'lifetime').allow(null),
  window_unit: Joi.string().valid('minute', 'hour', 'day', 'week', 'month').allow(null),
  window_size: nullableInteger(),
  tz: Joi.string().allow(null),
  bucket_capacity: nullableInteger(),
  refill_rate_per_sec: Joi.number().allow(null),
  enforcement_mode: Joi.string().valid('strict', 'fast'),
  on_exceed: Joi.string().valid('block', 'allow_overage'),
  on_backend_error: Joi.string().valid('deny', 'allow').allow(null),
  enabled: Joi.boolean(),
  created_at: instant(),
  updated_at: instant(),
});

export const PlanOut = model('PlanOut', {
  id: Joi.string(),
  name: Joi.string(),
  description: text(),
  policy_ids: Joi.array().items(Joi.string()),
  created_at: instant(),
  updated_at: instant(),
});

export const AssignmentOut = model('AssignmentOut', {
  subject: Joi.string(),
  plan_id: Joi.string(),
  plan_name: Joi.string(),
  created_at: instant(),
});

export const OverrideOut = model('OverrideOut', {
  policy_id: Joi.string(),
  limit_amount_override: Joi.number().integer().allow(null),
  enabled: Joi.boolean(),
});

export const AuditEntry = model('AuditEntry', {
  id: Joi.string(),
  seq: Joi.number().integer().min(1).description('increases with every entry of the service'),
  actor: Joi.string().description("the acting key's actor"),
  action: Joi.string().description(
    '<entity>.<verb>: tenant.create, api_key.rotate, policy.update, ...',
  ),
  entity_type: Joi.string(),
  entity_id: Joi.string().allow(null),
  before: Joi.object().unknown(true).allow(null).optional(),
  after: Joi.object().unknown(true).allow(null).optional(),
  at: instant(),
});

export const AuditPage = model('AuditPage', {
  entries: Joi.array().items(AuditEntry),
  next_cursor: Joi.string().allow(null),
});

export const JobReport = Joi.object({
  job: Joi.string().required(),
  ok: Joi.boolean().required(),
  started_at: instant().required(),
  finished_at: instant().required(),
  trigger: Joi.string().valid('schedule', 'manual'),
})
  .unknown(true)
  .description("a job run; additional properties are the job's own figures (rows deleted, ...)")
  .id('JobReport');

const JobStatus = model('JobStatus', {
  name: Joi.string(),
  description: Joi.string(),
  every_seconds: Joi.number().integer(),
  budget_seconds: Joi.number().integer(),
  last_success_at: instant().allow(null),
  healthy: Joi.boolean(),
});

export const JobList = model('JobList', {
  jobs: Joi.array().items(JobStatus),
  runs: Joi.array().items(JobReport).description('the latest runs, newest first'),
});

export const JobsHealth = model('JobsHealth', {
  healthy: Joi.boolean(),
  jobs: Joi.array().items(JobStatus),
});

const amount = () => Joi.number().integer().description('an exact integer, past 2^53 too');

const WindowOut = model('WindowOut', {
  kind: Joi.string().valid('fixed', 'rolling', 'lifetime'),
  unit: Joi.string().valid('minute', 'hour', 'day', 'week', 'month').allow(null),
  size: Joi.number().integer().allow(null),
  tz: Joi.string().allow(null).description("a fixed window's zone"),
  start: instant().allow(null).description('null for lifetime; a rolling window slides'),
  end: instant().allow(null).description('exclusive; null for lifetime'),
  resets_at: instant().allow(null).description("a fixed window's end; null otherwise"),
});

export const PolicyUsageOut = model('PolicyUsageOut', {
  policy_id: Joi.string(),
  policy_name: Joi.string(),
  resource: Joi.string(),
  kind: Joi.string().valid('quota', 'rate_limit'),
  enforcement_mode: Joi.string().valid('strict', 'fast'),
  source: Joi.string().valid('plan', 'override'),
  allowed: Joi.boolean(),
  requested: amount().min(0).description("this request's amount of the policy's resource"),
  limit: amount().description(
    "a quota's limit or a rate limit's bucket capacity (an override's when set)",
  ),
  used: amount().description(
    'usage in the window after an admitted request (tokens spent for a rate limit)',
  ),
  remaining: amount(),
  overage: amount().min(0).description('how far past the limit allow_overage let this request go'),
  window: WindowOut.allow(null).description('null for a rate limit'),
  retry_after_seconds: Joi.number()
    .integer()
    .allow(null)
    .description('denied: until the window resets or the bucket holds the amount; null when never'),
});

export const ConsumeResponse = model('ConsumeResponse', {
  allowed: Joi.boolean(),
  event_id: Joi.string().description(
    'the ledger event; its entries carry it (a denial writes none)',
  ),
  degraded: Joi.boolean(),
  results: Joi.array().items(PolicyUsageOut),
});

export const CheckResponse = model('CheckResponse', {
  allowed: Joi.boolean(),
  degraded: Joi.boolean(),
  results: Joi.array().items(PolicyUsageOut),
  blocking: PolicyUsageOut.allow(null).description('the first policy that denies, or null'),
});

export const RefundResponse = model('RefundResponse', {
  event_id: Joi.string(),
  degraded: Joi.boolean(),
});

export const LedgerEntry = model('LedgerEntry', {
  id: Joi.string().description('orders the ledger; pages follow it'),
  event_id: Joi.string().description('the consume or commit answer that made it'),
  subject: Joi.string(),
  resource: Joi.string().allow(null),
  amount: amount().description('signed: consume +, refund -'),
  entry_type: Joi.string().valid('consume', 'refund', 'reserve', 'commit', 'release', 'expire'),
  idempotency_key: Joi.string().allow(null),
  reservation_id: Joi.string().allow(null),
  strict_deferred: Joi.boolean().description(
    "written after the answer (the fast path's flush), not in its transaction",
  ),
  metadata: Joi.object().unknown(true).allow(null).optional(),
  occurred_at: instant(),
});

export const LedgerPage = model('LedgerPage', {
  entries: Joi.array().items(LedgerEntry),
  next_cursor: Joi.string().allow(null),
});

export const SummaryRow = model('SummaryRow', {
  granularity: Joi.string().valid('hour', 'day'),
  start: instant().description('a UTC hour or day'),
  end: instant(),
  subject: Joi.string(),
  resource: Joi.string().allow(null),
  consumed: amount().min(0).description('positive entries: consumed (and committed)'),
  refunded: amount().min(0).description('negative entries, as a positive amount'),
  net: amount().description('consumed - refunded'),
  entries: Joi.number().integer().min(0),
});

export const SubjectUsageOut = model('SubjectUsageOut', {
  subject: Joi.string(),
  plan_id: Joi.string().allow(null),
  plan_name: Joi.string().allow(null),
  usage: Joi.array().items(
    model('PolicyUsageNow', {
      policy_id: Joi.string(),
      policy_name: Joi.string(),
      resource: Joi.string(),
      kind: Joi.string().valid('quota', 'rate_limit'),
      enforcement_mode: Joi.string().valid('strict', 'fast'),
      source: Joi.string().valid('plan', 'override'),
      limit: amount(),
      used: amount(),
      remaining: amount(),
      window: WindowOut.allow(null),
    }),
  ),
});

export const EntitlementsOut = model('EntitlementsOut', {
  subject: Joi.string(),
  policies: Joi.array().items(
    model('EffectivePolicyOut', {
      policy_id: Joi.string(),
      name: Joi.string(),
      resource: Joi.string(),
      kind: Joi.string().valid('quota', 'rate_limit'),
      limit_amount: Joi.number().integer().allow(null),
      window_kind: Joi.string().valid('fixed', 'rolling', 'lifetime').allow(null),
      window_unit: Joi.string().valid('minute', 'hour', 'day', 'week', 'month').allow(null),
      window_size: Joi.number().integer().allow(null),
      tz: Joi.string().allow(null),
      bucket_capacity: Joi.number().integer().allow(null),
      refill_rate_per_sec: Joi.number().allow(null),
      enforcement_mode: Joi.string().valid('strict', 'fast'),
      on_exceed: Joi.string().valid('block', 'allow_overage'),
      on_backend_error: Joi.string().valid('deny', 'allow').allow(null),
      source: Joi.string()
        .valid('plan', 'override')
        .description('override: the subject has one for this policy'),
      window: WindowOut.allow(null).description('the current window; null for a rate limit'),
    }),
  ),
});

export const ReserveResponse = model('ReserveResponse', {
  allowed: Joi.boolean(),
  reservation_id: Joi.string().allow(null).description('null when denied (nothing held)'),
  status: Joi.string().valid('held').allow(null),
  expires_at: instant().allow(null),
  event_id: Joi.string(),
  degraded: Joi.boolean(),
  results: Joi.array().items(PolicyUsageOut),
});

const ReservedItem = model('ReservedItem', { resource: Joi.string(), amount: amount().min(1) });
const AdjustmentOut = model('AdjustmentOut', {
  resource: Joi.string(),
  held: amount(),
  actual: amount(),
  delta: amount().description('actual - held: what the commit added to (or gave back from) usage'),
  overage: amount().min(0).description("how far the commit's extra went past a limit"),
});

export const ReservationOut = model('ReservationOut', {
  reservation_id: Joi.string(),
  subject: Joi.string(),
  status: Joi.string().valid('held', 'committed', 'released', 'expired'),
  items: Joi.array().items(ReservedItem),
  expires_at: instant(),
  event_id: Joi.string().description('the reserve event'),
  settle_event_id: Joi.string().allow(null).description('the commit, release or expire event'),
  adjustments: Joi.array().items(AdjustmentOut).allow(null),
  created_at: instant(),
  settled_at: instant().allow(null),
});

export const CommitResponse = model('CommitResponse', {
  reservation_id: Joi.string(),
  status: Joi.string().valid('committed'),
  event_id: Joi.string(),
  degraded: Joi.boolean(),
  adjustments: Joi.array().items(AdjustmentOut),
});

export const ReleaseResponse = model('ReleaseResponse', {
  reservation_id: Joi.string(),
  status: Joi.string().valid('released'),
  event_id: Joi.string().allow(null).description('the release event'),
  released: Joi.array().items(ReservedItem),
});

const webhookEndpointFields = {
  id: Joi.string(),
  url: Joi.string().description('https; private and loopback targets are refused at send'),
  description: text(),
  event_types: Joi.array().items(Joi.string()).description('what it receives (alert.triggered)'),
  enabled: Joi.boolean().description('false: nothing is delivered to it'),
  created_at: instant(),
  updated_at: instant(),
};
export const WebhookEndpointOut = model('WebhookEndpointOut', webhookEndpointFields);
export const WebhookEndpointCreated = model('WebhookEndpointCreated', {
  ...webhookEndpointFields,
  secret: Joi.string().description(
    'The Standard Webhooks signing secret (whsec_<base64>), shown in this answer only',
  ),
});
export const WebhookTestResult = model('WebhookTestResult', {
  delivery_id: Joi.string().description('the test delivery, listed by GET /v1/webhook-deliveries'),
  delivered: Joi.boolean().description('the receiver answered 2xx'),
  status_code: Joi.number().integer().allow(null).description("the receiver's HTTP status"),
  latency_ms: Joi.number().integer().min(0).description('from the DNS lookup to the answer read'),
  error: Joi.string().allow(null).description('why it was not delivered'),
});
export const DeliveryOut = model('DeliveryOut', {
  id: Joi.string(),
  endpoint_id: Joi.string(),
  alert_event_id: Joi.string().allow(null),
  event_type: Joi.string(),
  attempt_count: Joi.number().integer().min(0),
  status: Joi.string()
    .valid(...DELIVERY_STATUSES)
    .description(
      'pending (not yet attempted), delivering (an attempt in flight), retrying (waiting for next_attempt_at), delivered, dead (every attempt failed, or a refusal no retry mends), cancelled (its endpoint was deleted)',
    ),
  last_status_code: Joi.number().integer().allow(null),
  last_error: Joi.string().allow(null),
  next_attempt_at: instant().allow(null),
  created_at: instant(),
});

export const AlertChannels = Joi.object({
  webhooks: Joi.array().items(Joi.string()).description('webhook endpoint ids'),
  emails: Joi.array().items(Joi.string()).description('e-mail addresses'),
})
  .prefs({ presence: 'required' })
  .id('AlertChannels');
export const AlertRuleOut = model('AlertRuleOut', {
  id: Joi.string(),
  name: Joi.string(),
  policy_id: Joi.string().allow(null),
  resource_id: Joi.string().allow(null),
  subject_filter: Joi.string().allow(null),
  threshold_pct: Joi.number().integer(),
  channels: AlertChannels,
  cooldown_seconds: Joi.number().integer(),
  enabled: Joi.boolean(),
  created_at: instant(),
});
export const AlertEventOut = model('AlertEventOut', {
  id: Joi.string(),
  rule_id: Joi.string(),
  subject: Joi.string(),
  policy_id: Joi.string(),
  window_id: Joi.string().description("the window's counter key (lifetime, or its start)"),
  threshold_pct: Joi.number().integer(),
  usage_pct: Joi.number().description('usage × 100 / limit when it crossed, 2 decimals'),
  suppressed: Joi.boolean().description("within the rule's cooldown: recorded, not notified"),
  triggered_at: instant(),
});
