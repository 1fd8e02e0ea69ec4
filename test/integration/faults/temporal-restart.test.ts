import { eventually } from '../../support/services';
import { transfer } from '../ledger/support';
import { IMAGE, client, containersCreated, newTenant } from '../runs/support';
import { bothServices, restartStackPart, tenantWithWallets } from './support';

jest.setTimeout(300_000);

const TERMINAL = ['exited', 'failed', 'timeout', 'killed'];
/** Runs in flight across the restart: each with its own length and exit code. */
const RUNS = [
  { command: ['sh', '-c', 'sleep 1; exit 0'], state: 'exited', exitCode: 0 },
  { command: ['sh', '-c', 'sleep 4; exit 3'], state: 'failed', exitCode: 3 },
  { command: ['sh', '-c', 'sleep 8; echo done'], state: 'exited', exitCode: 0 },
];
const HOLD_EXPIRES_IN_MS = 6_000;

/**
 * Temporal's dev server killed (SIGKILL) and started again on its own database while runs are
 * running and a ledger hold waits to expire: the workers and the APIs reconnect by themselves,
 * every run ends in its right state with one container, a run submitted while Temporal is down
 * runs once it is back, and the hold still expires.
 */
describe('Temporal restarted under runs and holds', () => {
  const services = bothServices();

  it('when the Temporal server dies and restarts, then every run ends right with one container and the hold expires', async () => {
    const { ledger, runs } = services;
    const since = Math.floor(Date.now() / 1000) - 1;
    const {
      t,
      cash,
      wallets: [wallet],
    } = await tenantWithWallets(ledger, 1);
    await t.poster.post('/v1/transactions', transfer(cash, wallet!, '1.00'));
    const hold = await t.poster.post<{ transaction_id: string; state: string }>(
      '/v1/transactions',
      transfer(wallet!, cash, '1.00', {
        pending: true,
        expires_at: new Date(Date.now() + HOLD_EXPIRES_IN_MS).toISOString(),
      }),
    );
    expect(hold.body).toMatchObject({ state: 'pending' });

    const api = client(runs.service.url, (await newTenant(runs.pool)).key);
    const submitted = [];
    for (const run of RUNS)
      submitted.push((await api.submit({ image: IMAGE, command: run.command })).body.track_id);
    await Promise.all(submitted.map((trackId) => api.waitFor(trackId, ['running'], 60_000)));

    const restarted = restartStackPart('temporal', { immediate: true });
    // Accepted while the server is down or starting: stored, started once it is back.
    const during = await api.submit({ image: IMAGE, command: ['sh', '-c', 'exit 5'] });
    expect(during.status).toBe(202);
    await restarted;

    const expected = [...RUNS, { state: 'failed', exitCode: 5 }];
    const tracks = [...submitted, during.body.track_id];
    for (const [i, trackId] of tracks.entries()) {
      const run = await api.waitFor(trackId, TERMINAL, 120_000);
      expect([trackId, run.state, run.exit_code]).toEqual([
        trackId,
        expected[i]!.state,
        expected[i]!.exitCode,
      ]);
      expect([trackId, await containersCreated(trackId, since)]).toEqual([trackId, 1]);
    }
    const expired = await eventually(async () => {
      const reply = await t.reader.get<{ state: string }>(
        `/v1/transactions/${hold.body.transaction_id}`,
      );
      return reply.body.state === 'expired' ? reply.body : undefined;
    }, 60_000);
    expect(expired.state).toBe('expired');
  });
});
