import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { ulid } from '../../../db/ids';
import type { DatabasePool } from '../../../db/pool';
import {
  appendLedger,
  effectivePolicies,
  knownResources,
  type LedgerEntryInput,
} from '../../../db/quota/consumption';
import { claimKey, recordAnswer } from '../../../db/quota/idempotency';
import type { Queryable } from '../../../db/quota/queryable';
import { checkSubject } from '../constraints';
import type { Principal } from '../credentials';
import { bodyRefusal, quotaError } from '../errors';
import { tenantOf } from '../keys';
import { decideStrict, type PolicyVerdict } from './strict';
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

type Deps = { pool: DatabasePool };
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
    const requestHash = createHash('sha256')
      .update(canonicalize(body) ?? '')
      .digest();
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

/** A request's metadata as stored: none when it sent none or an empty object. */
export const storedMetadata = (metadata: Record<string, unknown> | undefined) =>
  metadata && Object.keys(metadata).length > 0 ? metadata : null;

/** One signed entry per resource of an event (the amounts already signed by the caller). */
export function ledgerEntries(
  base: {
    tenantId: string;
    eventId: string;
    subject: string;
    body: { idempotency_key?: string | null; metadata?: Record<string, unknown> };
    reservationId?: string;
  },
  amounts: Map<string, bigint>,
  entryType: LedgerEntryInput['entryType'],
): LedgerEntryInput[] {
  const occurredAt = new Date().toISOString();
  return [...amounts].map(([resource, amount]) => ({
    tenantId: base.tenantId,
    eventId: base.eventId,
    subject: base.subject,
    resource,
    amount,
    entryType,
    idempotencyKey: base.body.idempotency_key ?? null,
    reservationId: base.reservationId ?? null,
    strictDeferred: false,
    metadata: storedMetadata(base.body.metadata),
    occurredAt,
  }));
}

/** The policies governing the request's resources (each one the tenant's: 422 otherwise). */
async function governing(
  tx: Queryable,
  tenantId: string,
  body: Pick<ConsumeBody, 'subject' | 'items'>,
) {
  await refuseUnknownResources(tx, tenantId, body.items);
  const names = [...new Set(body.items.map((i) => i.resource))];
  return effectivePolicies(tx, tenantId, body.subject, names);
}

export async function verdictsFor(
  tx: Queryable,
  tenantId: string,
  body: Pick<ConsumeBody, 'subject' | 'items'>,
  amounts: Map<string, bigint>,
) {
  const policies = await governing(tx, tenantId, body);
  return decideStrict(
    tx,
    { tenantId, subject: body.subject, nowMs: Date.now() },
    policies,
    amounts,
  );
}

export async function consume(deps: Deps, principal: Principal, body: ConsumeBody) {
  const tenantId = tenantOf(principal);
  checkSubject(principal, body.subject);
  const amounts = amountsOf(body.items);
  return idempotent(deps, tenantId, 'consume', body, async (tx) => {
    const verdicts = await verdictsFor(tx, tenantId, body, amounts);
    const allowed = verdicts.every((v) => v.allowed);
    const eventId = `evt_${ulid()}`;
    if (allowed) {
      for (const verdict of verdicts) await verdict.apply(tx);
      await appendLedger(
        tx,
        ledgerEntries({ tenantId, eventId, subject: body.subject, body }, amounts, 'consume'),
      );
    }
    return { allowed, event_id: eventId, degraded: false, results: verdicts.map(usageOut) };
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
  return deps.pool.transaction(async (tx) => {
    const verdicts = await verdictsFor(tx, tenantId, body, amounts);
    const blocking = verdicts.find((v) => !v.allowed);
    return {
      allowed: blocking === undefined,
      degraded: false,
      results: verdicts.map(usageOut),
      blocking: blocking ? usageOut(blocking) : null,
    };
  });
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
  return idempotent(deps, tenantId, 'refund', body, async (tx) => {
    const quotas = (await governing(tx, tenantId, body)).filter((p) => p.kind === 'quota');
    const eventId = `evt_${ulid()}`;
    const context = { tenantId, subject: body.subject, nowMs: Date.now() };
    const refunded = await decideStrict(tx, context, quotas, negated);
    for (const verdict of refunded) await verdict.apply(tx);
    await appendLedger(
      tx,
      ledgerEntries({ tenantId, eventId, subject: body.subject, body }, negated, 'refund'),
    );
    return { event_id: eventId, degraded: false };
  });
}
