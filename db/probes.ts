import { z } from 'zod';
import { selectOneRow, sql, type DatabasePool } from './pool';

/**
 * Statements of the health probes, on any service's connection: they read no table, they prove
 * the database answers (db/health.ts, the quota service's /readyz).
 */
type Queryable = Pick<DatabasePool, 'oneFirst'>;

/** `SELECT 1`: the cheapest statement a connection answers. */
export async function selectOne(db: Queryable): Promise<number> {
  return db.oneFirst(sql.type(selectOneRow)`SELECT 1`);
}

/**
 * Takes a transaction id (xid8, as text): the caller's transaction then writes a WAL record at
 * its commit and waits for its flush, so a stalled commit path shows.
 */
export async function takeTransactionId(db: Queryable): Promise<string> {
  return db.oneFirst(
    sql.type(z.object({ pg_current_xact_id: z.string() }))`SELECT pg_current_xact_id()`,
  );
}
