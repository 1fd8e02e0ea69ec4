import type { ErrorDefinition } from '../../platform/errors';
import { QUOTA_ERRORS } from '../../services/quota/errors';
import { mcpGuide } from './mcp';
import { OPERATOR_SCOPES, TENANT_SCOPES } from '../../services/quota/scopes';

const lines = (entries: [string, string][]) => entries.map(([k, v]) => `- ${k}: ${v}`).join('\n');

const errorCodes = () =>
  lines(
    Object.entries(QUOTA_ERRORS as Record<string, ErrorDefinition>)
      .filter(([, d]) => d.status !== 422)
      .map(([code, d]) => [
        `${d.status} ${code.toLowerCase()}`,
        `${d.description ?? d.message}${d.retryable ? ' (retry)' : ''}`,
      ]),
  );

/** /llms.txt: what an agent needs to call the quota service well, in one page. */
export const LLMS_TXT = `# Quota management service

Multi-tenant quotas and rate limits. Full contract: /openapi.json (every bound and code).

## Auth
Send \`Authorization: Bearer qk_<key id>_<secret>\`. A key has scopes (what it may do) and
constraints (subject_prefix, plan_ids, catalog_name_prefix: whom and what it may touch).
An operator key (no tenant) administers tenants; a tenant key does everything else.

## Scopes
${lines(Object.entries({ ...TENANT_SCOPES, ...OPERATOR_SCOPES }))}

## Errors
422: {"detail": [{"loc": [...], "msg": "...", "type": "..."}]}: fix the request, do not retry.
Otherwise {"detail": "<code>"}:
${errorCodes()}

## Decisions
POST /v1/consume decides every item and every policy together: all admitted or nothing
consumed. A denial is 200 with allowed: false and retry_after_seconds per policy; /v1/check
answers the same without consuming. Send an idempotency_key and reuse it on every retry: a
replay answers the first decision and consumes nothing more. Neither enforcement mode
(strict: Postgres; fast: Redis) over-admits. degraded: true means Redis was out of reach and
each fast policy's on_backend_error (default allow) decided.

## Webhooks and alerts
POST /v1/webhook-endpoints {url (https), event_types?, description?, enabled?} answers the
endpoint with its signing secret (whsec_..., shown once). Every message is JSON
{type, timestamp, data}, signed by the Standard Webhooks scheme: verify webhook-signature over
"<webhook-id>.<webhook-timestamp>.<raw body>" with any standardwebhooks library, and dedupe on
webhook-id. POST /v1/webhook-endpoints/{id}/test sends a webhook.test now and answers the
receiver's status and latency. Alert rules (/v1/alert-rules) name a threshold_pct of a policy
window's limit and the channels to notify (endpoint ids, at most 10 e-mail addresses). A window
crosses a rule once (consume, reserve, or a commit past its hold); GET /v1/alert-events lists the
events (suppressed: true within the rule's cooldown: recorded, not notified). Each notified event
is an alert.triggered message ({type, timestamp, data: the event, alert_event_id, rule_name}) to
the rule's endpoints and a plain-text mail to each address. GET /v1/webhook-deliveries shows each
delivery's status (pending, delivering, retrying, delivered, dead, cancelled) and attempts.

## Python SDK
pip install ./sdk/python (in this repository), then:
  from quota_client import Client
  with Client(api_key=KEY, base_url=URL) as quota:
      decision = quota.consume("user-1", {"tokens": 100})
      with quota.reservation("user-1", {"tokens": 500}) as held:
          held.actuals["tokens"] = 320   # committed on exit; released on an exception
A method per operation (operationId in snake_case), AsyncClient alike, typed models, errors as
QuotaError subclasses carrying detail; 429/503 retried with the same idempotency_key.

${mcpGuide()}

## Retry rule
Retry only 503 and 429, after Retry-After seconds (else 1 s, doubling, at most 5 tries). Never
retry 4xx other than 429: the same request gets the same answer.
`;
