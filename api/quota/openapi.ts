import { OPENAPI_LICENSE, openApiPaths, type JsonSchema } from '../http/contract';
import { QUOTA_OPERATIONS } from './routes';
import { OPERATOR_SCOPES, TENANT_SCOPES } from '../../services/quota/scopes';
import { CODEC_SESSION_COOKIE } from './routes/temporal-codec';

/**
 * The quota service's OpenAPI 3.1 document: its paths, parameters, request bodies and models are
 * generated from the operations (api/quota/routes/), the joi schemas its routes validate with.
 * Decisions where the spec says "not shown" are in `x-decisions` and the operations' text.
 */
function buildDocument(): JsonSchema {
  const schemas: JsonSchema = {};
  const paths = openApiPaths(Object.values(QUOTA_OPERATIONS), schemas);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Quota management service (quota)',
      version: '0.1.0',
      license: OPENAPI_LICENSE,
      description:
        'Multi-tenant quotas and rate limits: tenants and keys, a catalogue of resources, policies and plans, subjects, consumption and reservations, reporting and audit.',
    },
    servers: [{ url: '/' }],
    'x-decisions': {
      credentials:
        "Authorization: Bearer qk_<key id>_<secret>. Secrets are stored as SHA-256 hashes. A key's credential is cached in Redis and rewritten by every change of the key or its tenant, so a revoked, rotated or tightened key, or a suspended tenant, takes effect from the next request on every process.",
      scopes: { ...TENANT_SCOPES, ...OPERATOR_SCOPES },
      operator_keys:
        'Keys without a tenant hold the operator scopes (tenants:admin, ops:admin) and only those; they are made with scripts/quota-admin. A tenant key on an operator route is 403 operator_key_required, an operator key on a tenant route 403 tenant_key_required.',
      error_envelope:
        '422: {detail: [{loc, msg, type}]} (FastAPI\'s ValidationError; a body that is not JSON too, type json_invalid). Any other refusal: {detail: "<code>"}, a code listed in each response\'s description.',
      access_control:
        "Grants are relation tuples (tenant:<id>#<scope>@key:<key row id>) in an embedded store behind services/quota/authz.ts. A new tenant's first key is granted by the workflow quota-bootstrap/<tenant id> (resumable, idempotent; re-run by POST /v1/tenants/{id}/bootstrap-authz); keys minted later are granted in the transaction that mints them.",
      audit:
        "Every admin change (tenants, keys, catalogue, assignments, overrides) writes an audit entry in its own transaction: actor (the acting key's actor), action, entity, before and after, seq increasing. The table refuses UPDATE, DELETE and TRUNCATE in the database itself.",
    },
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'qk_<key id>_<secret>' },
        [CODEC_SESSION_COOKIE]: {
          type: 'apiKey',
          in: 'cookie',
          name: CODEC_SESSION_COOKIE,
          description: 'an operator key, set by PUT /v1/ops/temporal-codec/session for a browser',
        },
      },
      schemas,
    },
    paths,
  };
}

export const openApiDocument = buildDocument();
