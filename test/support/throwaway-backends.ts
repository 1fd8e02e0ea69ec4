import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** A free TCP port on loopback, as the kernel hands it out. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function postgresBinDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = fs
    .readdirSync(root)
    .filter((v) => /^\d+$/.test(v))
    .sort((a, b) => Number(b) - Number(a));
  if (!versions[0]) throw new Error(`no PostgreSQL under ${root}; run scripts/stack up`);
  return path.join(root, versions[0], 'bin');
}

/** Postgres refuses to run as root; as root we run it as the `postgres` OS user. */
function asPostgresUser(command: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0
    ? ['runuser', ['-u', 'postgres', '--', command, ...args]]
    : [command, args];
}

/**
 * A real PostgreSQL server of the test's own, in a temporary directory, that the test may stop
 * and start at will without disturbing the shared stack.
 */
export class ThrowawayPostgres {
  private constructor(
    readonly port: number,
    private readonly dataDir: string,
    private readonly bin: string,
  ) {}

  get url(): string {
    return `postgres://platform@127.0.0.1:${this.port}/postgres`;
  }

  static async create(): Promise<ThrowawayPostgres> {
    const bin = postgresBinDir();
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-throwaway-'));
    fs.chmodSync(base, 0o777);
    const dataDir = path.join(base, 'data');
    const [cmd, args] = asPostgresUser(path.join(bin, 'initdb'), [
      '-D',
      dataDir,
      '-U',
      'platform',
      '-A',
      'trust',
      '--no-sync',
    ]);
    execFileSync(cmd, args, { stdio: 'ignore' });
    const instance = new ThrowawayPostgres(await freePort(), dataDir, bin);
    instance.start();
    return instance;
  }

  start(): void {
    const options = `-p ${this.port} -c listen_addresses=127.0.0.1 -k ${path.dirname(this.dataDir)} -c fsync=off`;
    const logFile = path.join(path.dirname(this.dataDir), 'postgres.log');
    const [cmd, args] = asPostgresUser(path.join(this.bin, 'pg_ctl'), [
      '-D',
      this.dataDir,
      '-o',
      options,
      '-l',
      logFile,
      '-w',
      'start',
    ]);
    execFileSync(cmd, args, { stdio: 'ignore' });
  }

  stop(): void {
    const [cmd, args] = asPostgresUser(path.join(this.bin, 'pg_ctl'), [
      '-D',
      this.dataDir,
      '-m',
      'fast',
      '-w',
      'stop',
    ]);
    execFileSync(cmd, args, { stdio: 'ignore' });
  }

  destroy(): void {
    try {
      this.stop();
    } catch {
      // already stopped
    }
    fs.rmSync(path.dirname(this.dataDir), { recursive: true, force: true });
  }
}

/** A real Redis server of the test's own, in the foreground of a child process. */
export class ThrowawayRedis {
  private process?: ChildProcess;

  private constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async create(): Promise<ThrowawayRedis> {
    const instance = new ThrowawayRedis(await freePort());
    await instance.start();
    return instance;
  }

  async start(): Promise<void> {
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    this.process = child;
    await new Promise<void>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}`)));
      child.stdout.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('Ready to accept connections')) resolve();
      });
    });
    child.removeAllListeners('exit');
  }

  async stop(): Promise<void> {
    const child = this.process;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}
