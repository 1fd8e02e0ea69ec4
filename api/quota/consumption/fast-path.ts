import { ulid } from '../../../db/ids';
import type { EffectivePolicyRow, LedgerEntryInput } from '../../../db/quota/consumption';
import { commitFastStates, fastIdempotencyKey } from '../../../db/quota/fast-state';
import type { Redis } from '../../../db/redis';
import { parseExact, stringifyExact } from '../../platform/http/exact-json';
import { quotaError } from '../errors';
import { IDEMPOTENCY_WINDOW_HOURS } from '../job-catalogue';
import type { ConsumeBody } from './consume';
import { ledgerEntries, requestHashOf } from './records';
import { fastWrites } from './decision';
import { decideFast, type FastVerdict } from './fast';

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
}

const ATTEMPTS_MAX = 100;
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
  const { tenantId, body } = spend;
  const idempotency = body.idempotency_key
    ? {
        key: fastIdempotencyKey(tenantId, spend.endpoint, body.idempotency_key),
        hash: requestHashOf(body).toString('hex'),
      }
    : undefined;
  for (let attempt = 1; attempt <= ATTEMPTS_MAX; attempt++) {
    const context = { tenantId, subject: body.subject, nowMs: Date.now() };
    const decided = await decideFast(
      redis,
      context,
      spend.policies,
      spend.amounts,
      idempotency?.key,
    );
    if (decided.degraded) return null;
    if (decided.recorded !== null) return replay<T>(decided.recorded, idempotency!.hash);
    const eventId = `evt_${ulid()}`;
    const answer = answerOf(decided.verdicts, eventId);
    const allowed = decided.verdicts.every((v) => v.allowed);
    const entryType = spend.endpoint;
    const ledger = allowed
      ? streamed(
          ledgerEntries(
            { tenantId, eventId, subject: body.subject, body },
            spend.amounts,
            entryType,
          ),
        )
      : undefined;
    const record = idempotency && {
      key: idempotency.key,
      answer: stringifyExact({ hash: idempotency.hash, answer }),
      ttlSeconds: IDEMPOTENCY_TTL_SECONDS,
    };
    const writes = allowed ? fastWrites(decided.verdicts) : [];
    if (writes.length === 0 && !ledger && !record) return answer;
    if (await commitFastStates(redis, writes, eventId, { ledger, idempotency: record }))
      return answer;
  }
  throw quotaError('decision_contended', { retryAfterSeconds: 1 });
}
