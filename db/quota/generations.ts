import { z } from 'zod';
import { coalesceTextRow, sql } from '../pool';
import { redisKeysScript as script, type Redis } from '../redis';
import { partitionOfKey } from './partitions';
import type { Queryable } from './queryable';

/**
 * The generations of a tenant's catalogue and of a subject's assignment (migration quota/0007):
 * bumped by triggers in every transaction that changes them, compared by each decision with the
 * ones its process's memory was read at (services/quota/catalogue-cache.ts). Decimal strings; '0' when
 * nothing was ever written.
 */
export interface Generations {
  catalogue: string;
  subject: string;
}

export async function catalogueGeneration(db: Queryable, tenantId: string): Promise<string> {
  return db.oneFirst(sql.type(coalesceTextRow)`
    SELECT coalesce((SELECT generation FROM quota.catalogue_generations
                     WHERE tenant_id = ${tenantId}), 0)::text`);
}

/** A subject's assignment and overrides, and their generation, read in one statement. */
export const subjectRow = z.object({
  generation: z.string(),
  plan_id: z.string().nullable(),
  /** json: limit_amount (int8) as text. */
  overrides: z.array(
    z.object({
      policy_id: z.string(),
      limit_amount: z.string().nullable(),
      enabled: z.boolean(),
    }),
  ),
});
export type SubjectRow = z.infer<typeof subjectRow>;

export async function loadSubject(
  db: Queryable,
  tenantId: string,
  subject: string,
): Promise<SubjectRow> {
  return db.one(sql.type(subjectRow)`
    SELECT
      coalesce((SELECT generation FROM quota.subject_generations
                WHERE tenant_id = ${tenantId} AND subject = ${subject}), 0)::text AS generation,
      (SELECT plan_id FROM quota.assignments
       WHERE tenant_id = ${tenantId} AND subject = ${subject}) AS plan_id,
      coalesce((SELECT json_agg(json_build_object('policy_id', policy_id,
                                                  'limit_amount', limit_amount::text,
                                                  'enabled', enabled))
                FROM quota.overrides WHERE tenant_id = ${tenantId} AND subject = ${subject}),
               '[]') AS overrides`);
}

/** Whether a tenant's catalogue and a subject are still at the generations given. */
export async function generationsCurrent(
  db: Queryable,
  tenantId: string,
  subject: string,
  expected: Generations,
): Promise<boolean> {
  return db.oneFirst(sql.type(z.object({ '?column?': z.boolean() }))`
    SELECT coalesce((SELECT generation FROM quota.catalogue_generations
                     WHERE tenant_id = ${tenantId}), 0) = ${expected.catalogue}::bigint
       AND coalesce((SELECT generation FROM quota.subject_generations
                     WHERE tenant_id = ${tenantId} AND subject = ${subject}), 0)
           = ${expected.subject}::bigint`);
}

/**
 * Redis's copies of the generations (keys: db/quota/partitions.ts), for fast-mode decisions to
 * compare in the same script that decides: raised to Postgres's value after every committed
 * change (and by any process that read a newer one there), never lowered, so a copy lost or late
 * is repaired by the next reader.
 */
const RAISE_SCRIPT = `
for i = 1, #KEYS do
  local current = tonumber(redis.call('GET', KEYS[i]) or '0')
  if tonumber(ARGV[i]) > current then redis.call('SET', KEYS[i], ARGV[i]) end
end
return 1`;

/**
 * Raises each key's generation to the value given (left alone when it is already there or past):
 * one script per partition, since a script's keys share a slot.
 */
export async function raiseGenerations(
  redis: Redis,
  generations: { key: string; generation: string }[],
): Promise<void> {
  const raise = script(redis, 'quotaRaiseGenerations', RAISE_SCRIPT, { durable: true });
  const byPartition = new Map<number, { key: string; generation: string }[]>();
  for (const g of generations) {
    const partition = partitionOfKey(g.key);
    byPartition.set(partition, [...(byPartition.get(partition) ?? []), g]);
  }
  await Promise.all(
    [...byPartition.values()].map((group) =>
      raise(group.length, ...group.map((g) => g.key), ...group.map((g) => g.generation)),
    ),
  );
}

/** The generations Redis holds for these keys, all of one partition ('0' for a key it lacks). */
export async function redisGenerations(redis: Redis, keys: string[]): Promise<string[]> {
  return (await redis.mget(...keys)).map((value) => value ?? '0');
}
