import { z } from 'zod';
import { coalesceTextRow, sql } from '../pool';
import type { PolicyRow } from './catalogue';
import type { Queryable } from './queryable';

/** A policy as it governs one subject: its row, its resource's name, the subject's override. */
export interface EffectivePolicyRow extends PolicyRow {
  resource: string;
  /** The override's limit (a quota's limit_amount, a rate limit's bucket_capacity), if any. */
  limit_override: string | null;
  source: 'plan' | 'override';
}

/**
 * Serializes the strict decisions of one subject under one policy until the transaction ends
 * (db/quota/functions/lock_subject_policy.sql: why, and the order every path takes them in).
 */
export async function lockSubjectPolicy(
  db: Queryable,
  key: { tenantId: string; subject: string; policyId: string },
): Promise<void> {
  await db.query(
    sql.unsafe`SELECT quota.lock_subject_policy(${key.tenantId}, ${key.subject}, ${key.policyId})`,
  );
}

/** quota.lock_counter's answer: the window's usage, a decimal string (text). */
const lockCounterRow = z.object({ lock_counter: z.string() });

/**
 * A strict quota policy's usage in a window, under lockSubjectPolicy: its current counter row
 * (made at 0 if missing) and, for a rolling window, the other buckets it covers (`otherKeys`), in
 * one round trip (db/quota/functions/lock_counter.sql).
 */
export async function lockCounter(
  db: Queryable,
  key: {
    tenantId: string;
    subject: string;
    policyId: string;
    windowKey: string;
    expiresAt: string | null;
  },
  otherKeys: string[] = [],
): Promise<string> {
  return db.oneFirst(sql.type(lockCounterRow)`
    SELECT quota.lock_counter(${key.tenantId}, ${key.subject}, ${key.policyId}, ${key.windowKey},
                              ${key.expiresAt}, ${sql.array([key.windowKey, ...otherKeys], 'text')})`);
}

/** A window's usage, read without a lock or a write (the usage and entitlements routes). */
export async function readCounter(
  db: Queryable,
  key: { tenantId: string; subject: string; policyId: string },
  windowKeys: string[],
): Promise<string> {
  return db.oneFirst(sql.type(coalesceTextRow)`
    SELECT coalesce(sum(used), 0)::text FROM quota.counters
    WHERE tenant_id = ${key.tenantId} AND subject = ${key.subject} AND policy_id = ${key.policyId}
      AND window_key = ANY(${sql.array(windowKeys, 'text')})`);
}

export async function addToCounter(
  db: Queryable,
  key: { tenantId: string; subject: string; policyId: string; windowKey: string },
  amount: bigint,
): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE quota.counters SET used = greatest(0, used + ${amount.toString()}::numeric)
    WHERE tenant_id = ${key.tenantId} AND subject = ${key.subject} AND policy_id = ${key.policyId}
      AND window_key = ${key.windowKey}`);
}

/** A token bucket's row, exact: numeric tokens and int8 updated_ms as text. */
export const bucketRow = z.object({
  tokens: z.string(),
  updated_ms: z.string(),
});
export type BucketRow = z.infer<typeof bucketRow>;

/**
 * A strict token bucket's row under lockSubjectPolicy, in one round trip
 * (db/quota/functions/lock_bucket.sql); null: none yet (a full bucket).
 */
export async function lockBucket(
  db: Queryable,
  key: { tenantId: string; subject: string; policyId: string },
): Promise<BucketRow | null> {
  return db.maybeOne(sql.type(bucketRow)`
    SELECT * FROM quota.lock_bucket(${key.tenantId}, ${key.subject}, ${key.policyId})`);
}

/** A token bucket's row as it is; null: none yet (a full bucket). */
export async function readBucket(
  db: Queryable,
  key: { tenantId: string; subject: string; policyId: string },
): Promise<BucketRow | null> {
  return db.maybeOne(sql.type(bucketRow)`
    SELECT tokens::text, updated_ms::text FROM quota.buckets
    WHERE tenant_id = ${key.tenantId} AND subject = ${key.subject} AND policy_id = ${key.policyId}`);
}

export async function saveBucket(
  db: Queryable,
  key: { tenantId: string; subject: string; policyId: string },
  state: { tokens: string; updatedMs: string },
): Promise<void> {
  await db.query(sql.unsafe`
    INSERT INTO quota.buckets (tenant_id, subject, policy_id, tokens, updated_ms)
    VALUES (${key.tenantId}, ${key.subject}, ${key.policyId}, ${state.tokens}::numeric, ${state.updatedMs}::bigint)
    ON CONFLICT (tenant_id, subject, policy_id)
    DO UPDATE SET tokens = excluded.tokens, updated_ms = excluded.updated_ms`);
}

export interface LedgerEntryInput {
  tenantId: string;
  eventId: string;
  subject: string;
  resource: string | null;
  amount: bigint;
  entryType: 'consume' | 'refund' | 'reserve' | 'commit' | 'release' | 'expire';
  idempotencyKey: string | null;
  reservationId: string | null;
  strictDeferred: boolean;
  metadata: Record<string, unknown> | null;
  occurredAt: string;
}

/** Appends entries; one already written (the same event, resource and type) is left alone. */
export async function appendLedger(db: Queryable, entries: LedgerEntryInput[]): Promise<void> {
  if (entries.length === 0) return;
  const column = <T>(pick: (e: LedgerEntryInput) => T) => entries.map(pick);
  await db.query(sql.unsafe`
    INSERT INTO quota.ledger_entries
      (tenant_id, event_id, subject, resource, amount, entry_type, idempotency_key, reservation_id,
       strict_deferred, metadata, occurred_at)
    SELECT * FROM unnest(
      ${sql.array(
        column((e) => e.tenantId),
        'text',
      )}, ${sql.array(
        column((e) => e.eventId),
        'text',
      )},
      ${sql.array(
        column((e) => e.subject),
        'text',
      )}, ${sql.array(
        column((e) => e.resource),
        'text',
      )},
      ${sql.array(
        column((e) => e.amount.toString()),
        'int8',
      )}, ${sql.array(
        column((e) => e.entryType),
        'text',
      )},
      ${sql.array(
        column((e) => e.idempotencyKey),
        'text',
      )}, ${sql.array(
        column((e) => e.reservationId),
        'text',
      )},
      ${sql.array(
        column((e) => e.strictDeferred),
        'bool',
      )},
      ${sql.array(
        column((e) => (e.metadata === null ? null : JSON.stringify(e.metadata))),
        'jsonb',
      )},
      ${sql.array(
        column((e) => e.occurredAt),
        'timestamptz',
      )})
    ON CONFLICT (event_id, resource, entry_type) DO NOTHING`);
}

/** A strict quota policy as decide_strict_quotas takes it (amounts as decimal strings). */
export interface StrictQuotaInput {
  policy_id: string;
  window_key: string;
  window_keys: string[];
  expires_at: string | null;
  requested: string;
  limit: string;
  allow_overage: boolean;
  thresholds: string[];
}

const strictQuotasReply = z.discriminatedUnion('status', [
  z.object({ status: z.literal('moved') }),
  z.object({ status: z.literal('crossing') }),
  z.object({ status: z.literal('decided'), allowed: z.boolean(), used: z.array(z.string()) }),
  /** The key's answer as recorded (`response`: its JSON text) under the request hash `hash`. */
  z.object({ status: z.literal('recorded'), hash: z.string(), response: z.string() }),
]);
export type StrictQuotasReply = z.infer<typeof strictQuotasReply>;

/** quota.decide_strict_quota_batch's answer (jsonb): the requests' answers, in order. */
const strictQuotaBatchRow = z.object({
  decide_strict_quota_batch: z.array(strictQuotasReply),
});

/** A strict consume as decide_strict_quota_batch takes it. */
export interface StrictQuotasRequest {
  tenantId: string;
  subject: string;
  generations: { catalogue: string; subject: string };
  policies: StrictQuotaInput[];
  ledger: LedgerEntryInput[];
  /**
   * The request's idempotency key on consume, its request hash (hex), and what a decision
   * records under it besides the usage it read (from which its answer is made again).
   */
  idempotency?: { key: string; hash: string; record: object };
}

/** A request of a batch as the SQL functions read it. */
const requestJson = (
  r: Omit<StrictQuotasRequest, 'ledger' | 'policies'> & { policies: unknown },
) => ({
  tenant_id: r.tenantId,
  subject: r.subject,
  catalogue_generation: r.generations.catalogue,
  subject_generation: r.generations.subject,
  policies: r.policies,
});

const ledgerJson = (entries: LedgerEntryInput[]) =>
  entries.map((e) => ({
    tenant_id: e.tenantId,
    event_id: e.eventId,
    subject: e.subject,
    resource: e.resource,
    amount: e.amount.toString(),
    entry_type: e.entryType,
    idempotency_key: e.idempotencyKey,
    reservation_id: e.reservationId,
    metadata: e.metadata,
    occurred_at: e.occurredAt,
  }));

/**
 * Strict consumes that arrived together (or one alone), each decided as decide_strict_quotas.sql decides it, in one
 * statement (db/quota/functions/decide_strict_quota_batch.sql); their answers in order.
 */
export async function decideStrictQuotaBatch(
  db: Queryable,
  requests: StrictQuotasRequest[],
): Promise<StrictQuotasReply[]> {
  const batch = requests.map((r) => ({
    ...requestJson(r),
    ledger: ledgerJson(r.ledger),
    idempotency: r.idempotency,
  }));
  return db.oneFirst(sql.type(strictQuotaBatchRow)`
    SELECT quota.decide_strict_quota_batch(${JSON.stringify(batch)}::jsonb)`);
}

/** A strict check as read_strict_quotas takes it. */
export interface StrictReadRequest extends Omit<StrictQuotasRequest, 'policies' | 'ledger'> {
  policies: { policy_id: string; window_keys: string[] }[];
}

const strictReadReply = z.discriminatedUnion('status', [
  z.object({ status: z.literal('moved') }),
  z.object({ status: z.literal('read'), used: z.array(z.string()) }),
]);
export type StrictReadReply = z.infer<typeof strictReadReply>;

/** quota.read_strict_quotas's answer (jsonb): the checks' answers, in order. */
const strictReadRow = z.object({ read_strict_quotas: z.array(strictReadReply) });

/**
 * Strict checks' usage read in one statement (db/quota/functions/read_strict_quotas.sql), each
 * with its generations checked; their answers in order.
 */
export async function readStrictQuotas(
  db: Queryable,
  requests: StrictReadRequest[],
): Promise<StrictReadReply[]> {
  const batch = requests.map(requestJson);
  return db.oneFirst(sql.type(strictReadRow)`
    SELECT quota.read_strict_quotas(${JSON.stringify(batch)}::jsonb)`);
}
