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

/**
 * A real Redis Cluster of the test's own: three masters and a replica of each (Debian's
 * redis-server in cluster mode, joined by `redis-cli --cluster create`), on free loopback ports.
 * A master killed is replaced by its replica within about NODE_TIMEOUT_MS.
 */
export class ThrowawayRedisCluster {
  static readonly NODE_TIMEOUT_MS = 1_000;
  private readonly processes = new Map<number, ChildProcess>();

  private constructor(
    readonly ports: number[],
    private readonly dir: string,
  ) {}

  /** REDIS_CLUSTER_NODES for it. */
  get nodes(): string {
    return this.ports.map((port) => `127.0.0.1:${port}`).join(',');
  }

  static async create(): Promise<ThrowawayRedisCluster> {
    const ports: number[] = [];
    // Each node also listens on port + 10000 (the cluster bus): keep both below 65536.
    while (ports.length < 6) {
      const port = await freePort();
      if (port < 55_000 && !ports.includes(port)) ports.push(port);
    }
    const cluster = new ThrowawayRedisCluster(
      ports,
      fs.mkdtempSync(path.join(os.tmpdir(), 'redis-cluster-')),
    );
    await Promise.all(ports.map((port) => cluster.startNode(port)));
    execFileSync('redis-cli', [
      '--cluster',
      'create',
      ...ports.map((port) => `127.0.0.1:${port}`),
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    ]);
    await cluster.waitUntilOk();
    return cluster;
  }

  private async startNode(port: number): Promise<void> {
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'yes',
        '--dir',
        this.dir,
        '--appendfilename',
        `appendonly-${port}.aof`,
        '--appenddirname',
        `aof-${port}`,
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${port}.conf`,
        // A replica's first sync at once, not after diskless sync's 5 s wait: a master killed
        // before its replica has synced is not failed over.
        '--repl-diskless-sync-delay',
        '0',
        '--cluster-node-timeout',
        String(ThrowawayRedisCluster.NODE_TIMEOUT_MS),
      ],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    this.processes.set(port, child);
    await new Promise<void>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`redis-server :${port} exited with ${code}`)));
      child.stdout.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('Ready to accept connections')) resolve();
      });
    });
    child.removeAllListeners('exit');
  }

  /** Every live node reports cluster_state:ok and all 16384 slots served, every replica in sync. */
  async waitUntilOk(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const live = [...this.processes].filter(
        ([, p]) => p.exitCode === null && p.signalCode === null,
      );
      const ok = live.every(([port]) => {
        const info = execFileSync('redis-cli', ['-p', String(port), 'cluster', 'info']).toString();
        const replication = execFileSync('redis-cli', [
          '-p',
          String(port),
          'info',
          'replication',
        ]).toString();
        const synced =
          !replication.includes('role:slave') || replication.includes('master_link_status:up');
        return (
          info.includes('cluster_state:ok') && info.includes('cluster_slots_ok:16384') && synced
        );
      });
      if (ok) return;
      if (Date.now() > deadline) throw new Error('the Redis Cluster did not become ok');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /** The port of the master serving `key`'s slot. */
  masterOf(key: string): number {
    const slot = execFileSync('redis-cli', ['-p', String(this.ports[0]), 'cluster', 'keyslot', key])
      .toString()
      .trim();
    const shards = execFileSync('redis-cli', ['-p', String(this.ports[0]), 'cluster', 'nodes'])
      .toString()
      .split('\n');
    for (const line of shards) {
      const fields = line.split(' ');
      if (!fields[2]?.includes('master') || fields[2].includes('fail')) continue;
      for (const range of fields.slice(8)) {
        const [from, to = from] = range.split('-').map(Number);
        if (Number(slot) >= from! && Number(slot) <= to!)
          return Number(fields[1]!.split(':')[1]!.split('@')[0]);
      }
    }
    throw new Error(`no master serves slot ${slot}`);
  }

  /** Starts a killed node again on its own files: it rejoins, a replica of whoever took over. */
  async restart(port: number): Promise<void> {
    await this.startNode(port);
  }

  /** Kills a node as a crash would (SIGKILL). */
  async kill(port: number): Promise<void> {
    const child = this.processes.get(port);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  async stop(): Promise<void> {
    await Promise.all(this.ports.map((port) => this.kill(port)));
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * A real S3-compatible object store of the test's own: SeaweedFS's `weed server` (master, volume,
 * filer and S3 gateway in one process; the binary from `scripts/stack seaweedfs-path`), on free
 * loopback ports, with one identity and one bucket.
 */
export class ThrowawaySeaweedFS {
  static readonly ACCESS_KEY_ID = 'platform-test';
  static readonly SECRET_ACCESS_KEY = 'platform-test-secret';
  private process?: ChildProcess;

  private constructor(
    readonly s3Port: number,
    private readonly dir: string,
  ) {}

  get endpoint(): string {
    return `http://127.0.0.1:${this.s3Port}`;
  }

  /** RUNS_LOG_S3_* for it. */
  env(bucket: string): Record<string, string> {
    return {
      RUNS_LOG_S3_ENDPOINT: this.endpoint,
      RUNS_LOG_S3_BUCKET: bucket,
      RUNS_LOG_S3_ACCESS_KEY_ID: ThrowawaySeaweedFS.ACCESS_KEY_ID,
      RUNS_LOG_S3_SECRET_ACCESS_KEY: ThrowawaySeaweedFS.SECRET_ACCESS_KEY,
    };
  }

  static async create(weed: string): Promise<ThrowawaySeaweedFS> {
    // Each server also listens on its port + 10000 (gRPC): keep both below 65536.
    const ports: number[] = [];
    while (ports.length < 4) {
      const port = await freePort();
      if (port < 55_000 && !ports.includes(port)) ports.push(port);
    }
    const [master, volume, filer, s3] = ports as [number, number, number, number];
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'seaweedfs-'));
    const config = path.join(dir, 's3.json');
    fs.writeFileSync(
      config,
      JSON.stringify({
        identities: [
          {
            name: 'platform',
            credentials: [
              {
                accessKey: ThrowawaySeaweedFS.ACCESS_KEY_ID,
                secretKey: ThrowawaySeaweedFS.SECRET_ACCESS_KEY,
              },
            ],
            actions: ['Admin', 'Read', 'List', 'Tagging', 'Write'],
          },
        ],
      }),
    );
    const store = new ThrowawaySeaweedFS(s3, dir);
    fs.mkdirSync(path.join(dir, 'data'));
    const log = fs.openSync(path.join(dir, 'weed.log'), 'a');
    store.process = spawn(
      weed,
      [
        'server',
        `-dir=${path.join(dir, 'data')}`,
        '-ip=127.0.0.1',
        '-ip.bind=127.0.0.1',
        `-master.port=${master}`,
        '-master.volumeSizeLimitMB=64',
        `-volume.port=${volume}`,
        '-filer',
        `-filer.port=${filer}`,
        '-s3',
        `-s3.port=${s3}`,
        `-s3.config=${config}`,
      ],
      { stdio: ['ignore', log, log] },
    );
    // The child holds its own copy of the descriptor.
    fs.closeSync(log);
    return store;
  }

  async stop(): Promise<void> {
    const child = this.process;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
