import fc from 'fast-check';
import { v7 as uuidv7 } from 'uuid';
import { sql } from '../../../db/pool';
import { LOCK_TIMEOUT_MS, withSystem, withTenant } from '../../../db/ledger/context';
import { insertAccount, insertAssetType, updateAccount } from '../../../db/ledger/accounts';
import { insertTenant } from '../../../db/ledger/tenants';
import {
  postTransaction,
  postTransactions,
  type PostingResult,
} from '../../../db/ledger/transactions';
import { LedgerHarness, postingCall } from './support';

jest.setTimeout(180_000);

/**
 * A batch of postings (ledger.post_transactions) must give every posting exactly what posting
 * them alone, one after the other, gives: the same result, the same counters after. Migration
 * 0012 answers a batch set-based when nothing in it is refused and hands it to the one-by-one
 * loop otherwise; this property runs random batches (floors reached and breached by earlier
 * postings of the same batch, holds, frozen accounts, async accounts, bad amounts, unbalanced
 * postings) in one tenant as a batch and in a twin tenant posting by posting, and compares.
 */
describe('ledger batch of postings = the same postings one by one', () => {
  const h = new LedgerHarness();
  beforeAll(() => h.start());
  afterAll(() => h.stop());

  const NAMES = ['floored', 'floored2', 'open', 'async', 'frozen'] as const;
  type Name = (typeof NAMES)[number];

  /**
   * A tenant with one account of each kind, the floored ones funded with 10.00; made in the
   * database directly (the API's own paths are not under test here, and 80 of them are needed).
   */
  async function world(): Promise<{ tenantId: string; usd: string; ids: Record<Name, string> }> {
    const tenantId = uuidv7();
    const usd = uuidv7();
    const ids = Object.fromEntries(NAMES.map((n) => [n, uuidv7()])) as Record<Name, string>;
    await withSystem(h.pool, (tx) =>
      insertTenant(tx, {
        tenantId,
        parentId: null,
        name: 'twin',
        kind: 'sandbox',
        contactEmail: null,
      }),
    );
    await withTenant(h.pool, tenantId, async (tx) => {
      await insertAssetType(tx, {
        assetTypeId: usd,
        tenantId,
        code: 'USD',
        kind: 'fiat',
        scale: 2,
        description: null,
      });
      const open = (
        name: Name,
        normalSide: 'debit' | 'credit',
        floorMinor: bigint | null,
        tracking: 'sync' | 'async' = 'sync',
      ) =>
        insertAccount(tx, {
          accountId: ids[name],
          tenantId,
          assetTypeId: usd,
          name,
          normalSide,
          floorMinor,
          tracking,
          metadata: {},
        });
      await open('floored', 'debit', 0n);
      await open('floored2', 'credit', 0n);
      await open('open', 'debit', null);
      await open('async', 'debit', null, 'async');
      await open('frozen', 'debit', null);
      await updateAccount(tx, ids.frozen, { status: 'frozen' });
    });
    for (const [to, direction] of [
      [ids.floored, 'debit'],
      [ids.floored2, 'credit'],
    ] as const) {
      const funded = await postTransaction(
        h.pool,
        postingCall(tenantId, [
          { accountId: to, direction, amount: '10.00' },
          {
            accountId: ids.open,
            direction: direction === 'debit' ? 'credit' : 'debit',
            amount: '10.00',
          },
        ]),
      );
      if (!('body' in funded)) throw new Error(`funding: ${JSON.stringify(funded)}`);
    }
    return { tenantId, usd, ids };
  }

  interface Leg {
    account: Name;
    direction: 'debit' | 'credit';
    amount: string;
  }

  const amount = fc.oneof(
    { weight: 12, arbitrary: fc.constantFrom('0.01', '1.00', '2.50', '4.00', '6.00', '9.99') },
    { weight: 1, arbitrary: fc.constantFrom('1.001', '0', '-1.00', 'x') },
  );
  const account = fc.constantFrom<Name>(
    'floored',
    'floored',
    'floored2',
    'floored2',
    'open',
    'async',
    'frozen',
  );
  const transfer = fc
    .record({ from: account, to: account, amount, other: amount, unbalanced: fc.nat(9) })
    .map(({ from, to, amount: a, other, unbalanced }): Leg[] => [
      { account: to, direction: 'debit', amount: a },
      { account: from, direction: 'credit', amount: unbalanced === 0 ? other : a },
    ]);
  const pending = fc.nat(3).map((n) => n === 0);
  /** Anything: most batches of a few postings hold a refusal. */
  const mixedBatch = fc.array(fc.record({ legs: transfer, pending }), {
    minLength: 1,
    maxLength: 12,
  });
  /**
   * Nothing refused: active accounts, good amounts, balanced, and at most 8 postings of at most
   * 1.00, which no floored account (funded with 10.00) can fall below its floor from.
   */
  const cleanBatch = fc.array(
    fc.record({
      legs: fc
        .record({
          from: fc.constantFrom<Name>('floored', 'floored2', 'open', 'async'),
          to: fc.constantFrom<Name>('floored', 'floored2', 'open', 'async'),
          amount: fc.constantFrom('0.01', '0.50', '1.00'),
        })
        .map(({ from, to, amount: a }): Leg[] => [
          { account: to, direction: 'debit', amount: a },
          { account: from, direction: 'credit', amount: a },
        ]),
      pending,
    }),
    { minLength: 1, maxLength: 8 },
  );
  const batch = fc.oneof(mixedBatch, cleanBatch);

  /** Results and counters with every id replaced by its account's name (the twins differ). */
  async function observe(
    w: { tenantId: string; usd: string; ids: Record<Name, string> },
    results: PostingResult[],
  ): Promise<unknown> {
    let text = JSON.stringify(results);
    for (const name of NAMES) text = text.replaceAll(w.ids[name], name);
    text = text.replaceAll(w.usd, 'usd');
    const named = (JSON.parse(text) as PostingResult[]).map((r) =>
      'body' in r
        ? {
            state: r.body.state,
            accounts: [...r.body.accounts].sort((a, b) => a.account_id.localeCompare(b.account_id)),
          }
        : r,
    );
    const counters = (await withSystem(h.pool, (tx) =>
      tx.any(sql.unsafe`
        SELECT b.account_id, b.posted_debits::text, b.posted_credits::text, b.pending_debits::text,
               b.pending_credits::text, b.version
        FROM ledger.balances b JOIN ledger.accounts a USING (account_id)
        WHERE a.tenant_id = ${w.tenantId} AND a.balance_tracking = 'sync'`),
    )) as ({ account_id: string } & Record<string, unknown>)[];
    const byName: Record<string, unknown> = Object.fromEntries(
      counters.map(({ account_id, ...rest }) => [
        NAMES.find((n) => w.ids[n] === account_id) ?? account_id,
        rest,
      ]),
    );
    const journal = (await withSystem(h.pool, (tx) =>
      tx.oneFirst(
        sql.unsafe`SELECT count(*)::int FROM ledger.entries
                   WHERE account_id = ANY (${sql.array(Object.values(w.ids), 'uuid')})`,
      ),
    )) as number;
    return { results: named, counters: byName, journal };
  }

  it('gives every posting of a random batch the result and counters of posting it alone in order', async () => {
    let batchesAllAccepted = 0;
    let batchesWithRefusals = 0;
    await fc.assert(
      fc.asyncProperty(batch, async (postings) => {
        const [batched, alone] = [await world(), await world()];
        const calls = (w: typeof batched) =>
          postings.map((p) =>
            postingCall(
              w.tenantId,
              p.legs.map((l) => ({
                accountId: w.ids[l.account],
                direction: l.direction,
                amount: l.amount,
              })),
              {
                pending: p.pending,
                expiresAt: p.pending ? new Date(Date.now() + 3_600_000).toISOString() : null,
              },
            ),
          );
        const batchResults = await postTransactions(
          h.pool,
          batched.tenantId,
          `${LOCK_TIMEOUT_MS}ms`,
          calls(batched),
        );
        const aloneResults = [];
        for (const c of calls(alone)) aloneResults.push(await postTransaction(h.pool, c));
        if (batchResults.every((r) => 'body' in r)) batchesAllAccepted++;
        else batchesWithRefusals++;
        expect(await observe(batched, batchResults)).toEqual(await observe(alone, aloneResults));
      }),
      { numRuns: 40 },
    );
    // Both ways through post_transactions were taken (the property means little otherwise).
    expect(batchesAllAccepted).toBeGreaterThan(3);
    expect(batchesWithRefusals).toBeGreaterThan(3);
  });
});
