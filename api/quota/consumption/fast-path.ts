import { ulid } from '../../../db/ids';
import type { EffectivePolicyRow, LedgerEntryInput } from '../../../db/quota/consumption';
import {
  commitFastStates,
  fastIdempotencyKey,
  type GenerationGuard,
} from '../../../db/quota/fast-state';
import type { Redis } from '../../../db/redis';
import { parseExact, stringifyExact } from '../../platform/http/exact-json';
import { quotaError } from '../errors';
import { IDEMPOTENCY_WINDOW_HOURS } from '../job-catalogue';
import type { ConsumeBody } from './consume';
import { ledgerEntries, requestHashOf } from './records';
import { fastWrites } from './decision';
import { decideFast, MOVED, untilUnmoved, type FastVerdict } from './fast';
import type { AlertRuleRow } from '../../../db/quota/alert-rules';
import { alertsOf } from '../alerts/events';
import { CatalogueMoved } from '../catalogue-cache';

/**
 * A consume or refund governed by fast policies only, decided and recorded in Redis alone: one
 * read of the subject's state (and the idempotency key's answer), a decision in TypeScript, one
 * atomic commit that writes the state, appends the ledger entries to the write-ahead stream and
 * records the answer under the idempotency key. The ledger-flush job moves the stream into
 * Postgres. No Postgres transaction is opened.
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

const IDEMPOTENCY_TTL_SECONDS = IDEMPOTENCY_WINDOW_HOURS * 3_600;

/** Ledger entries as the stream carries them: amounts as decimal strings. */
const streamed = (entries: LedgerEntryInput[]) =>
  JSON.stringify(entries.map((e) => ({ ...e, amount: e.amount.toString(), strictDeferred: true })));

/** The recorded answer of an idempotency key, or 409 when it was recorded for another body. */
function replay<T>(recorded: string, requestHash: string): T {
  const { hash, answer } = parseExact(recorded) as { hash: string; answer: T };
  if (hash !== requestHash) throw quotaError('idempotency_key_reused');
  return answer;
}

/**
 * The answer of a spend decided in Redis; null when Redis could not be read (the caller decides
 * in Postgres instead, under each policy's on_backend_error).
 */
export async function spendInRedis<T extends { event_id: string }>(
  redis: Redis,
  spend: RedisSpend,
  answerOf: (verdicts: FastVerdict[], eventId: string) => T,
): Promise<T | null> {
  const key = spend.body.idempotency_key;
  const idempotency = key
    ? {
        key: fastIdempotencyKey(spend.tenantId, spend.endpoint, key),
        hash: requestHashOf(spend.body).toString('hex'),
      }
    : undefined;
  return untilUnmoved(() => trySpend(redis, spend, idempotency, answerOf));
}

/** One decision and its commit: the answer, null (degraded), or MOVED. */
async function trySpend<T extends { event_id: string }>(
  redis: Redis,
  spend: RedisSpend,
  idempotency: { key: string; hash: string } | undefined,
  answerOf: (verdicts: FastVerdict[], eventId: string) => T,
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
  if (decided.recorded !== null) return replay<T>(decided.recorded, idempotency!.hash);
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
  const committed = await commitFastStates(redis, writes, eventId, extras, spend.guard);
  if (committed === 'generation-moved') throw new CatalogueMoved();
  return committed === 'committed' ? answer : MOVED;
}
