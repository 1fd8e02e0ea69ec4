/**
 * The ledger's response models (and its error envelope) as the JSON Schema components of its
 * OpenAPI document; the operations (operations.ts) answer with them by reference. Request
 * parameters and bodies are not here: they are generated from the joi schemas the routes validate
 * with (schemas.ts, operations.ts).
 */
import { LEDGER_ERRORS } from './errors';
import { SHOWN_AS_INVALID_REQUEST } from './envelope';

type Schema = Record<string, unknown>;

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

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
export const ERROR_CODES = Object.keys(LEDGER_ERRORS).filter(
  (code) => !SHOWN_AS_INVALID_REQUEST.has(code),
);

const postedShape = object({
  debits: decimal(),
  credits: decimal(),
  debits_minor: minor(),
  credits_minor: minor(),
});

export const MODELS: Record<string, Schema> = {
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
