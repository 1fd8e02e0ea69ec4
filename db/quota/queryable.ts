import type { DatabasePool, DatabaseTransactionConnection } from 'slonik';

/** A pool or a transaction: what every quota query runs on. */
export type Queryable = Pick<
  DatabasePool | DatabaseTransactionConnection,
  'query' | 'maybeOne' | 'one' | 'any' | 'oneFirst' | 'anyFirst' | 'maybeOneFirst'
>;
