import { sql } from '../pool';
import type { Queryable } from './queryable';

/** A relation tuple, Zanzibar's `object#relation@subject`. */
export interface Tuple {
  object: string;
  relation: string;
  subject: string;
}

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
  return (await db.anyFirst(sql.unsafe`
    SELECT relation FROM quota.authz_tuples WHERE object = ${object} AND subject = ${subject}
    ORDER BY relation`)) as string[];
}

/** Every subject's relations on an object (a tenant's keys and their scopes). */
export async function relationsOn(db: Queryable, object: string): Promise<Tuple[]> {
  return (await db.any(sql.unsafe`
    SELECT object, relation, subject FROM quota.authz_tuples WHERE object = ${object}
    ORDER BY subject, relation`)) as Tuple[];
}
