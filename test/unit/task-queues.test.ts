import { taskQueues } from '../../contracts/shared/task-queues';

describe('task queues', () => {
  it('derive every name from one prefix', () => {
    const queues = taskQueues('t1-');
    expect(queues.runs).toBe('t1-runs');
    expect(queues.runsDockerHost('host-a')).toBe('t1-runs-docker/host-a');
  });
});
