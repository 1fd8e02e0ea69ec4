import { describeConfig, loadConfig } from '../../platform/config';

describe('config', () => {
  it('has working defaults for every key', () => {
    const config = loadConfig({});
    expect(config.ports).toEqual({ ledger: 8083, runs: 8082, quota: 8081 });
    expect(config.temporalAddress).toBe('127.0.0.1:7233');
    expect(config.databaseUrl).toMatch(/^postgres:\/\//);
  });

  it('reads and converts values from the environment', () => {
    const config = loadConfig({
      LEDGER_PORT: '9000',
      TASK_QUEUE_PREFIX: 't-',
      DATABASE_POOL_SIZE: '5',
    });
    expect(config.ports.ledger).toBe(9000);
    expect(config.taskQueuePrefix).toBe('t-');
    expect(config.databasePoolSize).toBe(5);
  });

  it('fails fast naming every bad key', () => {
    expect(() => loadConfig({ LEDGER_PORT: 'abc', REDIS_URL: 'http://x' })).toThrow(
      /LEDGER_PORT.*REDIS_URL|REDIS_URL.*LEDGER_PORT/,
    );
  });

  it.each([
    ['REDIS_WRITE_REPLICAS', ['0', '5'], ['-1', '6', '1.5']],
    ['REDIS_WRITE_TIMEOUT_MS', ['1', '10000'], ['0', '10001']],
    ['WORKER_METRICS_PORT', ['0', '65535'], ['-1', '65536']],
    ['REDIS_CLUSTER_NODES', ['', 'a:1', '10.0.0.1:7000,redis-2:7001'], ['a', 'a:1,', 'a:1 b:2']],
    [
      'RUNS_LOG_S3_ENDPOINT',
      ['', 'http://127.0.0.1:8333', 'https://s3.example'],
      ['s3.example', 'ftp://x'],
    ],
    ['RUNS_LOG_S3_BUCKET', ['abc', 'a'.repeat(63)], ['ab', 'a'.repeat(64), 'Run-Logs', '-logs']],
  ])(
    'holds %s to its bounds: taken at its edges, refused just past them',
    (name, taken, refused) => {
      for (const value of taken) expect(() => loadConfig({ [name]: value })).not.toThrow();
      for (const value of refused) expect(() => loadConfig({ [name]: value })).toThrow(name);
    },
  );

  it('documents each key', () => {
    expect(describeConfig().some((line) => line.startsWith('DATABASE_URL='))).toBe(true);
  });
});
