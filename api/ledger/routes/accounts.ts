import type Router from '@koa/router';
import Joi from 'joi';
import {
  accountNotFound,
  createAccount,
  getAccount,
  getAccounts,
  patchAccount,
  type AccountInput,
  type AccountPatch,
} from '../../../services/ledger/accounts';
import { Account, AccountList } from '../models';
import {
  bodySchema,
  floor,
  idParams,
  metadata,
  PAGE_QUERY,
  text,
  uuidString,
} from '../../../services/ledger/schemas';
import { LIMITS, type Page } from '../../../services/ledger/validation';
import {
  malformedIdNotFound,
  mountOperation,
  operation,
  paramOf,
  principalOf,
  validated,
  type LedgerRouteDeps,
} from './operation';

export const accountParams = idParams('account_id', "account id (another tenant's id answers 404)");

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

export const ACCOUNT_OPERATIONS = {
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
};

export function mountAccountRoutes(router: Router, deps: LedgerRouteDeps): void {
  const { pool } = deps;
  const ops = ACCOUNT_OPERATIONS;
  mountOperation(router, deps, ops.createAccount, async (ctx) => {
    ctx.status = 201;
    ctx.body = await createAccount(
      pool,
      principalOf(ctx).tenantId,
      validated<AccountInput>(ctx, 'body'),
    );
  });
  mountOperation(router, deps, ops.listAccounts, async (ctx) => {
    ctx.body = await getAccounts(pool, principalOf(ctx).tenantId, validated<Page>(ctx, 'query'));
  });
  mountOperation(router, deps, ops.getAccount, async (ctx) => {
    ctx.body = await getAccount(pool, principalOf(ctx).tenantId, paramOf(ctx, 'account_id'));
  });
  mountOperation(
    router,
    deps,
    ops.patchAccount,
    async (ctx) => {
      ctx.body = await patchAccount(
        pool,
        principalOf(ctx).tenantId,
        paramOf(ctx, 'account_id'),
        validated<AccountPatch>(ctx, 'body'),
      );
    },
    {
      after: [
        malformedIdNotFound(
          'account_id',
          ACCOUNT_PATCH,
          ['INVALID_ACCOUNT', 'INVALID_METADATA'],
          accountNotFound,
        ),
      ],
    },
  );
}
