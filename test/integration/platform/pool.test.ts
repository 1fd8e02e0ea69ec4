import { loadConfig } from '../../../platform/config';
import { UniqueIntegrityConstraintViolationError } from 'slonik';
import { createDatabasePool, sql, type DatabasePool } from '../../../db/pool';

describe('the database pool', () => {
  let pool: DatabasePool;
  beforeAll(async () => {
    pool = await createDatabasePool(loadConfig(), {
      applicationName: 'pool-test',
      maximumPoolSize: 2,
    });
  });
  afterAll(() => pool?.end());

  it('when a constraint is violated, then the caller gets that error and the pool keeps serving', async () => {
    // slonik also emits such errors on the pool's EventEmitter; unheard, Node would throw them.
    await expect(
      pool.transaction(async (tx) => {
        await tx.query(sql.unsafe`CREATE TEMP TABLE pool_test (id int PRIMARY KEY) ON COMMIT DROP`);
        await tx.query(sql.unsafe`INSERT INTO pool_test VALUES (1)`);
        await tx.query(sql.unsafe`INSERT INTO pool_test VALUES (1)`);
      }),
    ).rejects.toThrow(UniqueIntegrityConstraintViolationError);
    await expect(
      pool.query(sql.unsafe`SELECT * FROM (SELECT NULL::int AS x) v WHERE (SELECT 1 / 0) = 1`),
    ).rejects.toThrow(/division by zero/);
    expect(await pool.oneFirst(sql.unsafe`SELECT 40 + 2`)).toBe(42);
  });

  it('keeps int8 and numeric exact and returns instants as ISO-8601 UTC strings', async () => {
    const row: unknown = await pool.one(sql.unsafe`
      SELECT 9007199254740993::int8 AS big, 12345678901234567890.123::numeric AS dec,
             '2026-11-21 20:01:02.123456+05:30'::timestamptz AS at`);
    expect(row).toEqual({
      big: '9007199254740993',
      dec: '12345678901234567890.123',
      at: '2026-11-21T14:31:02.123Z',
    });
  });
});
