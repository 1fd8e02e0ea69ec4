import { createPool, sql, type DatabasePool } from 'slonik';
import type { Config } from '../api/platform/config';
import { typeParsers } from './type-parsers';

export type { DatabasePool };
export { sql } from 'slonik';

/**
 * A bytea[] parameter, sent as '\x…' text cast to bytea: slonik refuses a null member of a
 * bytea array (a request without a usable Idempotency-Key has no hash).
 */
export const byteaArray = (values: (Buffer | null)[]) =>
  sql.fragment`${sql.array(
    values.map((v) => (v === null ? null : `\\x${v.toString('hex')}`)),
    'text',
  )}::bytea[]`;

export interface PoolOptions {
  applicationName: string;
  maximumPoolSize?: number;
  /**
   * How often slonik re-runs a transaction or a lone query that failed with a transaction
   * rollback error (40001 serialization failure, 40P01 deadlock) before throwing it; default 5.
   */
  retryLimit?: number;
}

/**
 * One slonik pool per process. Connection resets are skipped on release, so session state
 * must never be set with plain SET: use `set_config(..., true)` / SET LOCAL inside a
 * transaction (tenant context for row-level security works that way).
 */
export async function createDatabasePool(
  config: Config,
  options: PoolOptions,
): Promise<DatabasePool> {
  const url = new URL(config.databaseUrl);
  url.searchParams.set('application_name', options.applicationName);
  const pool = await createPool(url.toString(), {
    typeParsers,
    maximumPoolSize: options.maximumPoolSize ?? config.databasePoolSize,
    statementTimeout: config.databaseStatementTimeoutMs,
    idleInTransactionSessionTimeout: config.databaseStatementTimeoutMs * 2,
    connectionTimeout: 2_000,
    connectionRetryLimit: 1,
    captureStackTrace: false,
    resetConnection: async () => {},
    ...(options.retryLimit === undefined
      ? {}
      : { transactionRetryLimit: options.retryLimit, queryRetryLimit: options.retryLimit }),
  });
  // slonik emits every query error on the pool as well as throwing it to the caller; with no
  // listener Node would turn a routine unique violation into ERR_UNHANDLED_ERROR. Callers
  // handle the thrown error, so the event needs no action.
  pool.on('error', () => {});
  return pool;
}
