import type { State } from '@temporalio/worker';
import { workerReadiness, type ProbedWorker } from '../../../worker/metrics';

/** A Temporal worker as /readyz sees it: its task queue and its state now. */
const worker = (taskQueue: string, state: State): ProbedWorker => ({
  options: { taskQueue },
  getState: () => state,
});

describe("a worker's /readyz", () => {
  it('when every Temporal worker of the process is RUNNING, then 200 ok with each one by its task queue', () => {
    expect(
      workerReadiness([worker('runs', 'RUNNING'), worker('ledger', 'RUNNING')], '1.2.3'),
    ).toEqual({
      status: 200,
      body: { status: 'ok', workers: { runs: 'RUNNING', ledger: 'RUNNING' }, version: '1.2.3' },
    });
  });

  it.each<State>(['INITIALIZED', 'STOPPING', 'DRAINING', 'DRAINED', 'STOPPED', 'FAILED'])(
    'when one of them is %s, then 503 not_ready with every state',
    (state) => {
      expect(workerReadiness([worker('runs', 'RUNNING'), worker('quota', state)], '1.2.3')).toEqual(
        {
          status: 503,
          body: {
            status: 'not_ready',
            workers: { runs: 'RUNNING', quota: state },
            version: '1.2.3',
          },
        },
      );
    },
  );

  it('when the process has made no worker yet (bundling, connecting), then 503 not_ready with none', () => {
    expect(workerReadiness([], '1.2.3')).toEqual({
      status: 503,
      body: { status: 'not_ready', workers: {}, version: '1.2.3' },
    });
  });
});
