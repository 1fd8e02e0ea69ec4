import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CONFIG_VARIABLES, describeConfig, loadConfig } from '../../platform/config';

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

  describe('a secret mounted as a file (<NAME>_FILE)', () => {
    let dir: string;
    beforeAll(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'config-secret-'))));
    afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
    const secretFile = (name: string, content: string) => {
      const file = path.join(dir, name);
      fs.writeFileSync(file, content);
      return file;
    };

    it('is read as the value, less one trailing newline, and checked like it', () => {
      const key = `qk_${'a'.repeat(20)}`;
      const config = loadConfig({
        QUOTA_URL: 'http://quota:8081',
        RUNS_QUOTA_KEY_FILE: secretFile('runs-key', `${key}\n`),
        DATABASE_URL_FILE: secretFile('db', 'postgres://u:p@db:5432/x'),
      });
      expect(config.runs.metering).toMatchObject({ apiKey: key });
      expect(config.databaseUrl).toBe('postgres://u:p@db:5432/x');
      expect(() =>
        loadConfig({ QUOTA_URL: 'http://q', RUNS_QUOTA_KEY_FILE: secretFile('bad', 'nope') }),
      ).toThrow(/RUNS_QUOTA_KEY/);
    });

    it('is refused beside the variable itself, or when the file cannot be read', () => {
      const file = secretFile('both', 'postgres://u:p@db/x');
      expect(() =>
        loadConfig({ DATABASE_URL: 'postgres://a@b/c', DATABASE_URL_FILE: file }),
      ).toThrow('set DATABASE_URL or DATABASE_URL_FILE, not both');
      expect(() => loadConfig({ LEDGER_QUOTA_KEY_FILE: path.join(dir, 'absent') })).toThrow(
        /LEDGER_QUOTA_KEY_FILE ".*absent" cannot be read \(ENOENT\)/,
      );
    });

    it('is a variable a deployment may set', () => {
      expect(CONFIG_VARIABLES).toEqual(
        expect.arrayContaining(['RUNS_QUOTA_KEY_FILE', 'DATABASE_URL_FILE']),
      );
    });
  });

  it('documents each key', () => {
    expect(describeConfig().some((line) => line.startsWith('DATABASE_URL='))).toBe(true);
  });
});
