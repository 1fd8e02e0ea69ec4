import { sweepInBatches } from '../../../activities/ledger/holds';
import type { DueHold } from '../../../db/ledger/transactions';

const holds = (n: number): DueHold[] =>
  Array.from({ length: n }, (_, i) => ({
    transaction_id: `t${String(i).padStart(3, '0')}`,
    tenant_id: 'tenant',
    expires_at: `2026-01-01 00:00:${String(i).padStart(2, '0')}+00`,
  }));

/** The database's keyset read over `due` (already in (expires_at, transaction_id) order). */
const reader = (due: DueHold[], reads: (string | null)[]) => {
  return (after: DueHold | null, limit: number) => {
    reads.push(after?.transaction_id ?? null);
    const from = after ? due.findIndex((h) => h.transaction_id === after.transaction_id) + 1 : 0;
    return Promise.resolve(due.slice(from, from + limit));
  };
};

describe('the hold sweep', () => {
  it('pages past a full batch until no hold is due, each read after the last hold of the one before', async () => {
    const due = holds(7);
    const reads: (string | null)[] = [];
    const expired: string[] = [];
    const result = await sweepInBatches({
      readDue: reader(due, reads),
      expire: (h) => (expired.push(h.transaction_id), Promise.resolve('expired')),
      batchMax: 3,
      budgetMs: 60_000,
    });
    expect(result).toEqual({ expired: 7, failed: 0, more: false });
    expect(expired).toEqual(due.map((h) => h.transaction_id));
    expect(reads).toEqual([null, 't002', 't005']);
  });

  it('counts only holds it expired itself (one already final is not counted)', async () => {
    const result = await sweepInBatches({
      readDue: reader(holds(3), []),
      expire: (h) => Promise.resolve(h.transaction_id === 't001' ? 'committed' : 'expired'),
      batchMax: 10,
      budgetMs: 60_000,
    });
    expect(result).toEqual({ expired: 2, failed: 0, more: false });
  });

  it('passes over a hold whose expiry fails, and still sweeps every hold behind it', async () => {
    const failures: string[] = [];
    const result = await sweepInBatches({
      readDue: reader(holds(5), []),
      expire: (h) =>
        h.transaction_id === 't000'
          ? Promise.reject(new Error('poison'))
          : Promise.resolve('expired'),
      batchMax: 2,
      budgetMs: 60_000,
      onFailure: (h) => failures.push(h.transaction_id),
    });
    expect(result).toEqual({ expired: 4, failed: 1, more: false });
    expect(failures).toEqual(['t000']);
  });

  it('fails as a whole when every hold of a batch fails (the database, not a hold), for Temporal to retry', async () => {
    await expect(
      sweepInBatches({
        readDue: reader(holds(4), []),
        expire: () => Promise.reject(new Error('connection refused')),
        batchMax: 2,
        budgetMs: 60_000,
      }),
    ).rejects.toThrow('connection refused');
  });

  it('starts no batch past its budget and says more are due', async () => {
    let clock = 0;
    const reads: (string | null)[] = [];
    const result = await sweepInBatches({
      readDue: reader(holds(10), reads),
      expire: () => ((clock += 1), Promise.resolve('expired')),
      batchMax: 3,
      budgetMs: 5,
      now: () => clock,
    });
    // 3 holds (3 ms), under budget: a second batch; 6 ms: past it, stop.
    expect(result).toEqual({ expired: 6, failed: 0, more: true });
    expect(reads).toEqual([null, 't002']);
  });

  it('answers at once when nothing is due', async () => {
    const result = await sweepInBatches({
      readDue: reader([], []),
      expire: () => Promise.reject(new Error('not called')),
      batchMax: 3,
      budgetMs: 5,
    });
    expect(result).toEqual({ expired: 0, failed: 0, more: false });
  });
});
