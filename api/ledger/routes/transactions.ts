import type Router from '@koa/router';
import Joi from 'joi';
import type { Context, Middleware, Next } from 'koa';
import { parseInstantWithOffset } from '../../../platform/instant';
import type { Principal } from '../../../services/ledger/credentials';
import type { LedgerErrorCode } from '../../../services/ledger/errors';
import {
  requestHashOf,
  settleFailedClaim,
  usableKeyOf,
  type IdempotencyState,
} from '../idempotency';
import { Transaction, TransactionCreated, TransactionSettled } from '../models';
import {
  oneStatementPosting,
  postInOneStatement,
  type OneStatementPosting,
} from '../../../services/ledger/posting-statement';
import {
  bodySchema,
  idParams,
  instantWithOffset,
  isReport,
  metadata,
  text,
  type Refusal,
  uuidString,
} from '../../../services/ledger/schemas';
import {
  createParsedTransaction,
  getTransaction,
  HOLD_DURATION_MAX_MS,
  parsedTransactionOf,
  settleTransaction,
  type CreatedTransaction,
  type ValidatedTransaction,
} from '../../../services/ledger/transactions';
import { invalid, isUuid, LIMITS } from '../../../services/ledger/validation';
import {
  mountOperation,
  operation,
  paramOf,
  principalOf,
  validated,
  type LedgerRouteDeps,
} from './operation';

const transactionParams = idParams('transaction_id', 'transaction id');

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

export const TRANSACTION_OPERATIONS = {
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
};

export function presentCreated(created: CreatedTransaction) {
  return {
    transaction_id: created.transaction_id,
    state: created.state,
    created_at: created.created_at,
    accounts: created.accounts,
  };
}

/** 201 with the posting; a hold's expiry workflow is started now (never awaited). */
function answerCreated(
  deps: LedgerRouteDeps,
  ctx: Context,
  principal: Principal,
  created: CreatedTransaction,
): void {
  if (created.hold && deps.holdPlaced) deps.holdPlaced(principal, created);
  ctx.status = 201;
  ctx.body = presentCreated(created);
}

/**
 * The posting route's first step, before its guards: the common case in one statement
 * (posting-statement.ts); every request it does not answer goes on to the general path.
 */
function postingInOneStatement(deps: LedgerRouteDeps): Middleware {
  return async function tryOneStatement(ctx: Context, next: Next) {
    const posting = oneStatementPosting(deps.keys, {
      authorization: ctx.get('Authorization') || undefined,
      idempotencyKey: usableKeyOf(ctx),
      body: ctx.request.body,
    });
    if (posting && (await postedInOneStatement(deps, ctx, posting))) return;
    await next();
  };
}

/** False: nothing was written, and the general path answers the request. */
async function postedInOneStatement(
  deps: LedgerRouteDeps,
  ctx: Context,
  posting: OneStatementPosting,
): Promise<boolean> {
  const { principal } = posting;
  ctx.state.principal = principal;
  // Read by the general path's guard (authorizedOnce): a request is metered once.
  const metering = deps.meter?.(principal);
  ctx.state.metering = metering;
  const outcome = await postInOneStatement(
    { postings: deps.batchers.authorizedPostings, keys: deps.keys },
    posting,
    {
      metering,
      requestSha256: requestHashOf(ctx),
      countPosting: deps.countPosting,
    },
  );
  if ('created' in outcome) {
    answerCreated(deps, ctx, principal, outcome.created);
    return true;
  }
  if ('refused' in outcome) {
    await settleFailedClaim(deps.pool, outcome.idempotencyScope, outcome.refused);
    throw outcome.refused;
  }
  // Not an authenticated call after all: the general path answers it, metering it if it is.
  if (outcome.handedBack === 'credential') ctx.state.metering = undefined;
  return false;
}

/** The general path's posting, once its guards passed: recorded with its Idempotency-Key. */
function postTransaction(deps: LedgerRouteDeps): Middleware {
  return async function postGeneral(ctx: Context) {
    const principal = principalOf(ctx);
    const idempotency = ctx.state.idempotency as IdempotencyState;
    const parsed = parsedTransactionOf(validated<ValidatedTransaction>(ctx, 'body'));
    const created = await createParsedTransaction(
      deps.batchers.postings,
      principal.tenantId,
      parsed,
      {
        endpoint: idempotency.scope.endpoint,
        key: idempotency.scope.key,
        status: 201,
      },
    );
    idempotency.markCompleted();
    deps.countPosting?.('general', 'created');
    answerCreated(deps, ctx, principal, created);
  };
}

/** Commits or voids a hold, then ends its expiry workflow early. */
function settleHold(deps: LedgerRouteDeps, action: 'commit' | 'void'): Middleware {
  return async function settle(ctx: Context) {
    const settled = await settleTransaction(
      deps.pool,
      principalOf(ctx).tenantId,
      paramOf(ctx, 'transaction_id'),
      action,
    );
    deps.holdSettled?.(settled);
    ctx.body = settled;
  };
}

export function mountTransactionRoutes(router: Router, deps: LedgerRouteDeps): void {
  const ops = TRANSACTION_OPERATIONS;
  mountOperation(router, deps, ops.postTransaction, postTransaction(deps), {
    before: [postingInOneStatement(deps)],
  });
  mountOperation(router, deps, ops.getTransaction, async (ctx) => {
    ctx.body = await getTransaction(
      deps.pool,
      principalOf(ctx).tenantId,
      paramOf(ctx, 'transaction_id'),
    );
  });
  mountOperation(router, deps, ops.commitTransaction, settleHold(deps, 'commit'));
  mountOperation(router, deps, ops.voidTransaction, settleHold(deps, 'void'));
}
