import { v7 as uuidv7 } from 'uuid';
import { loadConfig } from '../../../platform/config';
import { DomainError } from '../../../platform/errors';
import { errorResponse } from '../../../api/http/error-response';
import { LEDGER_ERRORS } from '../../../services/ledger/errors';
import { ledgerEnvelope } from '../../../api/ledger/envelope';
import { createDatabasePool, sql, sqlState, type DatabasePool } from '../../../db/pool';
import { withSystem, withTenant, type Tx } from '../../../db/ledger/context';
import { insertTenant } from '../../../db/ledger/tenants';

jest.setTimeout(60_000);

/**
 * The database's own refusals, as db/ledger/context.ts maps them (mapDatabaseError), provoked
 * for real through Postgres with SQL the API never sends: a CHECK constraint, the missing tenant
 * context, row-level security, a data exception, and the sub-tenant depth trigger. Each runs a valid write first in the same
 * transaction, to show that the refusal leaves nothing behind.
 */
describe('ledger database backstops', () => {
  let pool: DatabasePool;
  let tenantA: string;
  let tenantB: string;
  let assetOfA: string;

  const insertTenantRow = (tx: Tx, tenantId: string, parentId: string | null = null) =>
    insertTenant(tx, { tenantId, parentId, name: 'backstop', kind: 'sandbox', contactEmail: null });
  const newTenant = async () => {
    const tenantId = uuidv7();
    await withSystem(pool, (tx) => insertTenantRow(tx, tenantId));
    return tenantId;
  };
  const insertAssetType = (tx: Tx, tenantId: string, assetTypeId = uuidv7()) =>
    tx.query(sql.unsafe`
      INSERT INTO ledger.asset_types (asset_type_id, tenant_id, code, kind, scale)
      VALUES (${assetTypeId}, ${tenantId}, ${`B${assetTypeId}`.slice(0, 64)}, 'fiat', 2)`);
  const insertAccount = (tx: Tx, accountId: string, name: string, normalSide: string | null) =>
    tx.query(sql.unsafe`
      INSERT INTO ledger.accounts (account_id, tenant_id, asset_type_id, name, normal_side)
      VALUES (${accountId}, ${tenantA}, ${assetOfA}, ${name}, ${normalSide})`);
  /** Rows with this id in the table, seen by the system context (every tenant). */
  const rowsWithId = async (table: 'asset_types' | 'accounts', id: string) =>
    Number(
      await withSystem(pool, (tx) =>
        tx.oneFirst(
          table === 'asset_types'
            ? sql.unsafe`SELECT count(*) FROM ledger.asset_types WHERE asset_type_id = ${id}`
            : sql.unsafe`SELECT count(*) FROM ledger.accounts WHERE account_id = ${id}`,
        ),
      ),
    );
  /** What `run` threw or rejected with (a synchronous throw as well). */
  const failureOf = async (run: () => Promise<unknown>): Promise<unknown> => {
    try {
      await run();
    } catch (error) {
      return error;
    }
    throw new Error('expected a refusal, got none');
  };
  const expectRefusal = (
    error: unknown,
    status: number,
    code: string,
    message: string,
    cause?: string,
  ) => {
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({ code, message });
    // Final (no Retry-After) and in the envelope with a constant message, nothing of the cause.
    expect(errorResponse(error as DomainError, LEDGER_ERRORS).headers).toEqual({});
    expect(ledgerEnvelope(error as DomainError)).toEqual({
      status,
      body: { error: { code, message } },
    });
    if (cause !== undefined) expect(sqlState((error as DomainError).cause)).toBe(cause);
  };

  beforeAll(async () => {
    pool = await createDatabasePool(loadConfig(), {
      applicationName: 'ledger-test-backstops',
      maximumPoolSize: 2,
    });
    tenantA = await newTenant();
    tenantB = await newTenant();
    assetOfA = uuidv7();
    await withTenant(pool, tenantA, (tx) => insertAssetType(tx, tenantA, assetOfA));
  });
  afterAll(() => pool?.end());

  it('when a write breaks a CHECK or NOT NULL constraint of a ledger table (an account name of 256 chars, no normal side), then 422 CONSTRAINT_VIOLATION and the transaction writes nothing', async () => {
    const atLimit = uuidv7();
    await withTenant(pool, tenantA, (tx) => insertAccount(tx, atLimit, 'n'.repeat(255), 'debit'));
    expect(await rowsWithId('accounts', atLimit)).toBe(1);

    for (const [name, normalSide, state] of [
      ['n'.repeat(256), 'debit', '23514'],
      ['no side', null, '23502'],
    ] as const) {
      const earlier = uuidv7();
      const refused = uuidv7();
      const error = await failureOf(() =>
        withTenant(pool, tenantA, async (tx) => {
          await insertAssetType(tx, tenantA, earlier);
          await insertAccount(tx, refused, name, normalSide);
        }),
      );
      expectRefusal(
        error,
        422,
        'CONSTRAINT_VIOLATION',
        'a database constraint refused the value',
        state,
      );
      expect(await rowsWithId('accounts', refused)).toBe(0);
      expect(await rowsWithId('asset_types', earlier)).toBe(0);
    }
  });

  it('when a sub-tenant of a sub-tenant is written (the API refuses it first), then the depth trigger refuses it too: 422 INVALID_TENANT, nothing written', async () => {
    const child = uuidv7();
    await withSystem(pool, (tx) => insertTenantRow(tx, child, tenantA));
    const sibling = uuidv7();
    const grandchild = uuidv7();
    const error = await failureOf(() =>
      withSystem(pool, async (tx) => {
        await insertTenantRow(tx, sibling, tenantA);
        await insertTenantRow(tx, grandchild, child);
      }),
    );
    expectRefusal(
      error,
      422,
      'INVALID_TENANT',
      'a sub-tenant cannot have sub-tenants (depth is capped at one)',
      'LD001',
    );
    const written: unknown = await withSystem(pool, (tx) =>
      tx.oneFirst(
        sql.unsafe`SELECT count(*) FROM ledger.tenants WHERE tenant_id IN (${sibling}, ${grandchild})`,
      ),
    );
    expect(Number(written)).toBe(0);
  });

  it('when a tenant transaction is asked for without a tenant id, then 409 TENANT_CONTEXT_REQUIRED and nothing runs', async () => {
    let ran = false;
    const error = await failureOf(() =>
      withTenant(pool, '', () => {
        ran = true;
        return Promise.resolve();
      }),
    );
    expectRefusal(error, 409, 'TENANT_CONTEXT_REQUIRED', 'tenant context missing');
    expect(ran).toBe(false);
  });

  it("when a row carrying another tenant's id is written in a tenant's context, then row-level security refuses it: 403 TENANT_CONTEXT_MISMATCH, nothing written", async () => {
    // An INSERT of tenant B's row in tenant A's context.
    const earlier = uuidv7();
    const foreign = uuidv7();
    const inserted = await failureOf(() =>
      withTenant(pool, tenantA, async (tx) => {
        await insertAssetType(tx, tenantA, earlier);
        await insertAssetType(tx, tenantB, foreign);
      }),
    );
    expectRefusal(
      inserted,
      403,
      'TENANT_CONTEXT_MISMATCH',
      'row outside the tenant context',
      '42501',
    );
    expect(await rowsWithId('asset_types', foreign)).toBe(0);
    expect(await rowsWithId('asset_types', earlier)).toBe(0);

    // An UPDATE that would hand one of A's rows to tenant B.
    const moved = uuidv7();
    await withTenant(pool, tenantA, (tx) => insertAssetType(tx, tenantA, moved));
    const updated = await failureOf(() =>
      withTenant(pool, tenantA, (tx) =>
        tx.query(
          sql.unsafe`UPDATE ledger.asset_types SET tenant_id = ${tenantB} WHERE asset_type_id = ${moved}`,
        ),
      ),
    );
    expectRefusal(
      updated,
      403,
      'TENANT_CONTEXT_MISMATCH',
      'row outside the tenant context',
      '42501',
    );
    const owner: unknown = await withSystem(pool, (tx) =>
      tx.oneFirst(
        sql.unsafe`SELECT tenant_id FROM ledger.asset_types WHERE asset_type_id = ${moved}`,
      ),
    );
    expect(owner).toBe(tenantA);
  });

  const dataException = async (statement: ReturnType<typeof sql.unsafe>) => {
    const earlier = uuidv7();
    const error = await failureOf(() =>
      withTenant(pool, tenantA, async (tx) => {
        await insertAssetType(tx, tenantA, earlier);
        await tx.query(statement);
      }),
    );
    return { error, written: await rowsWithId('asset_types', earlier) };
  };

  it('when a value the database cannot read reaches it (a malformed uuid, an impossible or unreadable timestamp, a NUL character in text), then 422 INVALID_INPUT and nothing written', async () => {
    for (const [statement, state] of [
      [sql.unsafe`SELECT 'not-a-uuid'::uuid`, undefined], // 22P02, rethrown by slonik without it
      [sql.unsafe`SELECT ${'not-a-uuid'}::uuid`, undefined],
      [sql.unsafe`SELECT '2024-13-45T00:00:00Z'::timestamptz`, '22008'],
      [sql.unsafe`SELECT 'soon'::timestamptz`, '22007'],
      [sql.unsafe`SELECT ('"a' || chr(92) || 'u0000b"')::jsonb ->> 0`, '22P05'],
    ] as const) {
      const { error, written } = await dataException(statement);
      expectRefusal(error, 422, 'INVALID_INPUT', 'a value is malformed', state);
      expect(written).toBe(0);
    }
  });

  it("when the ledger's own arithmetic fails (a numeric overflow, a division by zero), then the error is not blamed on the input: it passes through unmapped (500 INTERNAL_ERROR over HTTP), nothing written", async () => {
    for (const [statement, state] of [
      [sql.unsafe`SELECT (10::numeric ^ 38)::numeric(38, 0)`, '22003'],
      [sql.unsafe`SELECT 1 / 0`, '22012'],
    ] as const) {
      const { error, written } = await dataException(statement);
      expect(error).not.toBeInstanceOf(DomainError);
      expect(sqlState(error)).toBe(state);
      expect(written).toBe(0);
    }
  });
});
