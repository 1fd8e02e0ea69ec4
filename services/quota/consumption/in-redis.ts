import { ulid } from '../../../db/ids';
import type { EffectivePolicyRow, LedgerEntryInput } from '../../../db/quota/consumption';
import { decideFastStates, type FastPolicyInput } from '../../../db/quota/fast-decide';
import {
  claimIdempotencyBody,
  commitFastStates,
  type GenerationGuard,
} from '../../../db/quota/fast-state';
import {
  fastIdempotencyBodyKey,
  fastIdempotencyKey,
  fastStateKey,
  subjectPartition,
} from '../../../db/quota/partitions';
import type { Redis } from '../../../db/redis';
import { isBackendUnreachable } from '../../../db/unreachable';
import { stringifyExact } from '../../../platform/exact-json';
import { IDEMPOTENCY_WINDOW_HOURS } from '../../../contracts/quota/jobs';
import type { ConsumeBody } from './request';
import {
  answerOfRecord,
  assertSameRequest,
  assertVerdictsAgree,
  ledgerEntries,
  recordInRedis,
  redisRecordPrefix,
  requestHashOf,
  verdictsFrom,
  type AnswerOf,
} from './records';
import { fastWrites } from './in-transaction';
import { decideFast, MOVED, untilUnmoved, windowField } from './fast-verdicts';
import type { AlertRuleRow } from '../../../db/quota/alert-rules';
import { alertsOf } from '../alerts/events';
import { crossingUsages } from '../alerts/crossings';
import { CatalogueMoved } from '../catalogue-cache';
import { currentWindow, limitOf, type DecisionContext } from './verdicts';

/**
 * A consume or refund governed by fast policies only, decided and recorded in Redis alone, in one
 * round trip (db/quota/fast-decide.ts): the script decides from the subject's state, writes it,
 * appends the ledger entries to the write-ahead stream and records the decision under the
 * idempotency key, atomically; the verdicts are made here from the state it decided from. A
 * request whose admission crosses an alert threshold is decided on the careful path instead
 * (read, decide here, commit if nothing moved: the commit records its crossings with its ledger
 * entries). The ledger-flush job moves the stream into Postgres. No Postgres transaction is opened.
 */
export interface RedisSpend {
  tenantId: string;
  endpoint: 'consume' | 'refund';
  body: ConsumeBody;
  policies: EffectivePolicyRow[];
  /** Signed amounts per resource (a refund's are negative). */
  amounts: Map<string, bigint>;
  /** The tenant's enabled alert rules (a consume's crossings go with its ledger entries). */
  rules?: AlertRuleRow[];
  /** The catalogue generations the request was judged by: checked in the same script. */
  guard: GenerationGuard;
}

type Idempotency = { key: string; hash: string } | undefined;

const IDEMPOTENCY_TTL_SECONDS = IDEMPOTENCY_WINDOW_HOURS * 3_600;

/** Ledger entries as the stream carries them: amounts as decimal strings. */
const streamed = (entries: LedgerEntryInput[]) =>
  JSON.stringify(entries.map((e) => ({ ...e, amount: e.amount.toString(), strictDeferred: true })));

/**
 * An idempotency key's recorded decision replayed, or 409 when it was recorded for another body
 * (records.ts: the careful path records the answer itself; the one-script path the decision's
 * inputs and the state it read).
 */
function replay<T>(text: string, spend: RedisSpend, hashHex: string, answerOf: AnswerOf<T>): T {
  const recorded = recordInRedis<T>(text);
  assertSameRequest(recorded.hashHex, hashHex);
  const request = { tenantId: spend.tenantId, subject: spend.body.subject, amounts: spend.amounts };
  return answerOfRecord(recorded.record, request, answerOf);
}

/** A policy as the decision script takes it. */
function policyInput(
  context: DecisionContext,
  policy: EffectivePolicyRow,
  requested: bigint,
  rules: AlertRuleRow[],
): FastPolicyInput {
  const key = fastStateKey(context.tenantId, policy.id, context.subject);
  const allowOverage = policy.on_exceed === 'allow_overage';
  const limit = limitOf(policy);
  if (policy.kind === 'rate_limit') {
    const ratePerSec = policy.refill_rate_per_sec!;
    return { kind: 'bucket', key, requested, capacity: limit, allowOverage, ratePerSec };
  }
  const window = currentWindow(policy, context.nowMs);
  return {
    kind: 'quota',
    key,
    requested,
    limit,
    allowOverage,
    fields: window.keys.map(windowField),
    expireAtMs: window.currentExpiresMs,
    thresholds: crossingUsages(rules, policy, context.subject, limit),
  };
}

/**
 * The answer of a spend decided in Redis; null when Redis could not be read (the caller decides
 * in Postgres instead, under each policy's on_backend_error).
 */
export async function spendInRedis<T extends { event_id: string }>(
  redis: Redis,
  spend: RedisSpend,
  answerOf: AnswerOf<T>,
): Promise<T | null> {
  const { tenantId, body } = spend;
  const key = body.idempotency_key;
  const idempotency: Idempotency = key
    ? {
        key: fastIdempotencyKey(tenantId, spend.endpoint, key, body.subject),
        hash: requestHashOf(body).toString('hex'),
      }
    : undefined;
  const partition = subjectPartition(tenantId, body.subject);
  const context = { tenantId, subject: body.subject, nowMs: Date.now() };
  const eventId = `evt_${ulid()}`;
  const requestedOf = (p: EffectivePolicyRow) => spend.amounts.get(p.resource) ?? 0n;
  const decision = { eventId, nowMs: context.nowMs, policies: spend.policies };
  const ledger = ledgerEntries(
    { tenantId, eventId, subject: body.subject, body },
    spend.amounts,
    spend.endpoint,
  );
  let reply: Awaited<ReturnType<typeof decideFastStates>>;
  try {
    if (idempotency) await refuseAnotherBody(redis, spend, key!, idempotency.hash);
    reply = await decideFastStates(redis, {
      partition,
      guard: spend.guard,
      token: eventId,
      nowMs: context.nowMs,
      policies: spend.policies.map((p) =>
        policyInput(context, p, requestedOf(p), spend.rules ?? []),
      ),
      ledger: streamed(ledger),
      idempotency: idempotency && {
        key: idempotency.key,
        recordPrefix: redisRecordPrefix(idempotency.hash, decision),
        ttlSeconds: IDEMPOTENCY_TTL_SECONDS,
      },
    });
  } catch (error) {
    if (!isBackendUnreachable(error)) throw error;
    return null;
  }
  switch (reply.status) {
    case 'generation-moved':
      throw new CatalogueMoved();
    case 'recorded':
      return replay(reply.record, spend, idempotency!.hash, answerOf);
    case 'crossing':
      return untilUnmoved(() => trySpend(redis, spend, idempotency, answerOf));
    case 'decided': {
      const verdicts = verdictsFrom(context, spend.policies, spend.amounts, reply.pre);
      assertVerdictsAgree(verdicts, reply.allowed, 'the fast decision script');
      return answerOf(verdicts, eventId);
    }
  }
}

/**
 * 409 when the key was first used with another body. The decision's own record is kept beside the
 * subject's state (its partition); the first body's hash in the key's own, so a key reused on
 * another subject is found too.
 */
async function refuseAnotherBody(redis: Redis, spend: RedisSpend, key: string, hash: string) {
  const bodyKey = fastIdempotencyBodyKey(spend.tenantId, spend.endpoint, key);
  const first = await claimIdempotencyBody(redis, bodyKey, hash, IDEMPOTENCY_TTL_SECONDS);
  assertSameRequest(first, hash);
}

/** The careful path: one read, a decision here, a commit if nothing moved (else MOVED). */
async function trySpend<T extends { event_id: string }>(
  redis: Redis,
  spend: RedisSpend,
  idempotency: Idempotency,
  answerOf: AnswerOf<T>,
): Promise<T | null | typeof MOVED> {
  const { tenantId, body } = spend;
  const context = { tenantId, subject: body.subject, nowMs: Date.now() };
  const decided = await decideFast(
    redis,
    context,
    spend.policies,
    spend.amounts,
    idempotency?.key,
    spend.guard,
  );
  if (decided.degraded) return null;
  if (decided.generationMoved) throw new CatalogueMoved();
  if (decided.recorded !== null)
    return replay(decided.recorded, spend, idempotency!.hash, answerOf);
  const eventId = `evt_${ulid()}`;
  const answer = answerOf(decided.verdicts, eventId);
  const allowed = decided.verdicts.every((v) => v.allowed);
  const base = { tenantId, eventId, subject: body.subject, body };
  const ledger = allowed ? streamed(ledgerEntries(base, spend.amounts, spend.endpoint)) : undefined;
  const crossed = allowed ? alertsOf(spend.rules ?? [], context, decided.verdicts) : null;
  const record = idempotency && {
    key: idempotency.key,
    answer: stringifyExact({ hash: idempotency.hash, answer }),
    ttlSeconds: IDEMPOTENCY_TTL_SECONDS,
  };
  const writes = allowed ? fastWrites(decided.verdicts) : [];
  if (writes.length === 0 && !ledger && !record) return answer;
  const extras = {
    ledger,
    idempotency: record,
    alerts: crossed ? JSON.stringify(crossed) : undefined,
  };
  const partition = subjectPartition(tenantId, body.subject);
  const committed = await commitFastStates(redis, partition, writes, eventId, extras, spend.guard);
  if (committed === 'generation-moved') throw new CatalogueMoved();
  return committed === 'committed' ? answer : MOVED;
}
