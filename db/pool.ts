import {
  createPool,
  SchemaValidationError,
  sql,
  type DatabasePool,
  type DatabaseTransactionConnection,
  type Interceptor,
} from 'slonik';
import { z } from 'zod';
import { typeParsers } from './type-parsers';

export type { DatabasePool };

/** A transaction's connection: what `pool.transaction` hands its callback. */
export type Tx = DatabaseTransactionConnection;
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

/** A field of the server's error under slonik's wrappers (each keeps the one below as `cause`). */
function serverErrorField(error: unknown, field: 'code' | 'detail'): string | undefined {
  let current: unknown = error;
  for (let depth = 0; current && depth < 5; depth++) {
    const value = (current as Record<string, unknown>)[field];
    if (typeof value === 'string' && (field !== 'code' || /^[0-9A-Z]{5}$/.test(value)))
      return value;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The SQLSTATE of a database error. */
export const sqlState = (error: unknown) => serverErrorField(error, 'code');

/** The DETAIL of a database error (what a trigger attached to its refusal). */
export const sqlDetail = (error: unknown) => serverErrorField(error, 'detail');

/**
 * The database refused the service's own login when the pool opened a connection: 28P01
 * invalid_password, or 28000 (no pg_hba rule, a role that may not log in).
 */
export function isLoginRefused(error: unknown): boolean {
  const state = sqlState(error);
  return state === '28P01' || state === '28000';
}

/**
 * Checks each row of a query made with `sql.type(schema)` against its zod schema and returns what
 * the schema parses (a z.object keeps its own keys, in its own order: list them as the SELECT
 * does); a row that does not conform throws slonik's SchemaValidationError. The schema sees what
 * the type parsers made (type-parsers.ts: int8 and numeric as strings, timestamps as ISO
 * strings). A `sql.unsafe` query carries z.any(): its rows pass untouched, as without this.
 */
export const resultParserInterceptor: Interceptor = {
  name: 'result-parser',
  transformRow: (context, query, row) => {
    const parser = context.resultParser;
    if (!parser || parser instanceof z.ZodAny) return row;
    const parsed = parser.safeParse(row);
    if (!parsed.success) throw new SchemaValidationError(query, row, parsed.error.issues);
    return parsed.data as typeof row;
  },
};

/** The row of a `SELECT 1 …` (a probe, an existence check): its one column, `?column?`. */
export const selectOneRow = z.object({ '?column?': z.number() });

/** The row of a `SELECT count(*)::int …`: its one column, `count`. */
export const countRow = z.object({ count: z.number() });

/** The row of a `SELECT EXISTS (…)`: its one column, `exists`. */
export const existsRow = z.object({ exists: z.boolean() });

/** The row of a `SELECT coalesce(…)::text`: its one column, `coalesce`, as text. */
export const coalesceTextRow = z.object({ coalesce: z.string() });

export interface PoolOptions {
  applicationName: string;
  maximumPoolSize?: number;
  /**
   * How often slonik re-runs a transaction or a lone query that failed with a transaction
   * rollback error (40001 serialization failure, 40P01 deadlock) before throwing it; default 5.
   */
  retryLimit?: number;
}

/** The connection setting that names the writer's task-queue prefix ('' or unset: none). */
export const TASK_QUEUE_PREFIX_SETTING = 'platform.task_queue_prefix';

/** What a pool is made from (platform/config.ts reads it from the environment). */
export interface DatabaseSettings {
  databaseUrl: string;
  databasePoolSize: number;
  databaseStatementTimeoutMs: number;
  /** The writer's task-queue prefix ('' outside tests), set on every connection. */
  taskQueuePrefix: string;
}

/**
 * One slonik pool per process. Connection resets are skipped on release, so session state
 * must never be set with plain SET: use `set_config(..., true)` / SET LOCAL inside a
 * transaction (tenant context for row-level security works that way).
 */
export async function createDatabasePool(
  config: DatabaseSettings,
  options: PoolOptions,
): Promise<DatabasePool> {
  const url = new URL(config.databaseUrl);
  url.searchParams.set('application_name', options.applicationName);
  if (config.taskQueuePrefix !== '') {
    // Rows that ask for a workflow carry the writer's queues (e.g. ledger.hold_outbox), so a
    // process starts only its own deployment's: a test run beside another, a bench beside both.
    const prefix = `-c ${TASK_QUEUE_PREFIX_SETTING}=${config.taskQueuePrefix}`;
    const given = url.searchParams.get('options');
    url.searchParams.set('options', given ? `${given} ${prefix}` : prefix);
  }
  const pool = await createPool(url.toString(), {
    typeParsers,
    interceptors: [resultParserInterceptor],
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
