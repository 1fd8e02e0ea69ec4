import Joi from 'joi';
import { releaseVersionField } from '../../platform/release';
import { LEDGER_ROLES } from '../../db/ledger/tenants';
import { ENTRY_STATES } from '../../services/ledger/accounts';
import { ASSET_KINDS } from '../../services/ledger/asset-types';
import { LEDGER_ERRORS } from '../../services/ledger/errors';
import { SHOWN_AS_INVALID_REQUEST } from './envelope';
import { SUB_TENANT_KEY_ROLES } from '../../services/ledger/sub-tenants';
import { LIMITS } from '../../services/ledger/validation';

/**
 * The ledger's response models (and its error envelope) as joi schemas named for the OpenAPI
 * document's components (contract.ts converts them); the operations (routes/<area>.ts) answer
 * with them. Every field is present unless marked optional. Request parameters and bodies are not
 * here: they are the joi schemas the routes validate with (schemas.ts, routes/<area>.ts).
 */
const model = (name: string, keys: Joi.PartialSchemaMap) =>
  Joi.object(keys).prefs({ presence: 'required' }).id(name);

const uuid = () => Joi.string().guid();
const instant = () => Joi.string().isoDate();
/** Money as integer minor units, a string (never a JSON number). */
const minor = () =>
  Joi.string()
    .pattern(/^-?\d+$/)
    .description('integer minor units as a string');
/** Money as a decimal string at the asset scale. */
const decimal = () =>
  Joi.string()
    .pattern(/^-?\d+(\.\d+)?$/)
    .description('decimal string at the asset scale');
/** Free text a client may have sent empty (a name, description, label or external id). */
const text = () => Joi.string().allow('');
const integer = () => Joi.number().integer();
const metadata = () => Joi.object().unknown(true);
const SIDES = ['debit', 'credit'] as const;
const TRACKING = ['sync', 'async'] as const;

/** Every code a client can see: the catalogue's, but those the envelope shows as INVALID_REQUEST. */
export const ERROR_CODES = Object.keys(LEDGER_ERRORS).filter(
  (code) => !SHOWN_AS_INVALID_REQUEST.has(code),
);

export const ErrorBody = model('Error', {
  error: Joi.object({
    code: Joi.string()
      .valid(...ERROR_CODES)
      .description('branch on this'),
    message: Joi.string(),
    details: Joi.any().optional().description('per-field diagnostics or the record concerned'),
  }),
});

export const Alive = model('Alive', {
  status: Joi.string().valid('ok'),
  version: releaseVersionField(),
});

export const Health = model('Health', {
  status: Joi.string().valid('ok'),
  auth_client_credential: Joi.string()
    .valid('ok', 'unknown')
    .description(
      "ok: the database (the key store) accepts the service's own credential; unknown: not yet checked",
    ),
  version: releaseVersionField(),
});

export const Unhealthy = model('Unhealthy', {
  status: Joi.string().valid('unhealthy'),
  reason: Joi.string(),
  auth_client_credential: Joi.string()
    .valid('rejected', 'unknown')
    .description(
      "rejected: the database refuses the service's own credential (every keyed request gets 503 AUTHZ_CREDENTIAL_REJECTED); unknown: the database is unreachable",
    ),
  version: releaseVersionField(),
});

export const AssetType = model('AssetType', {
  asset_type_id: uuid(),
  code: Joi.string(),
  kind: Joi.string().valid(...ASSET_KINDS),
  scale: integer().min(0).max(LIMITS.scaleMax),
  status: Joi.string().valid('active', 'superseded'),
  description: text().allow(null),
  created_at: instant(),
});

export const AssetTypeList = model('AssetTypeList', {
  asset_types: Joi.array().items(AssetType),
});

export const Account = model('Account', {
  account_id: uuid(),
  asset_type_id: uuid(),
  name: text(),
  normal_side: Joi.string().valid(...SIDES),
  status: Joi.string().valid('active', 'frozen', 'closed'),
  balance_tracking: Joi.string().valid(...TRACKING),
  balance_floor: decimal()
    .allow(null)
    .description('null = unbounded; "0.00" = may not go below zero (opposite meanings)'),
  balance_floor_minor: minor().allow(null),
  scale: integer(),
  metadata: metadata(),
  created_at: instant(),
});

export const AccountList = model('AccountList', {
  accounts: Joi.array().items(Account),
  next_cursor: uuid()
    .allow(null)
    .description('pass as cursor for the next (older) page; null at the end'),
});

export const TransactionCreated = model('TransactionCreated', {
  transaction_id: uuid(),
  state: Joi.string().valid('pending', 'committed'),
  created_at: instant(),
  accounts: Joi.array()
    .items(
      Joi.object({
        account_id: uuid(),
        available_after_minor: minor(),
        available_after: decimal(),
      }),
    )
    .description('sync-tracked accounts only, computed under the locks that validated the posting'),
});

export const TransactionSettled = model('TransactionSettled', {
  transaction_id: uuid(),
  state: Joi.string().valid('committed', 'voided'),
  finalized_at: instant(),
});

export const TransactionEntry = model('TransactionEntry', {
  id: uuid(),
  account_id: uuid(),
  direction: Joi.string().valid(...SIDES),
  amount: decimal(),
  amount_minor: minor(),
  scale: integer(),
  line_no: integer().min(1).max(LIMITS.entriesMax),
});

export const Transaction = model('Transaction', {
  transaction_id: uuid(),
  state: Joi.string().valid(...ENTRY_STATES),
  pending: Joi.boolean(),
  description: text().allow(null),
  external_id: text().allow(null),
  metadata: metadata(),
  effective_at: instant(),
  expires_at: instant().allow(null),
  created_at: instant(),
  finalized_at: instant()
    .allow(null)
    .description('when it became committed, voided or expired; null while pending'),
  entries: Joi.array().items(TransactionEntry),
});

/** Counters of one side pair, posted or pending. */
const counters = () =>
  Joi.object({
    debits: decimal(),
    credits: decimal(),
    debits_minor: minor(),
    credits_minor: minor(),
  });

export const Balance = model('Balance', {
  account_id: uuid(),
  posted: counters(),
  pending: counters(),
  available: decimal().description(
    'posted on the normal side, less holds on the contra side; incoming pending funds are not included',
  ),
  available_minor: minor(),
  scale: integer(),
  version: minor().description('increments with every change of the counters'),
  balance_tracking: Joi.string().valid(...TRACKING),
  as_of: instant().description(
    'sync accounts: now. Async accounts (they lag): every posting, commit, void and expiry acknowledged before this instant is in the counters; later ones may be too',
  ),
});

export const BalanceAsOf = model('BalanceAsOf', {
  account_id: uuid(),
  as_of: instant(),
  basis: Joi.string().valid('effective', 'recorded'),
  posted: counters(),
  balance: decimal().description('on the normal side'),
  balance_minor: minor(),
  scale: integer(),
  entry_count: integer(),
  balance_tracking: Joi.string().valid(...TRACKING),
  derived_from: Joi.string().valid('journal'),
});

export const Entry = model('Entry', {
  id: uuid(),
  transaction_id: uuid(),
  account_id: uuid(),
  direction: Joi.string().valid(...SIDES),
  amount: decimal(),
  amount_minor: minor(),
  scale: integer(),
  line_no: integer(),
  created_at: instant(),
  transaction_state: Joi.string().valid(...ENTRY_STATES),
  finalized_at: instant().allow(null),
});

export const EntryList = model('EntryList', {
  entries: Joi.array().items(Entry),
  next_cursor: uuid().allow(null),
});

export const SubTenant = model('SubTenant', {
  sub_tenant_id: uuid(),
  parent_tenant_id: uuid(),
  name: Joi.string(),
  kind: Joi.string().valid('production', 'sandbox'),
  contact_email: Joi.string().allow(null),
  status: Joi.string().valid('active', 'suspended'),
  created_at: instant(),
  updated_at: instant(),
});

export const SubTenantList = model('SubTenantList', {
  sub_tenants: Joi.array().items(SubTenant),
  next_cursor: uuid().allow(null),
});

export const Key = model('Key', {
  key_id: uuid(),
  sub_tenant_id: uuid(),
  role: Joi.string().valid(...LEDGER_ROLES),
  label: text().allow(null),
  created_at: instant(),
  expires_at: instant().allow(null),
  revoked_at: instant().allow(null),
});

export const KeyIssued = model('KeyIssued', {
  key_id: uuid(),
  sub_tenant_id: uuid(),
  role: Joi.string().valid(...SUB_TENANT_KEY_ROLES),
  label: text().allow(null),
  created_at: instant(),
  expires_at: instant().allow(null),
  revoked_at: Joi.valid(null),
  secret: Joi.string().description(
    'the bearer token lk_<key id>_<secret>; shown once, only its SHA-256 is stored',
  ),
});

export const KeyList = model('KeyList', {
  keys: Joi.array().items(Key),
  next_cursor: uuid().allow(null),
});
