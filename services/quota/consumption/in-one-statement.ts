import {
  decideStrictQuotaBatch,
  readStrictQuotas,
  type StrictReadReply,
  type StrictReadRequest,
  type EffectivePolicyRow,
  type StrictQuotasReply,
  type StrictQuotasRequest,
} from '../../../db/quota/consumption';
import type { DatabasePool } from '../../../db/pool';
import { NaturalBatcher } from '../../../platform/batching';
import { crossingUsages } from '../alerts/crossings';
import { CatalogueMoved, type CatalogueView } from '../catalogue-cache';
import type { ConsumeBody } from './request';
import {
  answerOfRecord,
  assertSameRequest,
  assertVerdictsAgree,
  ledgerEntries,
  recordInPostgres,
  requestHashOf,
  verdictsFrom,
  type AnswerOf,
  type DecisionInputs,
} from './records';
import { ulid } from '../../../db/ids';
import { parseExact } from '../../../platform/exact-json';
import { currentWindow, limitOf } from './verdicts';

/**
 * A consume governed by strict quota policies alone, decided in one statement with the consumes
 * that arrive with it (group commit): its idempotency key claimed, the generations checked, each
 * policy locked and read, decided, applied, written to the ledger and recorded under the key in
 * one round trip (db/quota/functions/decide_strict_quota_batch.sql, decide_strict_quotas.sql),
 * where the general path (consume.ts: a transaction of a statement per step) takes about eight.
 * The verdicts are made here from the usage it read, with the same arithmetic; a key records that
 * usage with the decision's inputs (records.ts), from which a retry's answer is made again. Null when the
 * admission would cross an alert threshold: the general path decides it and records the crossing.
 */
export const decidedInOneStatement = (policies: EffectivePolicyRow[]) =>
  policies.length > 0 &&
  policies.every((p) => p.enforcement_mode === 'strict' && p.kind === 'quota');

/** Each quota's usage before the request, as the statement read it (decimal strings). */
const usedBefore = (used: string[]) => used.map((u) => ({ used: BigInt(u) }));

const BATCH_SIZE_MAX = 100;
/**
 * Batches in flight at once: two, so one batch forms while the other is decided (bench:quota on
 * the 2-core VM: two beat one and four).
 */
const BATCH_FLIGHTS_MAX = 2;

/**
 * Group commit, one pair per quota app and its pool (created with the app, handed to the
 * decisions through their deps): strict consumes that arrive while a batch is in flight go
 * together in the next (platform/batching.ts), strict checks are read together likewise; a batch
 * that fails as a whole is decided request by request.
 */
export interface StrictBatchers {
  decisions: NaturalBatcher<StrictQuotasRequest, StrictQuotasReply>;
  reads: NaturalBatcher<StrictReadRequest, StrictReadReply>;
  /** Resolves when every decision and read submitted to them has its answer. */
  drain(): Promise<void>;
}

export function createStrictBatchers(pool: DatabasePool): StrictBatchers {
  const batchers = {
    decisions: new NaturalBatcher({
      sizeMax: BATCH_SIZE_MAX,
      flightsMax: BATCH_FLIGHTS_MAX,
      runBatch: (_partition: string, requests: StrictQuotasRequest[]) =>
        decideStrictQuotaBatch(pool, requests),
      runOne: async (_partition: string, request: StrictQuotasRequest) =>
        (await decideStrictQuotaBatch(pool, [request]))[0]!,
    }),
    reads: new NaturalBatcher({
      sizeMax: BATCH_SIZE_MAX,
      flightsMax: BATCH_FLIGHTS_MAX,
      runBatch: (_partition: string, requests: StrictReadRequest[]) =>
        readStrictQuotas(pool, requests),
      runOne: async (_partition: string, request: StrictReadRequest) =>
        (await readStrictQuotas(pool, [request]))[0]!,
    }),
  };
  return {
    ...batchers,
    drain: async () => {
      await Promise.all([batchers.decisions.drain(), batchers.reads.drain()]);
    },
  };
}

export async function consumeInOneStatement<T>(
  batchers: StrictBatchers,
  request: {
    view: CatalogueView;
    body: ConsumeBody;
    policies: EffectivePolicyRow[];
    amounts: Map<string, bigint>;
  },
  answerOf: AnswerOf<T>,
): Promise<T | null> {
  const { view, body, policies, amounts } = request;
  const eventId = `evt_${ulid()}`;
  const context = { tenantId: view.tenantId, subject: body.subject, nowMs: Date.now() };
  const key = body.idempotency_key;
  const record: DecisionInputs = { eventId, nowMs: context.nowMs, policies };
  const hash = key ? requestHashOf(body).toString('hex') : '';
  const decided = policies.map((policy) => {
    const window = currentWindow(policy, context.nowMs);
    const requested = amounts.get(policy.resource) ?? 0n;
    const limit = limitOf(policy);
    return { policy, window, requested, limit };
  });
  const reply = await batchers.decisions.submit('strict', {
    tenantId: view.tenantId,
    subject: body.subject,
    generations: view.generations,
    policies: decided.map(({ policy, window, requested, limit }) => ({
      policy_id: policy.id,
      window_key: window.currentKey,
      window_keys: window.keys,
      expires_at:
        window.currentExpiresMs === null ? null : new Date(window.currentExpiresMs).toISOString(),
      requested: requested.toString(),
      limit: limit.toString(),
      allow_overage: policy.on_exceed === 'allow_overage',
      thresholds: crossingUsages(view.catalogue.enabledAlertRules, policy, body.subject, limit).map(
        String,
      ),
    })),
    ledger: ledgerEntries(
      { tenantId: view.tenantId, eventId, subject: body.subject, body },
      amounts,
      'consume',
    ),
    ...(key ? { idempotency: { key, hash, record } } : {}),
  });
  switch (reply.status) {
    case 'moved':
      throw new CatalogueMoved();
    case 'crossing':
      return null;
    case 'recorded': {
      assertSameRequest(reply.hash, hash);
      const recorded = recordInPostgres<T>(parseExact(reply.response));
      return answerOfRecord(recorded, { ...context, amounts }, answerOf);
    }
    case 'decided': {
      const windows = decided.map(({ window }) => window);
      const verdicts = verdictsFrom(context, policies, amounts, usedBefore(reply.used), windows);
      assertVerdictsAgree(verdicts, reply.allowed, 'decide_strict_quotas');
      return answerOf(verdicts, eventId);
    }
  }
}

/**
 * A check of strict quota policies alone, read in one statement (batched with the checks that
 * arrive with it): the generations checked, each policy's usage read, nothing locked or written.
 */
export async function checkInOneStatement(
  batchers: StrictBatchers,
  request: {
    view: CatalogueView;
    subject: string;
    policies: EffectivePolicyRow[];
    amounts: Map<string, bigint>;
  },
) {
  const { view, subject, policies, amounts } = request;
  const context = { tenantId: view.tenantId, subject, nowMs: Date.now() };
  const windows = policies.map((policy) => currentWindow(policy, context.nowMs));
  const reply = await batchers.reads.submit('strict', {
    tenantId: view.tenantId,
    subject,
    generations: view.generations,
    policies: policies.map((p, i) => ({ policy_id: p.id, window_keys: windows[i]!.keys })),
  });
  if (reply.status === 'moved') throw new CatalogueMoved();
  return verdictsFrom(context, policies, amounts, usedBefore(reply.used), windows);
}
