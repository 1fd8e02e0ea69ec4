import type { ChildProcess } from 'node:child_process';
import { ulid } from 'ulid';
import { sql } from '../../../db/pool';
import { withSystem } from '../../../db/ledger/context';
import { meteringKeys, startQuotaProcess } from '../../support/platform-metering';
import { replayUnmeteredCalls } from '../../../services/ledger/metering-replay';
import { freePort, stopProcessGroup } from '../../support/api-process';
import { eventually } from '../../support/services';
import { LedgerHarness, newKey } from './support';

/**
 * The ledger's monthly call quota in a quota service of this file's own (its own process, so it
 * can be stopped), in a quota tenant of its own: the calls a root tenant makes are consumed there,
 * and the calls served while it is stopped are replayed into it, each once.
 */
describe('the ledger metered through the quota service', () => {
  let port: number;
  let quotaApi: ChildProcess | null = null;
  let ledger: LedgerHarness;
  let readKey: string;
  let ledgerKey: string;

  const startQuota = async () => {
    quotaApi = await startQuotaProcess(port, `ledger-metering-quota-${process.pid}`);
  };
  const stopQuota = async () => {
    if (quotaApi) await stopProcessGroup(quotaApi);
    quotaApi = null;
  };

  /** The root tenant's calls this month, as the quota service counts them. */
  const countedCalls = async (tenantId: string): Promise<number> => {
    const response = await fetch(
      `http://127.0.0.1:${port}/v1/subjects/${encodeURIComponent(`ledger:${tenantId}`)}/usage`,
      { headers: { authorization: `Bearer ${readKey}` } },
    );
    const body = (await response.json()) as { usage: { resource: string; used: number }[] };
    return body.usage.find((u) => u.resource === 'ledger-calls')?.used ?? 0;
  };
  const unmetered = async (tenantId: string): Promise<number> =>
    Number(
      await withSystem(ledger.pool, (tx) =>
        tx.oneFirst(
          sql.unsafe`SELECT count(*) FROM ledger.unmetered_calls WHERE tenant_id = ${tenantId}`,
        ),
      ),
    );

  beforeAll(async () => {
    port = await freePort();
    await startQuota();
    const keys = await meteringKeys(`ledger metering ${ulid()}`, { reader: true });
    readKey = keys.TEST_QUOTA_READ_KEY!;
    ledgerKey = keys.LEDGER_QUOTA_KEY!;
    ledger = await new LedgerHarness().start({
      QUOTA_URL: `http://127.0.0.1:${port}`,
      LEDGER_QUOTA_KEY: ledgerKey,
      LEDGER_MONTHLY_CALL_QUOTA: '1000',
      LEDGER_UNMETERED_REPLAY: 'true',
    });
  });
  afterAll(async () => {
    await ledger?.stop();
    await stopQuota();
  });

  it("when a root tenant calls, then each call is one unit of its subject's monthly policy in the quota service (a process's allowance given back when idle)", async () => {
    const t = await ledger.tenant();
    for (let i = 0; i < 4; i++) expect((await t.reader.get('/v1/asset-types')).status).toBe(200);
    const concurrent = await Promise.all(
      Array.from({ length: 20 }, () => t.reader.get('/v1/asset-types')),
    );
    expect(concurrent.every((r) => r.status === 200)).toBe(true);
    // Counted ahead (the process's allowance) while the tenant calls, never behind; the
    // allowance not used is given back once the tenant is idle.
    expect(await countedCalls(t.tenantId)).toBeGreaterThanOrEqual(24);
    await eventually(async () => ((await countedCalls(t.tenantId)) === 24 ? true : undefined));
  });

  it('when the quota service is stopped, then postings are served and recorded, and replayed into it once when it returns', async () => {
    const t = await ledger.tenant();
    const usd = await ledger.assetType(t);
    const cash = await ledger.account(t, usd, { balance_floor: null });
    const wallet = await ledger.account(t, usd, { normal_side: 'credit' });
    // The three calls so far, once the allowance taken ahead has been given back.
    await eventually(async () => ((await countedCalls(t.tenantId)) === 3 ? true : undefined));
    const before = 3;
    const posting = {
      entries: [
        { account_id: cash, direction: 'debit', amount: '1.00' },
        { account_id: wallet, direction: 'credit', amount: '1.00' },
      ],
    };

    await stopQuota();
    const served = await Promise.all(
      Array.from({ length: 7 }, () => t.poster.post('/v1/transactions', posting, newKey())),
    );
    expect(served.map((r) => r.status)).toEqual(Array(7).fill(201));
    expect(await unmetered(t.tenantId)).toBe(7);

    await startQuota();
    await eventually(async () => ((await unmetered(t.tenantId)) === 0 ? true : undefined), 30_000);
    expect(await countedCalls(t.tenantId)).toBe(before + 7);
    // Nothing left to replay: a second pass counts nothing again.
    const metering = { quotaUrl: `http://127.0.0.1:${port}`, apiKey: ledgerKey };
    expect(await replayUnmeteredCalls({ pool: ledger.pool, metering })).toBe(0);
    expect(await countedCalls(t.tenantId)).toBe(before + 7);
  }, 120_000);
});
