import { prefixOfTaskQueue, taskQueues } from '../../workflows/platform/task-queues';

describe('task queues', () => {
  it('derive every name from one prefix', () => {
    const queues = taskQueues('t1-');
    expect(queues.runs).toBe('t1-runs');
    expect(queues.runsDockerHost('host-a')).toBe('t1-runs-docker/host-a');
  });

  it('recover the prefix from a workflow task queue', () => {
    expect(prefixOfTaskQueue('t1-runs', 'runs')).toBe('t1-');
    expect(prefixOfTaskQueue('runs', 'runs')).toBe('');
    expect(() => prefixOfTaskQueue('t1-ledger', 'runs')).toThrow();
  });
});
