import { z } from 'zod';
import { sql } from '../pool';
import type { Queryable } from './queryable';

/** A relation tuple, Zanzibar's `object#relation@subject`. */
export const tuple = z.object({
  object: z.string(),
  relation: z.string(),
  subject: z.string(),
});
export type Tuple = z.infer<typeof tuple>;

/** Writes tuples; one already there is left as it is (a retried write is harmless). */
export async function writeTuples(db: Queryable, tuples: Tuple[]): Promise<void> {
  if (tuples.length === 0) return;
  await db.query(sql.unsafe`
    INSERT INTO quota.authz_tuples (object, relation, subject)
    SELECT * FROM unnest(${sql.array(
      tuples.map((t) => t.object),
      'text',
    )},
                         ${sql.array(
                           tuples.map((t) => t.relation),
                           'text',
                         )},
                         ${sql.array(
                           tuples.map((t) => t.subject),
                           'text',
                         )})
    ON CONFLICT DO NOTHING`);
}

/** Deletes every tuple of a subject on an object. */
export async function deleteTuples(db: Queryable, object: string, subject: string): Promise<void> {
  await db.query(sql.unsafe`
    DELETE FROM quota.authz_tuples WHERE object = ${object} AND subject = ${subject}`);
}

/** The relations a subject has on an object. */
export async function relationsOf(
  db: Queryable,
  object: string,
  subject: string,
): Promise<string[]> {
  const relations = await db.anyFirst(sql.type(z.object({ relation: z.string() }))`
    SELECT relation FROM quota.authz_tuples WHERE object = ${object} AND subject = ${subject}
    ORDER BY relation`);
  return [...relations];
}

/** Every subject's relations on an object (a tenant's keys and their scopes). */
export async function relationsOn(db: Queryable, object: string): Promise<readonly Tuple[]> {
  return db.any(sql.type(tuple)`
    SELECT object, relation, subject FROM quota.authz_tuples WHERE object = ${object}
    ORDER BY subject, relation`);
}
