/**
 * pgbench's tpcb-like script (its default) against the stack's PostgreSQL, in a database of its
 * own: what Postgres sustains on these cores for a short read-write transaction, the baseline of
 * the quota bench's strict rows. The server, user and password come from DATABASE_URL.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const DATABASE = 'bench_pgbench';
const SCALE = 10;
/** What `pgbench -i` makes; its primary keys last, so an interrupted init counts as missing. */
const INIT_RELATIONS = [
  'pgbench_accounts',
  'pgbench_branches',
  'pgbench_tellers',
  'pgbench_history',
  'pgbench_accounts_pkey',
];

/** A PostgreSQL client program: on PATH, else from the newest /usr/lib/postgresql/<major>/bin. */
function postgresProgram(name: string): string {
  const root = '/usr/lib/postgresql';
  const majors = fs.existsSync(root)
    ? fs
        .readdirSync(root)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const dirs = [
    ...(process.env.PATH ?? '').split(path.delimiter).filter((dir) => dir !== ''),
    ...majors.map((major) => path.join(root, major, 'bin')),
  ];
  const found = dirs.map((dir) => path.join(dir, name)).find(isExecutable);
  if (!found) throw new Error(`no ${name} on PATH nor under ${root}: install postgresql-client`);
  return found;
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** libpq's environment for `database` on the server of `databaseUrl`. */
function libpqEnv(databaseUrl: string, database: string): NodeJS.ProcessEnv {
  const url = new URL(databaseUrl);
  return {
    ...process.env,
    PGHOST: url.hostname,
    PGPORT: url.port || '5432',
    PGUSER: decodeURIComponent(url.username),
    PGPASSWORD: decodeURIComponent(url.password),
    PGDATABASE: database,
  };
}

async function psql(env: NodeJS.ProcessEnv, query: string): Promise<string> {
  const args = ['-X', '-q', '-tA', '-v', 'ON_ERROR_STOP=1', '-c', query];
  return (await run(postgresProgram('psql'), args, { env })).stdout.trim();
}

/** The database `bench_pgbench`, created if missing, initialized at scale 10 if its tables are. */
export async function preparePgbench(databaseUrl: string): Promise<void> {
  const server = libpqEnv(databaseUrl, new URL(databaseUrl).pathname.slice(1));
  if ((await psql(server, `SELECT 1 FROM pg_database WHERE datname = '${DATABASE}'`)) === '')
    await psql(server, `CREATE DATABASE ${DATABASE}`);
  const env = libpqEnv(databaseUrl, DATABASE);
  const present = await psql(
    env,
    `SELECT count(to_regclass(r)) FROM unnest(ARRAY['${INIT_RELATIONS.join("','")}']) r`,
  );
  if (Number(present) < INIT_RELATIONS.length)
    await run(postgresProgram('pgbench'), ['-i', '-q', '-s', String(SCALE)], { env });
}

export interface PgbenchFigures {
  /** Transactions a second, without the initial connection time. */
  tps: number;
  transactions: number;
  failed: number;
  latencyAvgMs: number;
}

/** `pgbench -c <clients> -j 2 -T <seconds> -n` (tpcb-like) on bench_pgbench, as it reports. */
export async function runPgbench(
  databaseUrl: string,
  clients: number,
  seconds: number,
): Promise<PgbenchFigures> {
  const args = ['-c', clients, '-j', Math.min(2, clients), '-T', Math.max(1, Math.round(seconds))];
  const { stdout } = await run(postgresProgram('pgbench'), [...args.map(String), '-n'], {
    env: libpqEnv(databaseUrl, DATABASE),
  });
  const figure = (pattern: RegExp, required = true) => {
    const match = pattern.exec(stdout);
    if (!match && required) throw new Error(`pgbench's output lacks ${pattern}:\n${stdout}`);
    return Number(match?.[1] ?? 0);
  };
  return {
    tps: figure(/^tps = ([\d.]+) \(without initial connection time\)/m),
    transactions: figure(/^number of transactions actually processed: (\d+)/m),
    failed: figure(/^number of failed transactions: (\d+)/m, false),
    latencyAvgMs: figure(/^latency average = ([\d.]+) ms/m),
  };
}

/**
 * pgbench's tables vacuumed after a run, so that autovacuum does not take the cores from what is
 * measured next (it cost the next row a third of its rate).
 */
export async function vacuumPgbench(databaseUrl: string): Promise<void> {
  await psql(libpqEnv(databaseUrl, DATABASE), `VACUUM ${INIT_RELATIONS.join(', ')}`);
}
