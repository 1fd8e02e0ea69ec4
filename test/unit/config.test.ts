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

  it('documents each key', () => {
    expect(describeConfig().some((line) => line.startsWith('DATABASE_URL='))).toBe(true);
  });
});
