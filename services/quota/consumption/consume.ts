import { ulid } from '../../../db/ids';
import type { DatabasePool } from '../../../db/pool';
import type { Redis } from '../../../db/redis';
import { appendLedger } from '../../../db/quota/consumption';
import { generationsCurrent } from '../../../db/quota/generations';
import { claimKey, recordAnswer } from '../../../db/quota/idempotency';
import type { Queryable } from '../../../db/quota/queryable';
import { checkSubject } from '../constraints';
import type { Principal } from '../credentials';
import { quotaError } from '../errors';
import { tenantOf } from '../keys';
import type { PolicyVerdict } from './verdicts';
import { decideAll, decideAndApply, isFast } from './in-transaction';
import { alertsOf, recordAlerts } from '../alerts/events';
import { CatalogueMoved, type CatalogueCache, type CatalogueView } from '../catalogue-cache';
import { governingItems } from './governing';
import {
  checkInOneStatement,
  consumeInOneStatement,
  decidedInOneStatement,
  type StrictBatchers,
} from './in-one-statement';
import type { EffectivePolicyRow } from '../../../db/quota/consumption';
import type { AlertRuleRow } from '../../../db/quota/alert-rules';
import type { Config } from '../../../platform/config';
import { taskQueues } from '../../../contracts/shared/task-queues';
import { spendInRedis } from './in-redis';
import {
  answerOfRecord,
  assertSameRequest,
  ledgerEntries,
  recordInPostgres,
  requestHashOf,
} from './records';
import { parseExact, stringifyExact } from '../../../platform/exact-json';
import type { ConsumeBody, Item } from './request';

/*
 * consume, check and refund. Every item of a request and every policy that governs it are
 * decided together in one atomic step (a Redis script, a Postgres statement or a Postgres
 * transaction, by the policies' modes): all admitted, or nothing consumed. Items naming the same
 * resource are summed. An idempotency key replays the first answer (and its event_id) and
 * consumes nothing more; a concurrent duplicate waits for the first and replays it.
 */

export type Deps = {
  pool: DatabasePool;
  redis: Redis;
  catalogues: CatalogueCache;
  /** The app's group commit of strict decisions (in-one-statement.ts). */
  strictBatchers: StrictBatchers;
};
/** What a request that adds usage needs besides: its alerts' queue. */
export type SpendingDeps = Deps & { config: Config };

/**
 * Who sends a request, as its guard judged them from the catalogue in memory, and how to judge
 * them again when the request's decision finds that catalogue moved.
 */
export interface Caller {
  principal: Principal;
  reauthorize(): Promise<Principal>;
}

/** How often a request is judged again from a catalogue read anew before 503 decision_contended. */
const JUDGED_ATTEMPTS_MAX = 3;
type Endpoint = 'consume' | 'refund' | 'reserve' | 'commit' | 'release';

/** The request's amount per resource, in the order first named. */
export function amountsOf(items: Item[]): Map<string, bigint> {
  const amounts = new Map<string, bigint>();
  for (const { resource, amount } of items)
    amounts.set(resource, (amounts.get(resource) ?? 0n) + BigInt(amount));
  return amounts;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** PolicyUsageOut: one policy's verdict as the API shows it. */
export function usageOut(verdict: PolicyVerdict) {
  const { policy, window } = verdict;
  return {
    policy_id: policy.id,
    policy_name: policy.name,
    resource: policy.resource,
    kind: policy.kind,
    enforcement_mode: policy.enforcement_mode,
    source: policy.source,
    allowed: verdict.allowed,
    requested: verdict.requested,
    limit: verdict.limit,
    used: verdict.used,
    remaining: verdict.remaining,
    overage: verdict.overage,
    window: window && {
      kind: window.kind,
      unit: policy.window_unit,
      size: policy.window_size,
      tz: policy.kind === 'quota' && policy.window_kind === 'fixed' ? (policy.tz ?? 'UTC') : null,
      start: window.kind === 'lifetime' ? null : iso(window.startMs),
      end: iso(window.endMs),
      resets_at: iso(window.resetsAtMs),
    },
    retry_after_seconds:
      verdict.retryAfterMs === null ? null : Math.ceil(verdict.retryAfterMs / 1000),
  };
}
export type PolicyUsageOut = ReturnType<typeof usageOut>;

/**
 * Runs `decide` in a transaction under the request's idempotency key (when it has one): a replay
 * with the same body answers the recorded response; another body under the key is refused.
 */
export async function idempotent<T>(
  deps: Deps,
  scope: {
    tenantId: string;
    endpoint: Endpoint;
    view?: CatalogueView;
    /** The answer of what the key recorded, when it may not be the answer itself. */
    replay?: (recorded: unknown) => T;
  },
  body: { idempotency_key?: string | null },
  decide: (tx: Queryable) => Promise<T>,
): Promise<T> {
  const { tenantId, endpoint, view } = scope;
  return deps.pool.transaction(async (tx) => {
    if (view) await assertCurrent(tx, view);
    const key = body.idempotency_key;
    if (!key) return decide(tx);
    const requestHash = requestHashOf(body);
    const claimed = { tenantId, endpoint, key };
    const recorded = await claimKey(tx, { ...claimed, requestHash });
    if (recorded) {
      assertSameRequest(recorded.request_hash_hex, requestHash.toString('hex'));
      const answer = parseExact(recorded.response_text);
      return scope.replay ? scope.replay(answer) : (answer as T);
    }
    const answer = await decide(tx);
    await recordAnswer(tx, claimed, { status: 200, responseJson: stringifyExact(answer) });
    return answer;
  });
}

/** A transaction's check that the catalogue a request was judged by is still current. */
export async function assertCurrent(db: Queryable, view: CatalogueView): Promise<void> {
  if (!(await generationsCurrent(db, view.tenantId, view.subject, view.generations)))
    throw new CatalogueMoved();
}

/**
 * Judges a request on a subject by the catalogue in memory; when its decision finds that
 * catalogue moved (CatalogueMoved), reads it again, judges the caller again and decides again.
 */
export async function judged<T>(
  deps: Deps,
  caller: Caller,
  subject: string,
  decide: (view: CatalogueView, principal: Principal) => Promise<T>,
): Promise<T> {
  let principal = caller.principal;
  for (let attempt = 1; ; attempt++) {
    const view = await deps.catalogues.view(tenantOf(principal), subject);
    try {
      checkSubject(principal, subject);
      return await decide(view, principal);
    } catch (error) {
      // A refusal may have been judged from memory alone (an unknown resource, a constraint):
      // it stands only if that memory is still current.
      const moved =
        error instanceof CatalogueMoved ||
        !(await deps.catalogues.stillCurrent(view).catch(() => true));
      if (!moved) throw error;
      if (attempt === JUDGED_ATTEMPTS_MAX)
        throw quotaError('decision_contended', { retryAfterSeconds: 1 });
      deps.catalogues.moved(view);
      principal = await caller.reauthorize();
    }
  }
}

export const contextOf = (tenantId: string, subject: string) => () => ({
  tenantId,
  subject,
  nowMs: Date.now(),
});

/**
 * Records the alert crossings an admitted request's verdicts make, in its own transaction: the
 * same atomic step as the usage it adds.
 */
export const recordCrossings = (
  tx: Queryable,
  deps: SpendingDeps,
  rules: AlertRuleRow[],
  at: ReturnType<ReturnType<typeof contextOf>>,
  verdicts: PolicyVerdict[],
) => recordAlerts(tx, alertsOf(rules, at, verdicts), taskQueues(deps.config.taskQueuePrefix).quota);

/**
 * consume: fast policies alone in one Redis script (in-redis.ts); strict quotas alone in one
 * Postgres statement with the consumes that arrive with them (in-one-statement.ts); anything else
 * (strict and fast together, rate limits in strict mode, a crossing alert threshold, Redis out
 * of reach) in one Postgres transaction.
 */
export async function consume(deps: SpendingDeps, caller: Caller, body: ConsumeBody) {
  const amounts = amountsOf(body.items);
  return judged(deps, caller, body.subject, async (view) => {
    const spend = { view, body, amounts, policies: governingItems(view, body.items) };
    if (spend.policies.every(isFast)) {
      const answer = await consumeInRedis(deps, spend);
      if (answer) return answer;
    } else if (decidedInOneStatement(spend.policies)) {
      const answer = await consumeInOneStatement(deps.strictBatchers, spend, answerOfVerdicts);
      if (answer) return answer;
    }
    return consumeInTransaction(deps, spend);
  });
}

interface Consumption {
  view: CatalogueView;
  body: ConsumeBody;
  amounts: Map<string, bigint>;
  policies: EffectivePolicyRow[];
}

const consumeAnswer = (
  decided: { verdicts: PolicyVerdict[]; degraded?: boolean },
  eventId: string,
) => ({
  allowed: decided.verdicts.every((v) => v.allowed),
  event_id: eventId,
  degraded: decided.degraded ?? false,
  results: decided.verdicts.map(usageOut),
});

const answerOfVerdicts = (verdicts: PolicyVerdict[], eventId: string) =>
  consumeAnswer({ verdicts }, eventId);

async function consumeInRedis(deps: SpendingDeps, { view, body, amounts, policies }: Consumption) {
  const spend = {
    ...({ tenantId: view.tenantId, endpoint: 'consume', body, policies, amounts } as const),
    rules: view.catalogue.enabledAlertRules,
    guard: view.guard,
  };
  return spendInRedis(deps.redis, spend, answerOfVerdicts);
}

async function consumeInTransaction(deps: SpendingDeps, c: Consumption) {
  const { view, body, amounts, policies } = c;
  const { tenantId } = view;
  const request = { tenantId, subject: body.subject, amounts };
  // A key may hold the decision a statement recorded (in-one-statement.ts): its answer made again.
  const replay = (recorded: unknown) =>
    answerOfRecord(recordInPostgres(recorded), request, answerOfVerdicts);
  return idempotent(deps, { tenantId, endpoint: 'consume', view, replay }, body, async (tx) => {
    const eventId = `evt_${ulid()}`;
    const stores = { tx, redis: deps.redis };
    const context = contextOf(tenantId, body.subject);
    const decided = await decideAndApply(stores, context, policies, amounts, eventId);
    if (decided.allowed) {
      await appendLedger(
        tx,
        ledgerEntries({ tenantId, eventId, subject: body.subject, body }, amounts, 'consume'),
      );
      const rules = view.catalogue.enabledAlertRules;
      await recordCrossings(tx, deps, rules, context(), decided.verdicts);
    }
    return consumeAnswer(decided, eventId);
  });
}

/** What consume would answer, consuming nothing; `blocking` names the first policy that denies. */
export async function check(
  deps: Deps,
  caller: Caller,
  body: Pick<ConsumeBody, 'subject' | 'items'>,
) {
  const amounts = amountsOf(body.items);
  const decided = await judged(deps, caller, body.subject, async (view) => {
    const policies = governingItems(view, body.items);
    const context = contextOf(view.tenantId, body.subject)();
    // Fast policies alone are read from Redis (with the generations): no transaction to hold.
    if (policies.every(isFast)) {
      const stores = { tx: deps.pool, redis: deps.redis };
      const fast = await decideAll(stores, context, policies, amounts, view.guard);
      if (!fast.degraded) return fast;
    } else if (decidedInOneStatement(policies)) {
      const request = { view, subject: body.subject, policies, amounts };
      return { verdicts: await checkInOneStatement(deps.strictBatchers, request), degraded: false };
    }
    return deps.pool.transaction(async (tx) => {
      await assertCurrent(tx, view);
      return decideAll({ tx, redis: deps.redis }, context, policies, amounts);
    });
  });
  const blocking = decided.verdicts.find((v) => !v.allowed);
  return {
    allowed: blocking === undefined,
    degraded: decided.degraded,
    results: decided.verdicts.map(usageOut),
    blocking: blocking ? usageOut(blocking) : null,
  };
}

/**
 * Gives amounts back to the current windows of the subject's quota policies (never below zero;
 * a rate limit's bucket is not refilled: the requests it paced have happened). Always admitted.
 */
export async function refund(deps: Deps, caller: Caller, body: ConsumeBody) {
  const amounts = amountsOf(body.items);
  const negated = new Map([...amounts].map(([resource, amount]) => [resource, -amount]));
  return judged(deps, caller, body.subject, async (view) => {
    const { tenantId } = view;
    const quotas = governingItems(view, body.items).filter((p) => p.kind === 'quota');
    if (quotas.every(isFast)) {
      const spend = {
        ...({ tenantId, endpoint: 'refund', body, policies: quotas, amounts: negated } as const),
        guard: view.guard,
      };
      const answer = await spendInRedis(deps.redis, spend, (_verdicts, eventId) => ({
        event_id: eventId,
        degraded: false,
      }));
      if (answer) return answer;
    }
    return idempotent(deps, { tenantId, endpoint: 'refund', view }, body, async (tx) => {
      const eventId = `evt_${ulid()}`;
      const stores = { tx, redis: deps.redis };
      const context = contextOf(tenantId, body.subject);
      const decided = await decideAndApply(stores, context, quotas, negated, eventId);
      await appendLedger(
        tx,
        ledgerEntries({ tenantId, eventId, subject: body.subject, body }, negated, 'refund'),
      );
      return { event_id: eventId, degraded: decided.degraded };
    });
  });
}
