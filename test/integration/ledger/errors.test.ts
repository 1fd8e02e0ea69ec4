/* eslint-disable @typescript-eslint/no-unsafe-member-access -- JSON replies in tests */
import { loadConfig } from '../../../platform/config';
import { createDatabasePool, sql } from '../../../db/pool';
import { withSystem, withTenant } from '../../../db/ledger/context';
import { ledgerEnvelope } from '../../../api/ledger/envelope';
import type { DomainError } from '../../../platform/errors';
import { errorResponse } from '../../../api/http/error-response';
import { LEDGER_ERRORS } from '../../../services/ledger/errors';
import { LedgerHarness, newKey, transfer, type TenantClients } from './support';

jest.setTimeout(60_000);

/**
 * Error codes the ledger maps but no route reaches in normal use, each provoked for real in the
 * database (no mocks): an unmapped database error, a deadlock, and the immutable-field trigger.
 */
describe('ledger errors provoked in the database', () => {
  const h = new LedgerHarness();
  let t: TenantClients;
  beforeAll(async () => {
    await h.start();
    t = await h.tenant();
  });
  afterAll(() => h.stop());

  it('when the database fails in a way the ledger does not map (numeric overflow of a counter), then 500 INTERNAL_ERROR with a constant message and nothing of the cause, nothing written, and the key free for a retry', async () => {
    const units = await h.assetType(t, 0);
    const source = await h.account(t, units, { normal_side: 'credit', balance_floor: null });
    const wallet = await h.account(t, units);
    const max = '9'.repeat(38); // the largest amount numeric(38,0) holds
    expect((await t.poster.post('/v1/transactions', transfer(source, wallet, max))).status).toBe(
      201,
    );
    const key = newKey();
    const overflow = await t.poster.post('/v1/transactions', transfer(source, wallet, max), key);
    expect(overflow.status).toBe(500);
    expect(overflow.body).toEqual({ error: { code: 'INTERNAL_ERROR', message: 'internal error' } });
    expect(JSON.stringify(overflow.body)).not.toMatch(/numeric|overflow|ledger\./);
    const balance = await t.reader.get(`/v1/accounts/${wallet}/balance`);
    expect(balance.body.posted.debits_minor).toBe(max);
    // A 500 is transient: the key was released, so the retry runs again instead of replaying.
    const retry = await t.poster.post('/v1/transactions', transfer(source, wallet, max), key);
    expect(retry.status).toBe(500);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
  });

  it("when two transactions deadlock and the database aborts one, then it is 409 CONFLICT_RETRY with Retry-After (with slonik's own retries off: they re-run a deadlocked posting up to 5 times first)", async () => {
    const usd = await h.assetType(t);
    const [first, second] = [
      await h.account(t, usd, { balance_floor: null }),
      await h.account(t, usd, { balance_floor: null }),
    ].sort();
    const pool = await createDatabasePool(loadConfig(), {
      applicationName: 'ledger-test-deadlock',
      maximumPoolSize: 2,
      retryLimit: 0,
    });
    const lock = (accountId: string) => sql.unsafe`
      SELECT 1 FROM ledger.balances WHERE account_id = ${accountId} FOR UPDATE`;
    try {
      // Each holds one row and then, once both hold theirs, asks for the other's: a cycle the
      // database must break (a sleep instead of the barrier let a slow first connection miss it).
      let holding = 0;
      let bothHold!: () => void;
      const barrier = new Promise<void>((resolve) => (bothHold = resolve));
      const crossing = (mine: string, theirs: string) =>
        withTenant(pool, t.tenantId, async (tx) => {
          await tx.query(lock(mine));
          if (++holding === 2) bothHold();
          await barrier;
          await tx.query(lock(theirs));
        });
      const outcomes = await Promise.allSettled([
        crossing(first!, second!),
        crossing(second!, first!),
      ]);
      const refused = outcomes.filter((o) => o.status === 'rejected');
      expect(refused).toHaveLength(1);
      const error = (refused[0] as PromiseRejectedResult).reason as DomainError;
      expect(error).toMatchObject({ code: 'CONFLICT_RETRY' });
      expect(errorResponse(error, LEDGER_ERRORS)).toEqual({
        status: 409,
        headers: { 'Retry-After': '1' },
      });
      expect(ledgerEnvelope(error).body).toEqual({
        error: { code: 'CONFLICT_RETRY', message: 'concurrent update; retry' },
      });
    } finally {
      await pool.end();
    }
  });

  it('when an immutable field is targeted in the database (a tenant kind), then the trigger refuses with 409 IMMUTABLE_VIOLATION in the envelope', async () => {
    const error = (await withSystem(h.pool, (tx) =>
      tx.query(
        sql.unsafe`UPDATE ledger.tenants SET kind = 'production' WHERE tenant_id = ${t.tenantId}`,
      ),
    ).catch((e: unknown) => e)) as DomainError;
    expect(error).toMatchObject({ code: 'IMMUTABLE_VIOLATION' });
    expect(ledgerEnvelope(error)).toEqual({
      status: 409,
      body: {
        error: { code: 'IMMUTABLE_VIOLATION', message: 'an immutable field was targeted' },
      },
    });
    const kind: unknown = await withSystem(h.pool, (tx) =>
      tx.oneFirst(sql.unsafe`SELECT kind FROM ledger.tenants WHERE tenant_id = ${t.tenantId}`),
    );
    expect(kind).toBe('sandbox');
  });
});
