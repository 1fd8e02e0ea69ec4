import { ledgerHealth } from '../../../api/ledger/app';
import { BackendMonitor, type DatabaseStatus } from '../../../db/health';

describe('ledger /healthz from the monitor', () => {
  it('when the first check has not completed, then the monitor says unknown and /healthz 200 with auth_client_credential unknown', async () => {
    let answer: (status: DatabaseStatus) => void = () => undefined;
    const monitor = new BackendMonitor({
      database: () => new Promise<DatabaseStatus>((resolve) => (answer = resolve)),
    });
    const started = monitor.start();
    expect(monitor.snapshot()).toEqual({ database: 'unknown' });
    expect(ledgerHealth(monitor.snapshot().database)).toEqual({
      status: 200,
      body: { status: 'ok', auth_client_credential: 'unknown' },
    });
    answer('rejected');
    await started;
    monitor.stop();
    expect(monitor.snapshot()).toEqual({ database: 'rejected' });
  });

  it('when the database is up, refuses the login or is unreachable, then ok 200, rejected 503 or unknown 503', () => {
    expect(ledgerHealth('up')).toEqual({
      status: 200,
      body: { status: 'ok', auth_client_credential: 'ok' },
    });
    expect(ledgerHealth('rejected')).toEqual({
      status: 503,
      body: {
        status: 'unhealthy',
        reason: "database refuses the service's credential",
        auth_client_credential: 'rejected',
      },
    });
    expect(ledgerHealth('down')).toEqual({
      status: 503,
      body: {
        status: 'unhealthy',
        reason: 'database unreachable',
        auth_client_credential: 'unknown',
      },
    });
  });
});
