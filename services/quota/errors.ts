import {
  RequestValidationError,
  errorFactory,
  PLATFORM_ERRORS,
  PRIVATE_NETWORK_ONLY,
  type ErrorCatalogue,
  type ErrorDefinition,
} from '../../platform/errors';

const refusal = (status: number, description: string, retryable = false): ErrorDefinition => ({
  status,
  message: description,
  retryable,
  description,
});

/**
 * The quota service's error codes. The envelope's `detail` is the code itself (lower case, as
 * FastAPI services answer), so a client branches on it; a 422 is the spec's list of
 * ValidationError items instead. The OpenAPI document and /llms.txt list these with their
 * descriptions.
 */
export const QUOTA_ERRORS = {
  ...PLATFORM_ERRORS,
  // The platform's own refusals, filed under the quota service's spelling (envelope.ts).
  MALFORMED_JSON: refusal(422, 'the body is not JSON'),
  INVALID_JSON_DEPTH: refusal(422, 'the body nests deeper than 64 levels'),
  // The platform's refusal of /metrics to a caller outside loopback and the private networks.
  forbidden: PRIVATE_NETWORK_ONLY,
  unauthorized: refusal(401, 'no key, an unknown key, a wrong secret or a revoked key'),
  insufficient_scope: refusal(
    403,
    'the key lacks the scope the route needs (WWW-Authenticate names it)',
  ),
  constraint_violation: refusal(
    403,
    "outside the key's constraints: a subject outside subject_prefix, a plan outside plan_ids, a catalogue name outside catalog_name_prefix",
  ),
  scope_escalation: refusal(
    403,
    'a key may mint or grant only scopes and constraints it holds itself',
  ),
  tenant_suspended: refusal(403, "the key's tenant is suspended"),
  operator_key_required: refusal(403, 'an operator route called with a tenant key'),
  tenant_key_required: refusal(403, 'a tenant route called with an operator key'),
  not_found: refusal(404, "no such id in the caller's tenant (another tenant's ids are not found)"),
  tenant_not_found: refusal(404, 'no such tenant'),
  key_not_found: refusal(404, 'no such key in the tenant'),
  resource_not_found: refusal(404, 'no such resource in the tenant'),
  policy_not_found: refusal(404, 'no such policy in the tenant'),
  plan_not_found: refusal(404, 'no such plan in the tenant'),
  assignment_not_found: refusal(404, 'the subject has no plan'),
  job_not_found: refusal(404, 'no background job of that name'),
  name_taken: refusal(409, 'another record of the tenant has that name'),
  in_use: refusal(
    409,
    'still referenced: a resource by a policy or an alert rule, a policy by a plan or an alert rule, a plan by an assignment, a webhook endpoint by an alert rule',
  ),
  idempotency_key_reused: refusal(
    409,
    'the idempotency key was used with another request body (a replay must send the same body)',
  ),
  reservation_not_found: refusal(404, 'no such reservation in the tenant'),
  webhook_endpoint_not_found: refusal(404, 'no such webhook endpoint in the tenant'),
  alert_rule_not_found: refusal(404, 'no such alert rule in the tenant'),
  reservation_expired: refusal(
    409,
    'the reservation passed its expires_at before it was settled: its hold is released',
  ),
  reservation_settled: refusal(409, 'the reservation is already committed or released'),
  key_revoked: refusal(409, 'the key is revoked: it can be neither rotated nor patched'),
  decision_contended: refusal(
    503,
    "the request could not be decided: the catalogue it was judged by changed under 3 reads in a row, or the subject's fast-mode state under 100 decisions; retry (with the same idempotency_key)",
    true,
  ),
  tenant_bootstrap_pending: refusal(
    503,
    "the tenant's initial grants are being written (quota-bootstrap workflow); retry",
    true,
  ),
} as const satisfies ErrorCatalogue;

export type QuotaErrorCode = keyof typeof QUOTA_ERRORS;
export const quotaError = errorFactory<QuotaErrorCode>(QUOTA_ERRORS);

export interface FieldRefusal {
  path: (string | number)[];
  message: string;
  type: string;
}

/** A 422 at body fields that only the service can judge (an id the tenant lacks, ...). */
export const bodyRefusal = (refusals: FieldRefusal[]) =>
  new RequestValidationError(refusals.map((refusal) => ({ location: 'body', ...refusal })));

/** A body field naming an id the tenant does not have. */
export const referenceNotFound = (path: (string | number)[], what: string) =>
  bodyRefusal([
    { path, message: `no ${what} with this id in the tenant`, type: 'reference_not_found' },
  ]);
