/**
 * The ledger's OpenAPI 3.1 contract, served at /openapi.json. Decisions where the spec says
 * "not shown" are written into the descriptions (and api/ledger/README.md).
 */
import { NO_NUL_PATTERN } from '../platform/http/text';
import { LEDGER_ERRORS } from './errors';
import { SHOWN_AS_INVALID_REQUEST } from './envelope';

type Schema = Record<string, unknown>;

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const str = (description?: string, extra: Schema = {}): Schema => ({
  type: 'string',
  ...(description ? { description } : {}),
  ...extra,
});
const uuid = (description?: string): Schema => str(description, { format: 'uuid' });
const instant = (description?: string): Schema => str(description, { format: 'date-time' });
const nullable = (schema: Schema): Schema => ({ oneOf: [schema, { type: 'null' }] });
const minor = (description?: string): Schema =>
  str(description ?? 'integer minor units as a string', { pattern: '^-?\\d+$' });
const decimal = (description?: string): Schema =>
  str(description ?? 'decimal string at the asset scale', { pattern: '^-?\\d+(\\.\\d+)?$' });
/** A floor as a JSON integer of minor units: only what a JSON number holds exactly. */
const floorInteger: Schema = {
  type: 'integer',
  minimum: Number.MIN_SAFE_INTEGER,
  maximum: Number.MAX_SAFE_INTEGER,
};
const floor = (description?: string): Schema => ({
  ...(description ? { description } : {}),
  oneOf: [decimal(), floorInteger, { type: 'null' }],
});
/** JSON the database stores: no U+0000 in any key or string (jsonb cannot hold it). */
const metadata = (description = 'at most 16 KiB as RFC 8785 canonical JSON'): Schema => ({
  type: 'object',
  description: `${description}; no U+0000 in any key or string (422 INVALID_INPUT)`,
});
const object = (
  properties: Record<string, Schema>,
  required: string[] = Object.keys(properties),
  extra: Schema = {},
): Schema => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
  ...extra,
});

/** Every code a client can see: the catalogue's, but those the envelope shows as INVALID_REQUEST. */
const ERROR_CODES = Object.keys(LEDGER_ERRORS).filter(
  (code) => !SHOWN_AS_INVALID_REQUEST.has(code),
);

/** Postgres text cannot hold U+0000: a string with it is refused (422 INVALID_INPUT). */
const text = (maxLength: number, description?: string): Schema =>
  str(description, { maxLength, pattern: NO_NUL_PATTERN });

/** A name of blanks only is no name (422 INVALID_TENANT): some character other than whitespace. */
const subTenantName = str('at least one character that is not whitespace', {
  minLength: 1,
  maxLength: 255,
  pattern: '^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$',
});

const postedShape = object({
  debits: decimal(),
  credits: decimal(),
  debits_minor: minor(),
  credits_minor: minor(),
});

const schemas: Record<string, Schema> = {
  Error: object({
    error: object(
      {
        code: str('branch on this', { enum: ERROR_CODES }),
        message: str(),
        details: { description: 'per-field diagnostics or the record concerned' },
      },
      ['code', 'message'],
    ),
  }),
  Health: object({
    status: str(undefined, { enum: ['ok'] }),
    auth_client_credential: str(
      "ok: the database (the key store) accepts the service's own credential; unknown: not yet checked",
      { enum: ['ok', 'unknown'] },
    ),
  }),
  Unhealthy: object({
    status: str(undefined, { enum: ['unhealthy'] }),
    reason: str(),
    auth_client_credential: str(
      "rejected: the database refuses the service's own credential (every keyed request gets 503 AUTHZ_CREDENTIAL_REJECTED); unknown: the database is unreachable",
      { enum: ['rejected', 'unknown'] },
    ),
  }),
  AssetTypeCreate: object(
    {
      code: str('unique per tenant; immutable', {
        minLength: 1,
        maxLength: 64,
        pattern: '^[A-Za-z0-9._:-]+$',
      }),
      kind: str(
        'fiat, credit or inventory (a commodity or crypto-asset held as stock is inventory); else 422 INVALID_ASSET_TYPE',
        { enum: ['fiat', 'credit', 'inventory'] },
      ),
      scale: { type: 'integer', minimum: 0, maximum: 12, description: 'decimal places; immutable' },
      description: nullable(text(1024)),
    },
    ['code', 'kind', 'scale'],
  ),
  AssetTypePatch: {
    type: 'object',
    description:
      'status and/or description only; naming code, kind or scale is 422 IMMUTABLE_FIELD',
    properties: {
      status: str(undefined, { enum: ['active', 'superseded'] }),
      description: nullable(text(1024)),
    },
    additionalProperties: false,
    minProperties: 1,
  },
  AssetType: object({
    asset_type_id: uuid(),
    code: str(),
    kind: str(undefined, { enum: ['fiat', 'credit', 'inventory'] }),
    scale: { type: 'integer', minimum: 0, maximum: 12 },
    status: str(undefined, { enum: ['active', 'superseded'] }),
    description: nullable(str()),
    created_at: instant(),
  }),
  AssetTypeList: object({ asset_types: { type: 'array', items: ref('AssetType') } }),
  AccountCreate: object(
    {
      asset_type_id: uuid(
        'an asset type of this tenant; unknown is 422 REFERENCE_NOT_FOUND, superseded is 409 ASSET_TYPE_SUPERSEDED',
      ),
      name: text(255),
      normal_side: str('the direction that increases the balance', { enum: ['debit', 'credit'] }),
      balance_floor: floor(
        'omitted = 0 (may not go below zero); null = unbounded (opt-in); a decimal string at the asset scale (may be negative: an overdraft line) or a JSON integer of minor units (safe range). Async accounts cannot have one (omit it or send null).',
      ),
      balance_tracking: str(
        'sync (default: locked and exact) or async (advanced by a rollup about every second; no floor)',
        { enum: ['sync', 'async'] },
      ),
      metadata: metadata(),
    },
    ['asset_type_id', 'normal_side'],
    {
      // An async account has no floor: 422 INVALID_FLOOR otherwise.
      if: { properties: { balance_tracking: { const: 'async' } }, required: ['balance_tracking'] },
      then: { properties: { balance_floor: { type: 'null' } } },
    },
  ),
  AccountPatch: {
    type: 'object',
    description:
      'Closing needs a zero balance and no holds (409 CLOSE_REQUIRES_ZERO_BALANCE). Closed is final: any status or floor change of a closed account is 409 ACCOUNT_NOT_ACTIVE. Raising a floor above the current available balance is 422 INVALID_FLOOR.',
    properties: {
      name: text(255),
      metadata: metadata(),
      status: str(undefined, { enum: ['active', 'frozen', 'closed'] }),
      balance_floor: floor(),
    },
    additionalProperties: false,
    minProperties: 1,
  },
  Account: object({
    account_id: uuid(),
    asset_type_id: uuid(),
    name: str(),
    normal_side: str(undefined, { enum: ['debit', 'credit'] }),
    status: str(undefined, { enum: ['active', 'frozen', 'closed'] }),
    balance_tracking: str(undefined, { enum: ['sync', 'async'] }),
    balance_floor: nullable(
      decimal('null = unbounded; "0.00" = may not go below zero (opposite meanings)'),
    ),
    balance_floor_minor: nullable(minor()),
    scale: { type: 'integer' },
    metadata: { type: 'object' },
    created_at: instant(),
  }),
  AccountList: object({
    accounts: { type: 'array', items: ref('Account') },
    next_cursor: nullable(uuid('pass as cursor for the next (older) page; null at the end')),
  }),
  EntryInput: object({
    account_id: uuid(),
    direction: str(undefined, { enum: ['debit', 'credit'] }),
    amount: decimal('greater than zero, at most the asset scale in decimals'),
  }),
  TransactionCreate: object(
    {
      description: nullable(text(1024)),
      pending: {
        type: 'boolean',
        description:
          'true places a hold on the contra side only; it is committed, voided, or expires',
      },
      expires_at: instant(
        'required when pending; explicit UTC offset or Z; in the future; at most 366 days ahead; precision kept to the millisecond',
      ),
      effective_at: instant(
        'explicit UTC offset or Z; defaults to posting time; may be in the past (backdated)',
      ),
      external_id: nullable(
        text(
          255,
          'unique per tenant: a repeat under another Idempotency-Key is 409 DUPLICATE_TRANSACTION',
        ),
      ),
      metadata: metadata(),
      entries: {
        type: 'array',
        minItems: 2,
        maxItems: 100,
        items: ref('EntryInput'),
        description: '2 to 100, else 422 ENTRY_COUNT_OUT_OF_RANGE',
      },
    },
    ['entries'],
    {
      // expires_at belongs to a hold: required when pending, refused (422 INVALID_EXPIRES_AT) when not.
      if: { properties: { pending: { const: true } }, required: ['pending'] },
      then: { properties: { expires_at: { type: 'string' } }, required: ['expires_at'] },
      else: { not: { properties: { expires_at: { type: 'string' } }, required: ['expires_at'] } },
    },
  ),
  TransactionCreated: object({
    transaction_id: uuid(),
    state: str(undefined, { enum: ['pending', 'committed'] }),
    created_at: instant(),
    accounts: {
      type: 'array',
      description:
        'sync-tracked accounts only, computed under the locks that validated the posting',
      items: object({
        account_id: uuid(),
        available_after_minor: minor(),
        available_after: decimal(),
      }),
    },
  }),
  TransactionSettled: object({
    transaction_id: uuid(),
    state: str(undefined, { enum: ['committed', 'voided'] }),
    finalized_at: instant(),
  }),
  TransactionEntry: object({
    id: uuid(),
    account_id: uuid(),
    direction: str(undefined, { enum: ['debit', 'credit'] }),
    amount: decimal(),
    amount_minor: minor(),
    scale: { type: 'integer' },
    line_no: { type: 'integer', minimum: 1, maximum: 100 },
  }),
  Transaction: object({
    transaction_id: uuid(),
    state: str(undefined, { enum: ['pending', 'committed', 'voided', 'expired'] }),
    pending: { type: 'boolean' },
    description: nullable(str()),
    external_id: nullable(str()),
    metadata: { type: 'object' },
    effective_at: instant(),
    expires_at: nullable(instant()),
    created_at: instant(),
    finalized_at: nullable(
      instant('when it became committed, voided or expired; null while pending'),
    ),
    entries: { type: 'array', items: ref('TransactionEntry') },
  }),
  Balance: object({
    account_id: uuid(),
    posted: postedShape,
    pending: postedShape,
    available: decimal(
      'posted on the normal side, less holds on the contra side; incoming pending funds are not included',
    ),
    available_minor: minor(),
    scale: { type: 'integer' },
    version: minor('increments with every change of the counters'),
    balance_tracking: str(undefined, { enum: ['sync', 'async'] }),
    as_of: instant(
      'sync accounts: now. Async accounts (they lag): every posting, commit, void and expiry acknowledged before this instant is in the counters; later ones may be too',
    ),
  }),
  BalanceAsOf: object({
    account_id: uuid(),
    as_of: instant(),
    basis: str(undefined, { enum: ['effective', 'recorded'] }),
    posted: postedShape,
    balance: decimal('on the normal side'),
    balance_minor: minor(),
    scale: { type: 'integer' },
    entry_count: { type: 'integer' },
    balance_tracking: str(undefined, { enum: ['sync', 'async'] }),
    derived_from: str(undefined, { enum: ['journal'] }),
  }),
  Entry: object({
    id: uuid(),
    transaction_id: uuid(),
    account_id: uuid(),
    direction: str(undefined, { enum: ['debit', 'credit'] }),
    amount: decimal(),
    amount_minor: minor(),
    scale: { type: 'integer' },
    line_no: { type: 'integer' },
    created_at: instant(),
    transaction_state: str(undefined, { enum: ['pending', 'committed', 'voided', 'expired'] }),
    finalized_at: nullable(instant()),
  }),
  EntryList: object({
    entries: { type: 'array', items: ref('Entry') },
    next_cursor: nullable(uuid()),
  }),
  SubTenantCreate: object({
    name: subTenantName,
    kind: str('immutable', { enum: ['production', 'sandbox'] }),
    contact_email: str(undefined, { maxLength: 255, format: 'email' }),
  }),
  SubTenantPatch: {
    type: 'object',
    properties: {
      status: str(undefined, { enum: ['active', 'suspended'] }),
      name: subTenantName,
    },
    additionalProperties: false,
  },
  SubTenant: object({
    sub_tenant_id: uuid(),
    parent_tenant_id: uuid(),
    name: str(),
    kind: str(undefined, { enum: ['production', 'sandbox'] }),
    contact_email: nullable(str()),
    status: str(undefined, { enum: ['active', 'suspended'] }),
    created_at: instant(),
    updated_at: instant(),
  }),
  SubTenantList: object({
    sub_tenants: { type: 'array', items: ref('SubTenant') },
    next_cursor: nullable(uuid()),
  }),
  KeyCreate: object(
    {
      label: nullable(text(255)),
      role: str('a client key cannot be a partner key (depth is capped at one)', {
        enum: ['ledger_admin', 'ledger_poster', 'ledger_reader'],
      }),
      ttl_days: nullable({
        type: 'integer',
        minimum: 1,
        maximum: 3650,
        description: 'omitted or null = no expiry; past it 401 CREDENTIAL_EXPIRED',
      }),
    },
    ['role'],
  ),
  Key: object({
    key_id: uuid(),
    sub_tenant_id: uuid(),
    role: str(undefined, {
      enum: ['ledger_admin', 'ledger_poster', 'ledger_reader', 'ledger_partner'],
    }),
    label: nullable(str()),
    created_at: instant(),
    expires_at: nullable(instant()),
    revoked_at: nullable(instant()),
  }),
  KeyIssued: object({
    key_id: uuid(),
    sub_tenant_id: uuid(),
    role: str(undefined, { enum: ['ledger_admin', 'ledger_poster', 'ledger_reader'] }),
    label: nullable(str()),
    created_at: instant(),
    expires_at: nullable(instant()),
    revoked_at: { type: 'null' },
    secret: str('the bearer token lk_<key id>_<secret>; shown once, only its SHA-256 is stored'),
  }),
  KeyList: object({ keys: { type: 'array', items: ref('Key') }, next_cursor: nullable(uuid()) }),
};

const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: ref('Error') } },
});
const json = (description: string, schema: string) => ({
  description,
  content: { 'application/json': { schema: ref(schema) } },
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

const idParam = (name: string, description: string) => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: { type: 'string' },
});
const pageParams = [
  {
    name: 'limit',
    in: 'query',
    required: false,
    description: '1 to 1000, default 100',
    schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
  },
  {
    name: 'cursor',
    in: 'query',
    required: false,
    description: 'next_cursor of the previous page',
    schema: { type: 'string', format: 'uuid' },
  },
];
const idempotencyHeader = {
  name: 'Idempotency-Key',
  in: 'header',
  required: true,
  description:
    'Required on every mutating request (1 to 255 chars), scoped per tenant and endpoint (method + route). A replay with the same body returns the original status and body with header Idempotent-Replayed: true; a different body is 422 IDEMPOTENCY_KEY_MISMATCH; a concurrent duplicate is 409 IDEMPOTENCY_IN_FLIGHT with Retry-After while the first request holds the key (a posting usually holds it only inside its own database transaction, so a duplicate that arrives meanwhile waits the few milliseconds until it commits and gets its replay). Final refusals (4xx without Retry-After) are remembered too; transient ones (5xx, 429, 409 with Retry-After) are not, so a retry runs again. Records are kept (no expiry).',
  schema: { type: 'string', minLength: 1, maxLength: 255 },
};

type Operation = {
  summary: string;
  role: string | null;
  mutating?: boolean;
  body?: string;
  params?: unknown[];
  ok: [string, string, string?];
  errors?: Record<string, string>;
  description?: string;
};

function operation(op: Operation) {
  const responses: Record<string, unknown> = {
    [op.ok[0]]: op.ok[2] ? json(op.ok[1], op.ok[2]) : { description: op.ok[1] },
    ...COMMON_ERRORS,
    ...(op.mutating ? MUTATING_ERRORS : {}),
  };
  for (const [status, description] of Object.entries(op.errors ?? {}))
    responses[status] = errorResponse(description);
  return {
    summary: op.summary,
    operationId: op.summary
      .replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))
      .replace(/^./, (c) => c.toLowerCase()),
    description: `${op.description ?? ''}${op.role ? `\n\nRole: ${op.role}.` : ''}`.trim(),
    ...(op.role ? {} : { security: [] }),
    parameters: [...(op.params ?? []), ...(op.mutating ? [idempotencyHeader] : [])],
    ...(op.body
      ? {
          requestBody: {
            required: true,
            content: { 'application/json': { schema: ref(op.body) } },
          },
        }
      : {}),
    responses,
  };
}

const accountId = idParam('account_id', "account id (another tenant's id answers 404)");
const transactionId = idParam('transaction_id', 'transaction id');

export const openApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'Ledger API',
    version: '1.0.0',
    description:
      'Double-entry ledger: asset types, accounts, posted and pending transactions (holds that expire), balances now and as of an instant, entries, sub-tenants and keys. Money is decimal strings at the asset scale; `_minor` fields are integer minor units as strings; never JSON numbers. Ids are UUIDv7. Errors: `{error: {code, message, details?}}`; branch on code. Retry rule: any 503 and any 409 carrying Retry-After is transient (retry with the same Idempotency-Key); 422 is final. Compatibility: additive changes only within /v1; removals come as /v2.',
    license: { name: 'UNLICENSED', identifier: 'UNLICENSED' },
  },
  servers: [{ url: '/' }],
  security: [{ bearer: [] }],
  tags: [{ name: 'ledger', description: 'the double-entry ledger of one tenant' }],
  paths: {
    '/healthz': {
      get: {
        ...operation({
          summary: 'Health',
          role: null,
          ok: [
            '200',
            "up; auth_client_credential reports the key store (the ledger's own database)",
            'Health',
          ],
          description:
            "auth_client_credential says whether the key store (the ledger's own database, reached with the service's own database credential) accepts that credential: ok (200); rejected (503, every keyed request gets 503 AUTHZ_CREDENTIAL_REJECTED); unknown (503 when the database is unreachable, 200 before the first check). Never rate limited; makes no network call of its own (reads what a background monitor last saw, every second). Also answers HEAD.",
        }),
        responses: {
          '200': json('up (auth_client_credential ok), or not yet checked (unknown)', 'Health'),
          '405': errorResponse('METHOD_NOT_ALLOWED (GET and HEAD only)'),
          '503': json(
            "the database refuses the service's own credential (auth_client_credential rejected) or is unreachable (unknown)",
            'Unhealthy',
          ),
        },
      },
    },
    '/openapi.json': {
      get: {
        ...operation({ summary: 'OpenAPI document', role: null, ok: ['200', 'this document'] }),
        responses: {
          '200': {
            description: 'this document',
            content: { 'application/json': { schema: { type: 'object' } } },
          },
          '429': errorResponse('RATE_LIMITED'),
        },
      },
    },
    '/metrics': {
      get: {
        ...operation({
          summary: 'Prometheus metrics; private networks only',
          role: null,
          ok: ['200', 'Prometheus text'],
          description:
            'For operators: request durations by route and status, and ledger_postings_total{path, outcome} (path one_statement: a key seen before in the process, posted with its check and claim in one statement; general: key lookup and claim first).',
        }),
        responses: {
          '200': {
            description: 'Prometheus text',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          '403': errorResponse('FORBIDDEN: not a private network address'),
          '429': errorResponse('RATE_LIMITED'),
        },
      },
    },
    '/llms.txt': {
      get: {
        ...operation({ summary: 'Agent guide', role: null, ok: ['200', 'a concise text guide'] }),
        responses: {
          '200': {
            description: 'a concise text guide',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          '429': errorResponse('RATE_LIMITED'),
        },
      },
    },
    '/v1/asset-types': {
      post: operation({
        summary: 'Create asset type',
        role: 'ledger_admin',
        mutating: true,
        body: 'AssetTypeCreate',
        ok: ['201', 'created', 'AssetType'],
        description: 'A duplicate code is 422 CONSTRAINT_VIOLATION.',
      }),
      get: operation({
        summary: 'List asset types',
        role: 'ledger_reader',
        ok: ['200', 'all asset types, unpaginated, newest first', 'AssetTypeList'],
      }),
    },
    '/v1/asset-types/{asset_type_id}': {
      patch: operation({
        summary: 'Update asset type',
        role: 'ledger_admin',
        mutating: true,
        body: 'AssetTypePatch',
        params: [idParam('asset_type_id', 'asset type id')],
        ok: ['200', 'the asset type', 'AssetType'],
        errors: { '404': 'ASSET_TYPE_NOT_FOUND' },
      }),
    },
    '/v1/accounts': {
      post: operation({
        summary: 'Create account',
        role: 'ledger_admin',
        mutating: true,
        body: 'AccountCreate',
        ok: ['201', 'created (the full account record)', 'Account'],
        errors: { '409': 'ASSET_TYPE_SUPERSEDED; IDEMPOTENCY_IN_FLIGHT' },
      }),
      get: operation({
        summary: 'List accounts',
        role: 'ledger_reader',
        params: pageParams,
        ok: ['200', 'newest first, keyset paginated', 'AccountList'],
      }),
    },
    '/v1/accounts/{account_id}': {
      get: operation({
        summary: 'Get account',
        role: 'ledger_reader',
        params: [accountId],
        ok: ['200', 'the account', 'Account'],
        errors: { '404': 'ACCOUNT_NOT_FOUND' },
      }),
      patch: operation({
        summary: 'Update account',
        role: 'ledger_admin',
        mutating: true,
        body: 'AccountPatch',
        params: [accountId],
        ok: ['200', 'the account', 'Account'],
        errors: {
          '404': 'ACCOUNT_NOT_FOUND',
          '409': 'CLOSE_REQUIRES_ZERO_BALANCE, ACCOUNT_NOT_ACTIVE (closed is final), LOCK_TIMEOUT',
        },
      }),
    },
    '/v1/accounts/{account_id}/balance': {
      get: operation({
        summary: 'Get balance',
        role: 'ledger_reader',
        params: [accountId],
        ok: ['200', 'current balance', 'Balance'],
        errors: { '404': 'ACCOUNT_NOT_FOUND' },
      }),
    },
    '/v1/accounts/{account_id}/balance-as-of': {
      get: operation({
        summary: 'Get balance as of',
        role: 'ledger_reader',
        params: [
          accountId,
          {
            name: 'at',
            in: 'query',
            required: true,
            description:
              'instant with explicit offset or Z; encode + as %2B (a bare + decodes to a space: 422 INVALID_AS_OF)',
            schema: { type: 'string', format: 'date-time' },
          },
          {
            name: 'basis',
            in: 'query',
            required: false,
            description:
              'effective (effective_at, default) or recorded (finalized_at). Only committed transactions count; holds never, voided and expired never.',
            schema: { type: 'string', enum: ['effective', 'recorded'], default: 'effective' },
          },
        ],
        ok: ['200', 'derived from the journal', 'BalanceAsOf'],
        errors: { '404': 'ACCOUNT_NOT_FOUND' },
      }),
    },
    '/v1/accounts/{account_id}/entries': {
      get: operation({
        summary: 'List entries',
        role: 'ledger_reader',
        params: [
          accountId,
          ...pageParams,
          {
            name: 'state',
            in: 'query',
            required: false,
            description: 'only legs of transactions in this state; without it every leg is listed',
            schema: { type: 'string', enum: ['pending', 'committed', 'voided', 'expired'] },
          },
        ],
        ok: ['200', 'statement lines, newest first', 'EntryList'],
        errors: { '404': 'ACCOUNT_NOT_FOUND' },
      }),
    },
    '/v1/transactions': {
      post: operation({
        summary: 'Post transaction',
        role: 'ledger_poster',
        mutating: true,
        body: 'TransactionCreate',
        ok: ['201', 'posted (committed) or held (pending)', 'TransactionCreated'],
        description:
          "One database transaction: sync accounts are locked in account_id order; debits equal credits per asset (also checked by a deferred database constraint at COMMIT); each sync account's floor is tested once on the net of the whole transaction, only when the transaction lowers its available balance. Unknown accounts are 422 REFERENCE_NOT_FOUND. A hold starts a Temporal workflow ledger-hold/<transaction_id> that expires it at expires_at. There is no listing of transactions (GET here is 405).",
        errors: {
          '409':
            'ACCOUNT_NOT_ACTIVE (frozen: Retry-After; closed: final), DUPLICATE_TRANSACTION, LOCK_TIMEOUT, IDEMPOTENCY_IN_FLIGHT, POSTING_FROZEN (an operator froze posting for the tenant, its parent, or the asset type: details.scope is tenant or asset_type with asset_type_id; Retry-After as the operator set it; retry with the same Idempotency-Key)',
        },
      }),
    },
    '/v1/transactions/{transaction_id}': {
      get: operation({
        summary: 'Get transaction',
        role: 'ledger_reader',
        params: [transactionId],
        ok: ['200', 'the transaction with its entries', 'Transaction'],
        errors: { '404': 'TRANSACTION_NOT_FOUND' },
      }),
    },
    '/v1/transactions/{transaction_id}/commit': {
      post: operation({
        summary: 'Commit hold',
        role: 'ledger_poster',
        mutating: true,
        params: [transactionId],
        ok: ['200', 'committed, atomically with the hold release', 'TransactionSettled'],
        description:
          'A hold is never committed after its expires_at: past it the hold is expired in the same database transaction and the answer is 410 HOLD_EXPIRED, whether or not the expiry workflow has run.',
        errors: {
          '404': 'TRANSACTION_NOT_FOUND',
          '409':
            'INVALID_TRANSACTION_STATE (final), ACCOUNT_NOT_ACTIVE (frozen: Retry-After), POSTING_FROZEN (posting frozen by the operator: Retry-After; a void still goes through)',
          '410': 'HOLD_EXPIRED',
        },
      }),
    },
    '/v1/transactions/{transaction_id}/void': {
      post: operation({
        summary: 'Void hold',
        role: 'ledger_poster',
        mutating: true,
        params: [transactionId],
        ok: [
          '200',
          'voided; the hold is released (allowed on frozen accounts)',
          'TransactionSettled',
        ],
        errors: { '404': 'TRANSACTION_NOT_FOUND', '409': 'INVALID_TRANSACTION_STATE' },
      }),
    },
    '/v1/sub-tenants': {
      post: operation({
        summary: 'Create sub-tenant',
        role: 'ledger_partner',
        mutating: true,
        body: 'SubTenantCreate',
        ok: ['201', 'created', 'SubTenant'],
        description:
          'Only a root tenant may have sub-tenants (depth one): otherwise 422 INVALID_TENANT. Malformed fields are 422 INVALID_TENANT.',
      }),
      get: operation({
        summary: 'List sub-tenants',
        role: 'ledger_partner',
        params: pageParams,
        ok: ['200', 'newest first', 'SubTenantList'],
      }),
    },
    '/v1/sub-tenants/{sub_tenant_id}': {
      patch: operation({
        summary: 'Update sub-tenant',
        role: 'ledger_partner',
        mutating: true,
        body: 'SubTenantPatch',
        params: [idParam('sub_tenant_id', 'sub-tenant id')],
        ok: ['200', 'the sub-tenant', 'SubTenant'],
        errors: { '404': 'SUB_TENANT_NOT_FOUND' },
        description:
          'Suspending it makes its keys answer 403 TENANT_SUSPENDED; reactivating restores access on the next request. kind is immutable (422 IMMUTABLE_FIELD).',
      }),
    },
    '/v1/sub-tenants/{sub_tenant_id}/keys': {
      post: operation({
        summary: 'Issue sub-tenant key',
        role: 'ledger_partner',
        mutating: true,
        body: 'KeyCreate',
        params: [idParam('sub_tenant_id', 'sub-tenant id')],
        ok: ['201', 'the key with its secret, shown once', 'KeyIssued'],
        errors: { '404': 'SUB_TENANT_NOT_FOUND' },
      }),
      get: operation({
        summary: 'List sub-tenant keys',
        role: 'ledger_partner',
        params: [idParam('sub_tenant_id', 'sub-tenant id'), ...pageParams],
        ok: ['200', 'newest first, without secrets', 'KeyList'],
        errors: { '404': 'SUB_TENANT_NOT_FOUND' },
      }),
    },
    '/v1/sub-tenants/{sub_tenant_id}/keys/{key_id}': {
      delete: operation({
        summary: 'Revoke sub-tenant key',
        role: 'ledger_partner',
        mutating: true,
        params: [idParam('sub_tenant_id', 'sub-tenant id'), idParam('key_id', 'key id')],
        ok: ['200', 'the revoked key (idempotent: the first revocation time is kept)', 'Key'],
        errors: {
          '404': 'SUB_TENANT_NOT_FOUND, KEY_NOT_FOUND',
          '502':
            "REVOCATION_FAILED: the database refused the revocation (the key's row locked past the 2 s lock budget, the statement budget, any other refusal); nothing changed and the key still works. The Idempotency-Key is released, so a retry with it runs again",
        },
      }),
    },
  },
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
