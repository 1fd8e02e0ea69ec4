import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { withSystem } from '../../../db/ledger/context';
import { sql } from '../../../db/pool';
import { DATA_DIR } from '../../support/stack-env';
import { LedgerHarness } from '../ledger/support';
import {
  Answers,
  freePort,
  killHard,
  sendUntilFinal,
  startLedgerProcess,
  tenantWithWallets,
  transferSend,
} from './support';

jest.setTimeout(300_000);

const CLIENTS = 3;
const POSTINGS_PER_CLIENT = 30;
/** The API process is killed once this many postings are acknowledged. */
const KILL_AFTER = 15;

/**
 * The ledger API process killed with SIGKILL (a crash, an OOM kill) while three clients post,
 * then started again; the clients follow the retry rule, so a posting that got no answer is
 * sent again with its Idempotency-Key. No transaction is half-written, and each key makes one.
 */
describe('the ledger API killed -9 mid-posting', () => {
  const h = new LedgerHarness();
  const env = {
    LEDGER_HOLD_SWEEP_SCHEDULE: 'false',
    LEDGER_EDGE_RATE_PER_SECOND: '100000',
    LEDGER_EDGE_BURST: '100000',
    LOG_LEVEL: 'warn',
  };
  const logFile = path.join(DATA_DIR, 'logs', `fault-ledger-api-${process.pid}.log`);
  let api: ChildProcess | undefined;
  beforeAll(() => h.start());
  afterAll(async () => {
    if (api) await killHard(api);
    await h.stop();
  });

  it('when the API is killed and started again, then no transaction is half-written and every key made exactly one transaction', async () => {
    const { t, cash, wallets } = await tenantWithWallets(h, CLIENTS);
    const port = await freePort();
    api = await startLedgerProcess(port, env, logFile);
    const answers = new Answers();
    const deadline = Date.now() + 200_000;
    const acknowledged: string[] = [];
    const restart: { done: Promise<void> | null } = { done: null };

    const poster = async (wallet: string) => {
      for (let i = 0; i < POSTINGS_PER_CLIENT; i++) {
        const send = transferSend(`http://127.0.0.1:${port}`, t, cash, wallet);
        const reply = await sendUntilFinal(send, answers, deadline);
        expect(reply).toMatchObject({ status: 201 });
        acknowledged.push((reply.body as { transaction_id: string }).transaction_id);
        if (acknowledged.length === KILL_AFTER)
          restart.done = killHard(api!).then(async () => {
            api = await startLedgerProcess(port, env, logFile);
          });
      }
    };
    await Promise.all(wallets.map(poster));
    await restart.done;

    console.log(`ledger API killed: ${answers.total} answers (${answers.toString()})`);
    expect(answers.serverErrors()).toEqual([]);
    expect(answers.counts.get('no answer') ?? 0).toBeGreaterThan(0);
    const journal = (await withSystem(h.pool, (tx) =>
      tx.any(sql.unsafe`
        SELECT t.transaction_id, count(e.*)::int AS legs,
               sum(CASE e.direction WHEN 'debit' THEN e.amount_minor ELSE 0 END)::text AS debits,
               sum(CASE e.direction WHEN 'credit' THEN e.amount_minor ELSE 0 END)::text AS credits
        FROM ledger.transactions t LEFT JOIN ledger.entries e USING (transaction_id)
        WHERE t.tenant_id = ${t.tenantId} GROUP BY t.transaction_id`),
    )) as unknown as { transaction_id: string; legs: number; debits: string; credits: string }[];
    expect(
      journal.filter((tx) => tx.legs !== 2 || tx.debits !== '100' || tx.credits !== '100'),
    ).toEqual([]);
    expect(journal.map((tx) => tx.transaction_id).sort()).toEqual([...acknowledged].sort());
    expect(new Set(acknowledged).size).toBe(CLIENTS * POSTINGS_PER_CLIENT);
  });
});
