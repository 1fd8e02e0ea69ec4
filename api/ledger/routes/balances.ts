import type Router from '@koa/router';
import Joi from 'joi';
import {
  ENTRY_STATES,
  getBalance,
  getBalanceAsOf,
  getEntries,
  type BalanceAsOfQuery,
} from '../../../services/ledger/accounts';
import { Balance, BalanceAsOf, EntryList } from '../models';
import { instantWithOffset, PAGE_KEYS, querySchema } from '../../../services/ledger/schemas';
import { invalid, type Page } from '../../../services/ledger/validation';
import { accountParams } from './accounts';
import {
  mountOperation,
  operation,
  paramOf,
  principalOf,
  validated,
  type LedgerRouteDeps,
} from './operation';

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

export const BALANCE_OPERATIONS = {
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
};

type EntriesQuery = Page & { state?: (typeof ENTRY_STATES)[number] };

/** An account's balance now, as of an instant, and its statement lines (entries). */
export function mountBalanceRoutes(router: Router, deps: LedgerRouteDeps): void {
  const { pool } = deps;
  const ops = BALANCE_OPERATIONS;
  mountOperation(router, deps, ops.getBalance, async (ctx) => {
    ctx.body = await getBalance(pool, principalOf(ctx).tenantId, paramOf(ctx, 'account_id'));
  });
  mountOperation(router, deps, ops.getBalanceAsOf, async (ctx) => {
    ctx.body = await getBalanceAsOf(
      pool,
      principalOf(ctx).tenantId,
      paramOf(ctx, 'account_id'),
      validated<BalanceAsOfQuery>(ctx, 'query'),
    );
  });
  mountOperation(router, deps, ops.listEntries, async (ctx) => {
    const query = validated<EntriesQuery>(ctx, 'query');
    ctx.body = await getEntries(
      pool,
      principalOf(ctx).tenantId,
      paramOf(ctx, 'account_id'),
      query,
      query.state,
    );
  });
}
