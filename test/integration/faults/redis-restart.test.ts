import { eventually } from '../../support/services';
import { meteredLedgerCalls } from '../../support/platform-metering';
import { transfer } from '../ledger/support';
import { IMAGE, client, newTenant } from '../runs/support';
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

/** Requests each client still sends once Redis is back, to show the services recovered. */
const REQUESTS_AFTER = 10;
/** How long the services' Redis clients may take to reconnect once Redis answers again. */
const RECONNECT_WITHIN_MS = 10_000;

/**
 * Redis killed (SIGKILL) and started again while a ledger client posts and a runs client
 * submits. Redis holds only counters and caches, so both services keep answering (degraded:
 * the ledger serves and records calls it could not meter, the runs rate limit fails open, logs
 * are read from their files) and use Redis again once it is back, without a restart of their own.
 */
describe('Redis restarted under postings and run submits', () => {
  const services = bothServices();

  it('when Redis dies and comes back, then postings and submits are answered throughout, and both services use it again (the quota service counts calls again)', async () => {
    const { ledger, runs } = services;
    const {
      t,
      cash,
      wallets: [wallet],
    } = await tenantWithWallets(ledger, 1);
    const { key: runsKey } = await newTenant(runs.pool);
    const answers = new Answers();
    const deadline = Date.now() + 200_000;
    const restart = { done: false };
    const restarted = restartStackPart('redis', { immediate: true }).then(() => {
      restart.done = true;
    });

    /** Sends fresh requests until REQUESTS_AFTER were sent after the restart; how many in all. */
    const untilRecovered = async (fresh: () => () => Promise<Response>, expected: number) => {
      let after = 0;
      let answered = 0;
      while (after < REQUESTS_AFTER) {
        const wasDone = restart.done;
        expect((await sendUntilFinal(fresh(), answers, deadline)).status).toBe(expected);
        answered++;
        if (wasDone) after++;
      }
      return answered;
    };
    const [postings] = await Promise.all([
      untilRecovered(() => transferSend(ledger.url, t, cash, wallet!), 201),
      untilRecovered(() => submitSend(runs.service.url, runsKey, ['echo', 'hello']), 202),
      restarted,
    ]);

    console.log(`redis restart: ${answers.total} answers (${answers.toString()})`);
    expect(answers.serverErrors()).toEqual([]);
    console.log(`redis restart: ${postings} postings`);
    const balance = await t.reader.get<{ posted: { debits_minor: string } }>(
      `/v1/accounts/${wallet}/balance`,
    );
    expect(balance.body.posted.debits_minor).toBe(String(100 * postings));

    // Back in use: postings are counted again in the quota service's fast counter once its Redis
    // client has reconnected (while Redis was down it answered degraded, counting nothing
    // there). A ledger process serves up to 256 calls of a busy tenant from what it took ahead,
    // so each probe posts more than that (300). And a new run's log is served from its cache.
    const meteredAgain = async (): Promise<true | undefined> => {
      const before = await meteredLedgerCalls(t.tenantId);
      for (let round = 0; round < 10; round++) {
        const posted = await Promise.all(
          Array.from({ length: 30 }, () =>
            t.poster.post('/v1/transactions', transfer(cash, wallet!, '1.00')),
          ),
        );
        expect(posted.map((p) => p.status)).toEqual(Array(30).fill(201));
      }
      return (await meteredLedgerCalls(t.tenantId)) > before ? true : undefined;
    };
    expect(await eventually(meteredAgain, RECONNECT_WITHIN_MS)).toBe(true);
    // A tenant of its own: the first one's submits (hundreds, as many as the API answered during
    // the outage) wait for its concurrency limit, and this run would wait behind all of them.
    const fresh = client(runs.service.url, (await newTenant(runs.pool)).key);
    const { track_id } = (await fresh.submit({ image: IMAGE, command: ['echo', 'again'] })).body;
    await fresh.waitFor(track_id, ['exited'], 60_000);
    const logs = await fresh.call<{ lines: string[] }>('GET', `/api/v1/runs/${track_id}/logs`);
    expect(logs.body.lines).toEqual(['again']);
    expect(logs.headers.get('x-log-source')).toBe('cache');
  });
});
