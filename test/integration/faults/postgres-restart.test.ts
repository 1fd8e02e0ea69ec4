import { withSystem } from '../../../db/ledger/context';
import { sql } from '../../../db/pool';
import { client, newTenant } from '../runs/support';
import {
  Answers,
  bothServices,
  restartStackPart,
  sendUntilFinal,
  submitSend,
  tenantWithWallets,
  transferSend,
} from './support';

jest.setTimeout(300_000);

const CLIENTS = 3;
const POSTINGS_PER_CLIENT = 40;
/** Postgres is restarted once this many postings are acknowledged, while the rest are sent. */
const RESTART_AFTER = 20;
const RUN_SUBMITS = 8;

/**
 * Postgres stopped without a checkpoint (pg_ctl -m immediate, a crash) and started again while
 * three ledger clients post and a runs client submits, each following the retry rule (a 503 is
 * sent again with the same Idempotency-Key). Nothing acknowledged is lost or doubled, and no
 * client ever sees a 500.
 */
describe('Postgres restarted under postings and run submits', () => {
  const services = bothServices();

  it('when Postgres crashes and restarts mid-flight, then every acknowledged posting is in the journal once, retries with the same key make one transaction, every accepted run ends exited, and no answer is a 500', async () => {
    const { ledger, runs } = services;
    const { t, cash, wallets } = await tenantWithWallets(ledger, CLIENTS);
    const { key: runsKey } = await newTenant(runs.pool);
    const runsApi = client(runs.service.url, runsKey);
    const answers = new Answers();
    const deadline = Date.now() + 200_000;
    const acknowledged: string[] = [];
    const restart: { done: Promise<void> | null } = { done: null };

    const poster = async (wallet: string) => {
      for (let i = 0; i < POSTINGS_PER_CLIENT; i++) {
        const send = transferSend(ledger.url, t, cash, wallet);
        const reply = await sendUntilFinal(send, answers, deadline);
        expect(reply).toMatchObject({ status: 201 });
        acknowledged.push((reply.body as { transaction_id: string }).transaction_id);
        if (acknowledged.length === RESTART_AFTER)
          restart.done = restartStackPart('postgres', { immediate: true });
      }
    };
    const submitter = async () => {
      const accepted: string[] = [];
      while (restart.done === null) await new Promise((resolve) => setTimeout(resolve, 20));
      for (let i = 0; i < RUN_SUBMITS; i++) {
        const send = submitSend(runs.service.url, runsKey, ['true']);
        const reply = await sendUntilFinal(send, answers, deadline);
        expect(reply).toMatchObject({ status: 202 });
        accepted.push((reply.body as { track_id: string }).track_id);
      }
      return accepted;
    };
    const [, accepted] = await Promise.all([Promise.all(wallets.map(poster)), submitter()]);
    await restart.done;

    console.log(`postgres restart: ${answers.total} answers (${answers.toString()})`);
    expect(answers.serverErrors()).toEqual([]);
    expect(acknowledged).toHaveLength(CLIENTS * POSTINGS_PER_CLIENT);
    const journal: readonly unknown[] = await withSystem(ledger.pool, (tx) =>
      tx.anyFirst(
        sql.unsafe`SELECT transaction_id FROM ledger.transactions WHERE tenant_id = ${t.tenantId}`,
      ),
    );
    expect([...journal].sort()).toEqual([...acknowledged].sort());
    for (const wallet of wallets) {
      const balance = await t.reader.get<{ posted: { debits_minor: string } }>(
        `/v1/accounts/${wallet}/balance`,
      );
      expect(balance.body.posted.debits_minor).toBe(String(100 * POSTINGS_PER_CLIENT));
    }
    for (const trackId of accepted) {
      const run = await runsApi.waitFor(
        trackId,
        ['exited', 'failed', 'timeout', 'killed'],
        120_000,
      );
      expect([trackId, run.state, run.exit_code]).toEqual([trackId, 'exited', 0]);
    }
  });
});
