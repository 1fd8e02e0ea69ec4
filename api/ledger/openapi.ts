/**
 * The ledger's OpenAPI 3.1 contract, served at /openapi.json. Its paths, parameters and request
 * bodies are generated from the operations (routes/<area>.ts, collected in routes/index.ts), the
 * joi schemas its routes validate with, and so are its response models (the joi models of
 * models.ts the operations answer with). Decisions where the spec says "not shown" are written
 * into the descriptions (and services/ledger/README.md).
 */
import { OPENAPI_LICENSE, openApiPaths, type JsonSchema } from '../http/contract';
import { LEDGER_OPERATIONS } from './routes';
import { LIMITS } from '../../services/ledger/validation';

const idempotencyHeader = {
  name: 'Idempotency-Key',
  in: 'header',
  required: true,
  description:
    'Required on every mutating request (1 to 255 chars), scoped per tenant and endpoint (method + route). A replay with the same body returns the original status and body with header Idempotent-Replayed: true; a different body is 422 IDEMPOTENCY_KEY_MISMATCH; a concurrent duplicate is 409 IDEMPOTENCY_IN_FLIGHT with Retry-After while the first request holds the key (a posting usually holds it only inside its own database transaction, so a duplicate that arrives meanwhile waits the few milliseconds until it commits and gets its replay). Final refusals (4xx without Retry-After) are remembered too; transient ones (5xx, 429, 409 with Retry-After) are not, so a retry runs again. Records are kept (no expiry).',
  schema: { type: 'string', minLength: 1, maxLength: LIMITS.idempotencyKeyCharsMax },
};

function buildDocument(): JsonSchema {
  const operations = Object.values(LEDGER_OPERATIONS);
  const schemas: JsonSchema = {};
  const paths = openApiPaths(operations, schemas);
  // The Idempotency-Key header is checked by the route's guard (authorizedOnce in
  // routes/operation.ts), not by joi: stated here.
  for (const op of operations) {
    if (!op.idempotency) continue;
    const documented = paths[op.path]![op.method] as JsonSchema;
    documented.parameters = [...((documented.parameters as unknown[]) ?? []), idempotencyHeader];
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Ledger API',
      version: '1.0.0',
      description:
        'Double-entry ledger: asset types, accounts, posted and pending transactions (holds that expire), balances now and as of an instant, entries, sub-tenants and keys. Money is decimal strings at the asset scale; `_minor` fields are integer minor units as strings; never JSON numbers. Ids are UUIDv7. Errors: `{error: {code, message, details?}}`; branch on code. Retry rule: any 503 and any 409 carrying Retry-After is transient (retry with the same Idempotency-Key); 422 is final. Compatibility: additive changes only within /v1; removals come as /v2.',
      license: OPENAPI_LICENSE,
    },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    tags: [{ name: 'ledger', description: 'the double-entry ledger of one tenant' }],
    paths,
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description:
            'lk_<key id>_<secret>, issued by an operator (scripts/ledger-admin) or a partner key',
        },
      },
      schemas,
    },
  };
}

export const openApiDocument = buildDocument();
