import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { EffectivePolicyRow, LedgerEntryInput } from '../../../db/quota/consumption';
import { recordedPreStates, type FastPreState } from '../../../db/quota/fast-decide';
import { parseExact } from '../../../platform/exact-json';
import { quotaError } from '../errors';
import type { BucketState } from './verdicts';
import {
  bucketVerdict,
  currentWindow,
  quotaVerdict,
  type DecisionContext,
  type PolicyVerdict,
} from './verdicts';
import type { Window } from './windows';

/**
 * What a spending request leaves behind, whichever path decided it: its idempotency hash, its
 * consumption-ledger entries, and the record of its decision that its idempotency key keeps.
 */

/** What an idempotency key's replays must send again: the SHA-256 of the canonical body. */
export const requestHashOf = (body: object) =>
  createHash('sha256')
    .update(canonicalize(body) ?? '')
    .digest();

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

/** What a decision made in one step (a Redis script, a Postgres statement) was made of. */
export interface DecisionInputs {
  eventId: string;
  nowMs: number;
  policies: EffectivePolicyRow[];
}

/**
 * What an idempotency key keeps of a spending request's decision, whichever path decided it: the
 * answer itself (a Postgres transaction, Redis's careful path), or the decision's inputs with the
 * state each policy was decided from (one Redis script, one Postgres statement), from which a
 * retry's answer is made again by the same arithmetic (`answerOfRecord`).
 */
export type DecisionRecord<T> = { answer: T } | { decision: DecisionInputs; pre: FastPreState[] };

export type AnswerOf<T> = (verdicts: PolicyVerdict[], eventId: string) => T;

/** 409 idempotency_key_reused: the key was first used with another body. */
export function assertSameRequest(recordedHashHex: string, requestHashHex: string): void {
  if (recordedHashHex !== requestHashHex) throw quotaError('idempotency_key_reused');
}

/** A decision made elsewhere (a script, a statement) must agree with the verdicts made here. */
export function assertVerdictsAgree(verdicts: PolicyVerdict[], allowed: boolean, decider: string) {
  if (verdicts.every((v) => v.allowed) !== allowed)
    throw new Error(`${decider} and the verdicts disagree`);
}

/**
 * As Postgres keeps it (quota.idempotency_keys): the answer, or the decision a statement recorded
 * with each quota's usage before it (`{decision, used}`, decide_strict_quotas.sql).
 */
export function recordInPostgres<T>(recorded: unknown): DecisionRecord<T> {
  const { decision, used } = recorded as { decision?: DecisionInputs; used?: string[] };
  if (!decision || !used) return { answer: recorded as T };
  return { decision, pre: used.map((u) => ({ used: BigInt(u) })) };
}

/** The first line of a decision recorded in Redis by the one-script path (before its states). */
export const redisRecordPrefix = (hashHex: string, decision: DecisionInputs) =>
  JSON.stringify({ hash: hashHex, ...decision });

/**
 * As Redis keeps it (db/quota/fast-decide.ts): `{hash, answer}` from the careful path, or the
 * decision's inputs on the first line and each policy's state before it on the next ones.
 */
export function recordInRedis<T>(text: string): { hashHex: string; record: DecisionRecord<T> } {
  const [first, ...states] = text.split('\n');
  const { hash, answer, ...decision } = parseExact(first!) as {
    hash: string;
    answer?: T;
  } & DecisionInputs;
  if (answer !== undefined) return { hashHex: hash, record: { answer } };
  const kinds = decision.policies.map((p): 'quota' | 'bucket' =>
    p.kind === 'quota' ? 'quota' : 'bucket',
  );
  return { hashHex: hash, record: { decision, pre: recordedPreStates(kinds, states) } };
}

/** A retry's answer: the one recorded, or made again from the decision recorded. */
export function answerOfRecord<T>(
  record: DecisionRecord<T>,
  request: { tenantId: string; subject: string; amounts: Map<string, bigint> },
  answerOf: AnswerOf<T>,
): T {
  if ('answer' in record) return record.answer;
  const { eventId, nowMs, policies } = record.decision;
  const context = { tenantId: request.tenantId, subject: request.subject, nowMs };
  return answerOf(verdictsFrom(context, policies, request.amounts, record.pre), eventId);
}

/**
 * Each policy's verdict on the request, made from the state it was decided from: a quota's usage
 * before it, a bucket's state; in the windows the decision read (computed again for a replay).
 */
export function verdictsFrom(
  context: DecisionContext,
  policies: EffectivePolicyRow[],
  amounts: Map<string, bigint>,
  pre: FastPreState[],
  windows?: Window[],
): PolicyVerdict[] {
  return policies.map((policy, i) => {
    const requested = amounts.get(policy.resource) ?? 0n;
    const state = pre[i]!;
    if (policy.kind === 'quota') {
      const window = windows?.[i] ?? currentWindow(policy, context.nowMs);
      return quotaVerdict(context, policy, window, (state as { used: bigint }).used, requested);
    }
    return bucketVerdict(context, policy, state as BucketState | null, requested).verdict;
  });
}
