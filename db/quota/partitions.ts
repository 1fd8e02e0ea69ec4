import { crc32 } from 'node:zlib';

/**
 * Fast mode's Redis keys live in PARTITIONS partitions, each a hash tag (`{q<n>}`): a Redis
 * Cluster keeps each partition in one slot, so everything one decision touches (the subject's
 * states, its generations' copies, its idempotency record, the ledger stream it appends to) is
 * on one master, and the partitions spread the tenants' subjects over all the masters. A
 * subject's partition is a hash of its tenant and name; the number is fixed for good, since a
 * subject's state is found by it (a new number would lose every window's usage).
 */
export const PARTITIONS = 64;
export const ALL_PARTITIONS: readonly number[] = Array.from({ length: PARTITIONS }, (_, p) => p);

const partitionOf = (text: string) => crc32(text) % PARTITIONS;
const tag = (partition: number) => `{q${partition}}`;

/** The partition of a tenant's subject. */
export const subjectPartition = (tenantId: string, subject: string): number =>
  partitionOf(`${tenantId}\n${subject}`);

/** The partition whose copy of a tenant's catalogue generation a read that names no subject checks. */
export const tenantPartition = (tenantId: string): number => partitionOf(tenantId);

/** One policy's state for one subject. */
export const fastStateKey = (tenantId: string, policyId: string, subject: string) =>
  `fast:${tag(subjectPartition(tenantId, subject))}:${tenantId}:${policyId}:${subject}`;

/** An idempotency key's decision record, beside the state it decided (the subject's partition). */
export const fastIdempotencyKey = (
  tenantId: string,
  endpoint: string,
  key: string,
  subject: string,
) => `idem:${tag(subjectPartition(tenantId, subject))}:${tenantId}:${endpoint}:${key}`;

/**
 * The body an idempotency key was first used with (its hash), in the key's own partition: found
 * whatever subject a reused key names, so another body is refused even on another subject.
 */
export const fastIdempotencyBodyKey = (tenantId: string, endpoint: string, key: string) =>
  `idem-body:${tag(partitionOf(`${tenantId}\n${endpoint}\n${key}`))}:${tenantId}:${endpoint}:${key}`;

/** A partition's copy of a tenant's catalogue generation (each partition has one). */
export const catalogueGenerationKey = (tenantId: string, partition: number) =>
  `generation:${tag(partition)}:${tenantId}`;

/** Redis's copy of a subject's generation, in the subject's partition. */
export const subjectGenerationKey = (tenantId: string, subject: string) =>
  `generation:${tag(subjectPartition(tenantId, subject))}:${tenantId}:${subject}`;

/** A partition's write-ahead stream of ledger entries (the ledger-flush job moves each to Postgres). */
export const ledgerStreamKey = (partition: number) => `ledger-stream:${tag(partition)}`;

/** The partition a key of this module belongs to (its hash tag). */
export function partitionOfKey(key: string): number {
  const found = /\{q(\d+)\}/.exec(key);
  if (!found) throw new Error(`not a partitioned key: ${key}`);
  return Number(found[1]);
}
