import Joi from 'joi';
import type { HttpMethod, OperationContract, ResponseContract } from '../platform/http/contract';
import type { RequestSchemas } from '../platform/http/validate';
import type { LedgerRole } from '../../db/ledger/tenants';
import { ENTRY_STATES } from './accounts';
import { ASSET_KINDS, IMMUTABLE_ASSET_FIELDS } from './asset-types';
import {
  Account,
  AccountList,
  AssetType,
  AssetTypeList,
  Balance,
  BalanceAsOf,
  EntryList,
  ErrorBody,
  Health,
  Key,
  KeyIssued,
  KeyList,
  SubTenant,
  SubTenantList,
  Transaction,
  TransactionCreated,
  TransactionSettled,
  Unhealthy,
} from './models';
import { parseInstantWithOffset } from '../../platform/instant';
import type { LedgerErrorCode } from './errors';
import { HOLD_DURATION_MAX_MS } from './transactions';
import {
  bodySchema,
  isReport,
  floor,
  idParams,
  instantWithOffset,
  metadata,
  PAGE_KEYS,
  PAGE_QUERY,
  pathId,
  querySchema,
  text,
  type Refusal,
  uuidString,
} from './schemas';
import { SUB_TENANT_KEY_ROLES } from './sub-tenants';
import { invalid, isUuid, LIMITS } from './validation';

/**
 * Every operation of the ledger: what its route validates (joi) and what its OpenAPI document
 * says, from one declaration. routes.ts and app.ts mount them behind the ledger's guards;
 * openapi.ts builds the document from them.
 */
export interface LedgerOperation extends OperationContract {
  /** The role the route requires; null: anyone (probes, the document, the guide). */
  role: LedgerRole | null;
  /** Needs an Idempotency-Key; the endpoint its keys are scoped to (`POST /v1/accounts`). */
  idempotency?: { endpoint: string };
}

const errorResponse = (description: string): ResponseContract => ({
  description,
  schema: ErrorBody,
});
const json = (description: string, model: Joi.ObjectSchema): ResponseContract => ({
  description,
  schema: model,
});
const COMMON_ERRORS = {
  '401': errorResponse('UNAUTHENTICATED or CREDENTIAL_EXPIRED'),
  '403': errorResponse(
    'FORBIDDEN (role), TENANT_SUSPENDED, TENANT_NOT_PROVISIONED, TENANT_CONTEXT_MISMATCH',
  ),
  '413': errorResponse('PAYLOAD_TOO_LARGE: over 64 KiB at the edge or 1 MiB at the application'),
  '422': errorResponse('validation failures; see the code (final: do not retry)'),
  '429': errorResponse(
    'RATE_LIMITED (edge, per source address) or QUOTA_EXCEEDED (monthly calls of the root tenant); Retry-After',
  ),
  '500': errorResponse('INTERNAL_ERROR with a constant message'),
  '503': errorResponse(
    "AUTHZ_UNAVAILABLE (key store unreachable), AUTHZ_CREDENTIAL_REJECTED (the database refuses the service's own credential; /healthz says rejected), STATEMENT_TIMEOUT or SERVICE_UNAVAILABLE (the database or Redis briefly out of reach, e.g. restarting); Retry-After; transient, retry with the same Idempotency-Key",
  ),
};
const MUTATING_ERRORS = {
  '400': errorResponse('MISSING_IDEMPOTENCY_KEY'),
  '409': errorResponse("IDEMPOTENCY_IN_FLIGHT (Retry-After), and the operation's own conflicts"),
};

interface Declaration {
  method: HttpMethod;
  path: string;
  summary: string;
  role: LedgerRole | null;
  /** The Idempotency-Key scope's path, when it is not the OpenAPI path (kept as keys were scoped). */
  mutating?: { keyPath?: string };
  request?: RequestSchemas;
  ok: [string, string, Joi.ObjectSchema?];
  errors?: Record<string, string>;
  description?: string;
  /** In place of the generated responses (probes). */
  responses?: Record<string, ResponseContract>;
}

/** `Create asset type` → `createAssetType` */
const operationIdOf = (summary: string) =>
  summary
    .replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))
    .replace(/^./, (c) => c.toLowerCase());

function operation(op: Declaration): LedgerOperation {
  const [status, description, model] = op.ok;
  const responses: Record<string, ResponseContract> = {
    [status]: model ? json(description, model) : { description },
    ...COMMON_ERRORS,
    ...(op.mutating ? MUTATING_ERRORS : {}),
  };
  for (const [code, text] of Object.entries(op.errors ?? {})) responses[code] = errorResponse(text);
  return {
    method: op.method,
    path: op.path,
    operationId: operationIdOf(op.summary),
    summary: op.summary,
    description: `${op.description ?? ''}${op.role ? `\n\nRole: ${op.role}.` : ''}`.trim(),
    role: op.role,
    ...(op.mutating
      ? {
          idempotency: {
            endpoint: `${op.method.toUpperCase()} ${op.mutating.keyPath ?? op.path}`,
          },
        }
      : {}),
    ...(op.request ? { request: op.request } : {}),
    responses: op.responses ?? responses,
    ...(op.role ? {} : { extensions: { security: [] } }),
  };
}

const accountParams = idParams('account_id', "account id (another tenant's id answers 404)");
const transactionParams = idParams('transaction_id', 'transaction id');
const subTenantParams = idParams('sub_tenant_id', 'sub-tenant id');

// ---------------------------------------------------------------- request bodies

export const ASSET_TYPE_CREATE = bodySchema({
  code: Joi.string()
    .min(1)
    .max(LIMITS.assetCodeCharsMax)
    .pattern(/^[A-Za-z0-9._:-]+$/)
    .required()
    .description('unique per tenant; immutable'),
  kind: Joi.string()
    .valid(...ASSET_KINDS)
    .required()
    .description(
      'fiat, credit or inventory (a commodity or crypto-asset held as stock is inventory); else 422 INVALID_ASSET_TYPE',
    )
    .error(() =>
      invalid(
        'INVALID_ASSET_TYPE',
        `kind must be one of ${ASSET_KINDS.join(', ')}; a commodity or crypto-asset held as stock is inventory`,
      ),
    ),
  scale: Joi.number()
    .integer()
    .strict()
    .min(0)
    .max(LIMITS.scaleMax)
    .required()
    .description('decimal places; immutable'),
  description: text('description', LIMITS.descriptionCharsMax, 'INVALID_DESCRIPTION').allow(null),
}).id('AssetTypeCreate');

export const ASSET_TYPE_PATCH = bodySchema(
  {
    status: Joi.string().valid('active', 'superseded'),
    description: text('description', LIMITS.descriptionCharsMax, 'INVALID_DESCRIPTION').allow(null),
  },
  {
    // Naming an immutable field is its own refusal, of all those named (in this order).
    claims: (key) => IMMUTABLE_ASSET_FIELDS.includes(key),
    refuse: (keys) => {
      const fields = IMMUTABLE_ASSET_FIELDS.filter((f) => keys.includes(f));
      return invalid('IMMUTABLE_FIELD', `${fields.join(', ')} cannot change`, { fields });
    },
  },
)
  .min(1)
  .description('status and/or description only; naming code, kind or scale is 422 IMMUTABLE_FIELD')
  .id('AssetTypePatch');

const accountName = () => text('name', LIMITS.nameCharsMax, 'INVALID_ACCOUNT');

export const ACCOUNT_CREATE = bodySchema({
  asset_type_id: uuidString()
    .required()
    .description(
      'an asset type of this tenant; unknown is 422 REFERENCE_NOT_FOUND, superseded is 409 ASSET_TYPE_SUPERSEDED',
    ),
  name: accountName(),
  normal_side: Joi.string()
    .valid('debit', 'credit')
    .required()
    .description('the direction that increases the balance'),
  balance_floor: floor(
    'omitted = 0 (may not go below zero); null = unbounded (opt-in); a decimal string at the asset scale (may be negative: an overdraft line) or a JSON integer of minor units (safe range). Async accounts cannot have one (omit it or send null).',
  ),
  balance_tracking: Joi.string()
    .valid('sync', 'async')
    .description(
      'sync (default: locked and exact) or async (advanced by a rollup about every second; no floor)',
    ),
  metadata: metadata(),
})
  .meta({
    // An async account has no floor: 422 INVALID_FLOOR otherwise (accounts.ts).
    'x-schema': {
      if: { properties: { balance_tracking: { const: 'async' } }, required: ['balance_tracking'] },
      then: { properties: { balance_floor: { type: 'null' } } },
    },
  })
  .id('AccountCreate');

export const ACCOUNT_PATCH = bodySchema({
  name: accountName(),
  metadata: metadata(),
  status: Joi.string().valid('active', 'frozen', 'closed'),
  balance_floor: floor(),
})
  .min(1)
  .description(
    'Closing needs a zero balance and no holds (409 CLOSE_REQUIRES_ZERO_BALANCE). Closed is final: any status or floor change of a closed account is 409 ACCOUNT_NOT_ACTIVE. Raising a floor above the current available balance is 422 INVALID_FLOOR.',
  )
  .id('AccountPatch');

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
/** A name of blanks only is no name (422 INVALID_TENANT): some character other than whitespace. */
const SUB_TENANT_NAME_SCHEMA = {
  description: 'at least one character that is not whitespace',
  minLength: 1,
  pattern: '^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$',
};
const subTenantName = (blank: string, required: boolean) =>
  text('name', LIMITS.nameCharsMax, 'INVALID_TENANT', { blank, required }).meta({
    'x-schema': SUB_TENANT_NAME_SCHEMA,
  });
const unknownFields = (code: 'INVALID_TENANT' | 'INVALID_KEY') => ({
  refuse: (keys: string[]) => invalid(code, `unknown fields: ${keys.join(', ')}`),
});

export const SUB_TENANT_CREATE = bodySchema(
  {
    name: subTenantName('name is required', true),
    kind: Joi.string()
      .valid('production', 'sandbox')
      .required()
      .description('immutable')
      .error(() => invalid('INVALID_TENANT', 'kind must be production or sandbox')),
    contact_email: text('contact_email', LIMITS.contactEmailCharsMax, 'INVALID_TENANT', {
      required: true,
      check: { test: (v) => EMAIL.test(v), message: 'contact_email must be an email address' },
    }).meta({ 'x-schema': { format: 'email' } }),
  },
  unknownFields('INVALID_TENANT'),
).id('SubTenantCreate');

export const SUB_TENANT_PATCH = bodySchema(
  {
    name: subTenantName('name cannot be empty', false),
    status: Joi.string()
      .valid('active', 'suspended')
      .error(() => invalid('INVALID_TENANT', 'status must be active or suspended')),
  },
  {
    // kind is the sub-tenant's immutable field: its own refusal, before any unknown field's.
    refuse: (keys) =>
      keys.includes('kind')
        ? invalid('IMMUTABLE_FIELD', 'kind cannot change', { fields: ['kind'] })
        : invalid('INVALID_TENANT', `unknown fields: ${keys.join(', ')}`),
  },
).id('SubTenantPatch');

export const KEY_CREATE = bodySchema(
  {
    label: text('label', LIMITS.labelCharsMax, 'INVALID_KEY').allow(null),
    role: Joi.string()
      .valid(...SUB_TENANT_KEY_ROLES)
      .required()
      .description('a client key cannot be a partner key (depth is capped at one)')
      .error(() =>
        invalid('INVALID_KEY', `role must be one of ${SUB_TENANT_KEY_ROLES.join(', ')}`),
      ),
    ttl_days: Joi.number()
      .integer()
      .strict()
      .min(1)
      .max(LIMITS.ttlDaysMax)
      .allow(null)
      .description('omitted or null = no expiry; past it 401 CREDENTIAL_EXPIRED')
      .error(() =>
        invalid('INVALID_KEY', `ttl_days must be an integer from 1 to ${LIMITS.ttlDaysMax}`),
      ),
  },
  unknownFields('INVALID_KEY'),
).id('KeyCreate');

/** `entries[1]` of a report's path (['entries', 1, ...]). */
const entryOf = (errors: Joi.ErrorReport[]) => `entries[${String(errors[0]?.path[1])}]`;
const entryField = (field: string, code: LedgerErrorCode, message: string) =>
  function refuse(errors: Joi.ErrorReport[]) {
    return invalid(code, `${entryOf(errors)}.${field} ${message}`);
  };

const ENTRY_INPUT = Joi.object({
  account_id: uuidString()
    .custom((value: string, helpers) =>
      isUuid(value) ? value.toLowerCase() : helpers.error('string.guid'),
    )
    .required()
    .error(entryField('account_id', 'INVALID_ACCOUNT_ID', 'must be a UUID')),
  direction: Joi.string()
    .valid('debit', 'credit')
    .required()
    .error(entryField('direction', 'INVALID_REQUEST', 'must be debit or credit')),
  amount: Joi.string()
    .allow('')
    .required()
    .meta({
      'x-schema': {
        description: 'greater than zero, at most the asset scale in decimals',
        pattern: '^-?\\d+(\\.\\d+)?$',
      },
    })
    .error(entryField('amount', 'INVALID_AMOUNT', 'must be a decimal string')),
})
  .id('EntryInput')
  .error((errors) => {
    const reports = (errors as Refusal[]).filter(isReport);
    const base = reports.find((r) => r.code === 'object.base');
    if (base) return invalid('INVALID_REQUEST', `${entryOf([base])} must be an object`);
    const unknown = reports.filter((r) => r.code === 'object.unknown').map((r) => r.path[2]);
    if (unknown.length > 0)
      return invalid(
        'INVALID_REQUEST',
        `${entryOf(reports)} has unknown fields: ${unknown.join(', ')}`,
      );
    return (errors as Refusal[]).find((e) => e instanceof Error) as Error;
  });

const instantMessage = (field: string) =>
  `${field} must be an ISO-8601 instant with an explicit UTC offset or Z`;
const EXPIRES_AT_MESSAGES: Record<string, string> = {
  'expires.not_pending': 'expires_at is only for pending transactions',
  'expires.past': 'expires_at must be in the future',
  'expires.far': 'expires_at is more than 366 days away',
};

export const TRANSACTION_CREATE = bodySchema(
  {
    pending: Joi.boolean()
      .strict()
      .description(
        'true places a hold on the contra side only; it is committed, voided, or expires',
      )
      .error(() => invalid('INVALID_REQUEST', 'pending must be a boolean')),
    // A hold's: required when pending, refused when not (stated for the document on the object).
    expires_at: Joi.any()
      .when('pending', { is: true, then: Joi.required() })
      .custom((value: unknown, helpers) => {
        const parent = (helpers.state.ancestors as unknown[])[0] as { pending?: unknown };
        if (parent.pending !== true) return helpers.error('expires.not_pending');
        const ms = parseInstantWithOffset(value);
        if (ms === null) return helpers.error('expires.format');
        const now = Date.now();
        if (ms <= now) return helpers.error('expires.past');
        if (ms - now > HOLD_DURATION_MAX_MS) return helpers.error('expires.far');
        return ms;
      })
      .meta({
        'x-schema': {
          $replace: true,
          type: 'string',
          format: 'date-time',
          description:
            'required when pending; explicit UTC offset or Z; in the future; at most 366 days ahead; precision kept to the millisecond',
        },
      })
      .error((errors) => {
        const reason = errors[0]?.code ?? '';
        return invalid(
          'INVALID_EXPIRES_AT',
          EXPIRES_AT_MESSAGES[reason] ?? instantMessage('expires_at'),
        );
      }),
    effective_at: instantWithOffset(
      () => invalid('INVALID_EFFECTIVE_AT', instantMessage('effective_at')),
      'explicit UTC offset or Z; defaults to posting time; may be in the past (backdated)',
    ),
    description: text('description', LIMITS.descriptionCharsMax, 'INVALID_DESCRIPTION').allow(null),
    external_id: text('external_id', LIMITS.externalIdCharsMax, 'INVALID_EXTERNAL_ID')
      .allow(null)
      .description(
        'unique per tenant: a repeat under another Idempotency-Key is 409 DUPLICATE_TRANSACTION',
      ),
    metadata: metadata(),
    entries: Joi.array()
      .min(LIMITS.entriesMin)
      .max(LIMITS.entriesMax)
      .items(ENTRY_INPUT)
      .required()
      .description(
        `${LIMITS.entriesMin} to ${LIMITS.entriesMax}, else 422 ENTRY_COUNT_OUT_OF_RANGE`,
      )
      .error((errors) => {
        const refusals = errors as Refusal[];
        const reports = refusals.filter(isReport);
        const count = reports.find((r) => r.code === 'array.min' || r.code === 'array.max');
        if (reports.some((r) => r.code === 'array.base' || r.code === 'any.required'))
          return invalid('INVALID_REQUEST', 'entries must be an array', [
            {
              field: 'entries',
              location: 'body',
              message: 'entries must be an array',
              type: 'array.base',
            },
          ]);
        if (count)
          return invalid(
            'ENTRY_COUNT_OUT_OF_RANGE',
            `a transaction has ${LIMITS.entriesMin} to ${LIMITS.entriesMax} entries; got ${(count.value as unknown[]).length}`,
          );
        return refusals.find((e) => e instanceof Error) as Error;
      }),
  },
  {
    refuse: (keys) =>
      invalid(
        'INVALID_REQUEST',
        `unknown fields: ${keys.join(', ')}`,
        keys.map((k) => ({
          field: k,
          location: 'body',
          message: `"${k}" is not allowed`,
          type: 'object.unknown',
        })),
      ),
  },
)
  .meta({
    // expires_at belongs to a hold: required when pending, refused (422 INVALID_EXPIRES_AT) when not.
    'x-schema': {
      if: { properties: { pending: { const: true } }, required: ['pending'] },
      then: { properties: { expires_at: { type: 'string' } }, required: ['expires_at'] },
      else: { not: { properties: { expires_at: { type: 'string' } }, required: ['expires_at'] } },
    },
  })
  .id('TransactionCreate');

// ---------------------------------------------------------------- queries

const ENTRIES_QUERY = querySchema({
  ...PAGE_KEYS,
  state: Joi.string()
    .valid(...ENTRY_STATES)
    .description('only legs of transactions in this state; without it every leg is listed')
    .error(() => invalid('INVALID_STATE', `state must be one of ${ENTRY_STATES.join(', ')}`)),
});

const BALANCE_AS_OF_QUERY = querySchema({
  at: instantWithOffset(
    () =>
      invalid(
        'INVALID_AS_OF',
        'at must be an ISO-8601 instant with an explicit UTC offset or Z (encode + as %2B in a query string)',
      ),
    'instant with explicit offset or Z; encode + as %2B (a bare + decodes to a space: 422 INVALID_AS_OF)',
  ).required(),
  basis: Joi.string()
    .valid('effective', 'recorded')
    .default('effective')
    .description(
      'effective (effective_at, default) or recorded (finalized_at). Only committed transactions count; holds never, voided and expired never.',
    )
    .error(() => invalid('INVALID_AS_OF', 'basis must be effective or recorded')),
});

// ---------------------------------------------------------------- operations

const probes = {
  health: operation({
    method: 'get',
    path: '/healthz',
    summary: 'Health',
    role: null,
    ok: ['200', "up; auth_client_credential reports the key store (the ledger's own database)"],
    description:
      "auth_client_credential says whether the key store (the ledger's own database, reached with the service's own database credential) accepts that credential: ok (200); rejected (503, every keyed request gets 503 AUTHZ_CREDENTIAL_REJECTED); unknown (503 when the database is unreachable, 200 before the first check). Never rate limited; makes no network call of its own (reads what a background monitor last saw, every second). Also answers HEAD.",
    responses: {
      '200': json('up (auth_client_credential ok), or not yet checked (unknown)', Health),
      '405': errorResponse('METHOD_NOT_ALLOWED (GET and HEAD only)'),
      '503': json(
        "the database refuses the service's own credential (auth_client_credential rejected) or is unreachable (unknown)",
        Unhealthy,
      ),
    },
  }),
  openapi: operation({
    method: 'get',
    path: '/openapi.json',
    summary: 'OpenAPI document',
    role: null,
    ok: ['200', 'this document'],
    responses: {
      '200': { description: 'this document', schema: { type: 'object' } },
      '429': errorResponse('RATE_LIMITED'),
    },
  }),
  metrics: operation({
    method: 'get',
    path: '/metrics',
    summary: 'Prometheus metrics; private networks only',
    role: null,
    ok: ['200', 'Prometheus text'],
    description:
      'For operators: request durations by route and status, and ledger_postings_total{path, outcome} (path one_statement: a key seen before in the process, posted with its check and claim in one statement; general: key lookup and claim first).',
    responses: {
      '200': {
        description: 'Prometheus text',
        content: { 'text/plain': { schema: { type: 'string' } } },
      },
      '403': errorResponse('FORBIDDEN: not a private network address'),
      '429': errorResponse('RATE_LIMITED'),
    },
  }),
  llms: operation({
    method: 'get',
    path: '/llms.txt',
    summary: 'Agent guide',
    role: null,
    ok: ['200', 'a concise text guide'],
    responses: {
      '200': {
        description: 'a concise text guide',
        content: { 'text/plain': { schema: { type: 'string' } } },
      },
      '429': errorResponse('RATE_LIMITED'),
    },
  }),
};
export const PROBE_OPERATIONS = probes;

export const LEDGER_OPERATIONS = {
  createAssetType: operation({
    method: 'post',
    path: '/v1/asset-types',
    summary: 'Create asset type',
    role: 'ledger_admin',
    mutating: {},
    request: { body: ASSET_TYPE_CREATE },
    ok: ['201', 'created', AssetType],
    description: 'A duplicate code is 422 CONSTRAINT_VIOLATION.',
  }),
  listAssetTypes: operation({
    method: 'get',
    path: '/v1/asset-types',
    summary: 'List asset types',
    role: 'ledger_reader',
    ok: ['200', 'all asset types, unpaginated, newest first', AssetTypeList],
  }),
  patchAssetType: operation({
    method: 'patch',
    path: '/v1/asset-types/{asset_type_id}',
    summary: 'Update asset type',
    role: 'ledger_admin',
    mutating: { keyPath: '/v1/asset-types/{id}' },
    request: { params: idParams('asset_type_id', 'asset type id'), body: ASSET_TYPE_PATCH },
    ok: ['200', 'the asset type', AssetType],
    errors: { '404': 'ASSET_TYPE_NOT_FOUND' },
  }),
  createAccount: operation({
    method: 'post',
    path: '/v1/accounts',
    summary: 'Create account',
    role: 'ledger_admin',
    mutating: {},
    request: { body: ACCOUNT_CREATE },
    ok: ['201', 'created (the full account record)', Account],
    errors: { '409': 'ASSET_TYPE_SUPERSEDED; IDEMPOTENCY_IN_FLIGHT' },
  }),
  listAccounts: operation({
    method: 'get',
    path: '/v1/accounts',
    summary: 'List accounts',
    role: 'ledger_reader',
    request: { query: PAGE_QUERY },
    ok: ['200', 'newest first, keyset paginated', AccountList],
  }),
  getAccount: operation({
    method: 'get',
    path: '/v1/accounts/{account_id}',
    summary: 'Get account',
    role: 'ledger_reader',
    request: { params: accountParams },
    ok: ['200', 'the account', Account],
    errors: { '404': 'ACCOUNT_NOT_FOUND' },
  }),
  patchAccount: operation({
    method: 'patch',
    path: '/v1/accounts/{account_id}',
    summary: 'Update account',
    role: 'ledger_admin',
    mutating: { keyPath: '/v1/accounts/{id}' },
    request: { params: accountParams, body: ACCOUNT_PATCH },
    ok: ['200', 'the account', Account],
    errors: {
      '404': 'ACCOUNT_NOT_FOUND',
      '409': 'CLOSE_REQUIRES_ZERO_BALANCE, ACCOUNT_NOT_ACTIVE (closed is final), LOCK_TIMEOUT',
    },
  }),
  getBalance: operation({
    method: 'get',
    path: '/v1/accounts/{account_id}/balance',
    summary: 'Get balance',
    role: 'ledger_reader',
    request: { params: accountParams },
    ok: ['200', 'current balance', Balance],
    errors: { '404': 'ACCOUNT_NOT_FOUND' },
  }),
  getBalanceAsOf: operation({
    method: 'get',
    path: '/v1/accounts/{account_id}/balance-as-of',
    summary: 'Get balance as of',
    role: 'ledger_reader',
    request: { params: accountParams, query: BALANCE_AS_OF_QUERY },
    ok: ['200', 'derived from the journal', BalanceAsOf],
    errors: { '404': 'ACCOUNT_NOT_FOUND' },
  }),
  listEntries: operation({
    method: 'get',
    path: '/v1/accounts/{account_id}/entries',
    summary: 'List entries',
    role: 'ledger_reader',
    request: { params: accountParams, query: ENTRIES_QUERY },
    ok: ['200', 'statement lines, newest first', EntryList],
    errors: { '404': 'ACCOUNT_NOT_FOUND' },
  }),
  postTransaction: operation({
    method: 'post',
    path: '/v1/transactions',
    summary: 'Post transaction',
    role: 'ledger_poster',
    mutating: {},
    request: { body: TRANSACTION_CREATE },
    ok: ['201', 'posted (committed) or held (pending)', TransactionCreated],
    description:
      "One database transaction: sync accounts are locked in account_id order; debits equal credits per asset (also checked by a deferred database constraint at COMMIT); each sync account's floor is tested once on the net of the whole transaction, only when the transaction lowers its available balance. Unknown accounts are 422 REFERENCE_NOT_FOUND. A hold starts a Temporal workflow ledger-hold/<transaction_id> that expires it at expires_at. There is no listing of transactions (GET here is 405).",
    errors: {
      '409':
        'ACCOUNT_NOT_ACTIVE (frozen: Retry-After; closed: final), DUPLICATE_TRANSACTION, LOCK_TIMEOUT, IDEMPOTENCY_IN_FLIGHT, POSTING_FROZEN (an operator froze posting for the tenant, its parent, or the asset type: details.scope is tenant or asset_type with asset_type_id; Retry-After as the operator set it; retry with the same Idempotency-Key)',
    },
  }),
  getTransaction: operation({
    method: 'get',
    path: '/v1/transactions/{transaction_id}',
    summary: 'Get transaction',
    role: 'ledger_reader',
    request: { params: transactionParams },
    ok: ['200', 'the transaction with its entries', Transaction],
    errors: { '404': 'TRANSACTION_NOT_FOUND' },
  }),
  commitTransaction: operation({
    method: 'post',
    path: '/v1/transactions/{transaction_id}/commit',
    summary: 'Commit hold',
    role: 'ledger_poster',
    mutating: { keyPath: '/v1/transactions/{id}/commit' },
    request: { params: transactionParams },
    ok: ['200', 'committed, atomically with the hold release', TransactionSettled],
    description:
      'A hold is never committed after its expires_at: past it the hold is expired in the same database transaction and the answer is 410 HOLD_EXPIRED, whether or not the expiry workflow has run.',
    errors: {
      '404': 'TRANSACTION_NOT_FOUND',
      '409':
        'INVALID_TRANSACTION_STATE (final), ACCOUNT_NOT_ACTIVE (frozen: Retry-After), POSTING_FROZEN (posting frozen by the operator: Retry-After; a void still goes through)',
      '410': 'HOLD_EXPIRED',
    },
  }),
  voidTransaction: operation({
    method: 'post',
    path: '/v1/transactions/{transaction_id}/void',
    summary: 'Void hold',
    role: 'ledger_poster',
    mutating: { keyPath: '/v1/transactions/{id}/void' },
    request: { params: transactionParams },
    ok: ['200', 'voided; the hold is released (allowed on frozen accounts)', TransactionSettled],
    errors: { '404': 'TRANSACTION_NOT_FOUND', '409': 'INVALID_TRANSACTION_STATE' },
  }),
  createSubTenant: operation({
    method: 'post',
    path: '/v1/sub-tenants',
    summary: 'Create sub-tenant',
    role: 'ledger_partner',
    mutating: {},
    request: { body: SUB_TENANT_CREATE },
    ok: ['201', 'created', SubTenant],
    description:
      'Only a root tenant may have sub-tenants (depth one): otherwise 422 INVALID_TENANT. Malformed fields are 422 INVALID_TENANT.',
  }),
  listSubTenants: operation({
    method: 'get',
    path: '/v1/sub-tenants',
    summary: 'List sub-tenants',
    role: 'ledger_partner',
    request: { query: PAGE_QUERY },
    ok: ['200', 'newest first', SubTenantList],
  }),
  patchSubTenant: operation({
    method: 'patch',
    path: '/v1/sub-tenants/{sub_tenant_id}',
    summary: 'Update sub-tenant',
    role: 'ledger_partner',
    mutating: { keyPath: '/v1/sub-tenants/{id}' },
    request: { params: subTenantParams, body: SUB_TENANT_PATCH },
    ok: ['200', 'the sub-tenant', SubTenant],
    errors: { '404': 'SUB_TENANT_NOT_FOUND' },
    description:
      'Suspending it makes its keys answer 403 TENANT_SUSPENDED; reactivating restores access on the next request. kind is immutable (422 IMMUTABLE_FIELD).',
  }),
  issueSubTenantKey: operation({
    method: 'post',
    path: '/v1/sub-tenants/{sub_tenant_id}/keys',
    summary: 'Issue sub-tenant key',
    role: 'ledger_partner',
    mutating: { keyPath: '/v1/sub-tenants/{id}/keys' },
    request: { params: subTenantParams, body: KEY_CREATE },
    ok: ['201', 'the key with its secret, shown once', KeyIssued],
    errors: { '404': 'SUB_TENANT_NOT_FOUND' },
  }),
  listSubTenantKeys: operation({
    method: 'get',
    path: '/v1/sub-tenants/{sub_tenant_id}/keys',
    summary: 'List sub-tenant keys',
    role: 'ledger_partner',
    request: { params: subTenantParams, query: PAGE_QUERY },
    ok: ['200', 'newest first, without secrets', KeyList],
    errors: { '404': 'SUB_TENANT_NOT_FOUND' },
  }),
  revokeSubTenantKey: operation({
    method: 'delete',
    path: '/v1/sub-tenants/{sub_tenant_id}/keys/{key_id}',
    summary: 'Revoke sub-tenant key',
    role: 'ledger_partner',
    mutating: { keyPath: '/v1/sub-tenants/{id}/keys/{key_id}' },
    request: {
      params: Joi.object({
        sub_tenant_id: pathId('sub-tenant id').required(),
        key_id: pathId('key id').required(),
      }),
    },
    ok: ['200', 'the revoked key (idempotent: the first revocation time is kept)', Key],
    errors: {
      '404': 'SUB_TENANT_NOT_FOUND, KEY_NOT_FOUND',
      '502':
        "REVOCATION_FAILED: the database refused the revocation (the key's row locked past the 2 s lock budget, the statement budget, any other refusal); nothing changed and the key still works. The Idempotency-Key is released, so a retry with it runs again",
    },
  }),
};

/** Every operation of the ledger, the probes first (the document's order). */
export const ALL_LEDGER_OPERATIONS: readonly LedgerOperation[] = [
  ...Object.values(PROBE_OPERATIONS),
  ...Object.values(LEDGER_OPERATIONS),
];
