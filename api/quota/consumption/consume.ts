import { ulid } from '../../../db/ids';
import type { DatabasePool } from '../../../db/pool';
import type { Redis } from '../../../db/redis';
import { appendLedger, effectivePolicies, knownResources } from '../../../db/quota/consumption';
import { claimKey, recordAnswer } from '../../../db/quota/idempotency';
import type { Queryable } from '../../../db/quota/queryable';
import { checkSubject } from '../constraints';
import type { Principal } from '../credentials';
import { bodyRefusal, quotaError } from '../errors';
import { tenantOf } from '../keys';
import type { PolicyVerdict } from './verdicts';
import { decideAll, decideAndApply, isFast } from './decision';
import { alertsOf, recordAlerts } from '../alerts/events';
import type { AlertRulesCache } from '../alerts/rules-cache';
import type { AlertRuleRow } from '../../../db/quota/alert-rules';
import type { Config } from '../../platform/config';
import { taskQueues } from '../../platform/temporal';
import { spendInRedis } from './fast-path';
import { ledgerEntries, requestHashOf } from './records';
import { parseExact, stringifyExact } from '../../platform/http/exact-json';

/**
 * consume, check and refund. Every item of a request and every policy that governs it are
 * decided together in one transaction: all admitted, or nothing consumed. Items naming the same
 * resource are summed. An idempotency key replays the first answer (and its event_id) and
 * consumes nothing more; a concurrent duplicate waits for the first and replays it.
 */
export interface Item {
  resource: string;
  amount: number;
}

export interface ConsumeBody {
  subject: string;
  items: Item[];
  idempotency_key?: string | null;
  metadata?: Record<string, unknown>;
}

export type Deps = { pool: DatabasePool; redis: Redis };
/** What a request that adds usage needs besides: the tenant's alert rules and its queue. */
export type SpendingDeps = Deps & { alertRules: AlertRulesCache; config: Config };
type Endpoint = 'consume' | 'refund' | 'reserve' | 'commit' | 'release';

/** The request's amount per resource, in the order first named. */
export function amountsOf(items: Item[]): Map<string, bigint> {
  const amounts = new Map<string, bigint>();
  for (const { resource, amount } of items)
    amounts.set(resource, (amounts.get(resource) ?? 0n) + BigInt(amount));
  return amounts;
}

/** Items naming a resource the tenant does not have: 422 at each. */
async function refuseUnknownResources(tx: Queryable, tenantId: string, items: Item[]) {
  const known = await knownResources(tx, tenantId, [...new Set(items.map((i) => i.resource))]);
  const refusals = items.flatMap((item, index) =>
    known.has(item.resource)
      ? []
      : [
          {
            path: ['items', index, 'resource'],
            message: 'no resource with this name in the tenant',
            type: 'reference_not_found',
          },
        ],
  );
  if (refusals.length > 0) throw bodyRefusal(refusals);
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
  tenantId: string,
  endpoint: Endpoint,
  body: { idempotency_key?: string | null },
  decide: (tx: Queryable) => Promise<T>,
): Promise<T> {
  return deps.pool.transaction(async (tx) => {
    const key = body.idempotency_key;
    if (!key) return decide(tx);
    const requestHash = requestHashOf(body);
    const claimed = { tenantId, endpoint, key };
    const recorded = await claimKey(tx, { ...claimed, requestHash });
    if (recorded) {
      if (recorded.request_hash_hex !== requestHash.toString('hex'))
        throw quotaError('idempotency_key_reused');
      return parseExact(recorded.response_text) as T;
    }
    const answer = await decide(tx);
    await recordAnswer(tx, claimed, { status: 200, responseJson: stringifyExact(answer) });
    return answer;
  });
}

/** The policies governing the request's resources (each one the tenant's: 422 otherwise). */
export async function governing(
  db: Queryable,
  tenantId: string,
  body: Pick<ConsumeBody, 'subject' | 'items'>,
) {
  await refuseUnknownResources(db, tenantId, body.items);
  const names = [...new Set(body.items.map((i) => i.resource))];
  return effectivePolicies(db, tenantId, body.subject, names);
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

export async function consume(deps: SpendingDeps, principal: Principal, body: ConsumeBody) {
  const tenantId = tenantOf(principal);
  checkSubject(principal, body.subject);
  const amounts = amountsOf(body.items);
  const policies = await governing(deps.pool, tenantId, body);
  const rules = await deps.alertRules.enabledRules(tenantId);
  if (policies.every(isFast)) {
    const spend = { tenantId, endpoint: 'consume', body, policies, amounts, rules } as const;
    const answer = await spendInRedis(deps.redis, spend, (verdicts, eventId) => ({
      allowed: verdicts.every((v) => v.allowed),
      event_id: eventId,
      degraded: false,
      results: verdicts.map(usageOut),
    }));
    if (answer) return answer;
  }
  return idempotent(deps, tenantId, 'consume', body, async (tx) => {
    const eventId = `evt_${ulid()}`;
    const stores = { tx, redis: deps.redis };
    const context = contextOf(tenantId, body.subject);
    const decided = await decideAndApply(stores, context, policies, amounts, eventId);
    if (decided.allowed) {
      await appendLedger(
        tx,
        ledgerEntries({ tenantId, eventId, subject: body.subject, body }, amounts, 'consume'),
      );
      await recordCrossings(tx, deps, rules, context(), decided.verdicts);
    }
    return {
      allowed: decided.allowed,
      event_id: eventId,
      degraded: decided.degraded,
      results: decided.verdicts.map(usageOut),
    };
  });
}

/** What consume would answer, consuming nothing; `blocking` names the first policy that denies. */
export async function check(
  deps: Deps,
  principal: Principal,
  body: Pick<ConsumeBody, 'subject' | 'items'>,
) {
  const tenantId = tenantOf(principal);
  checkSubject(principal, body.subject);
  const amounts = amountsOf(body.items);
  const policies = await governing(deps.pool, tenantId, body);
  const decide = (tx: Queryable) =>
    decideAll({ tx, redis: deps.redis }, contextOf(tenantId, body.subject)(), policies, amounts);
  // Fast policies alone are read from Redis: no transaction to hold.
  const decided = policies.every(isFast)
    ? await decide(deps.pool)
    : await deps.pool.transaction(decide);
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
export async function refund(deps: Deps, principal: Principal, body: ConsumeBody) {
  const tenantId = tenantOf(principal);
  checkSubject(principal, body.subject);
  const amounts = amountsOf(body.items);
  const negated = new Map([...amounts].map(([resource, amount]) => [resource, -amount]));
  const quotas = (await governing(deps.pool, tenantId, body)).filter((p) => p.kind === 'quota');
  if (quotas.every(isFast)) {
    const spend = {
      tenantId,
      endpoint: 'refund',
      body,
      policies: quotas,
      amounts: negated,
    } as const;
    const answer = await spendInRedis(deps.redis, spend, (_verdicts, eventId) => ({
      event_id: eventId,
      degraded: false,
    }));
    if (answer) return answer;
  }
  return idempotent(deps, tenantId, 'refund', body, async (tx) => {
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
}
