import pg from 'pg';
import { loadConfig } from '../../../api/platform/config';
import {
  functionFiles,
  migrateAll,
  SERVICE_SCHEMAS,
  type ServiceSchema,
} from '../../../db/migrate';
import { createLogger } from '../../../api/platform/logger';

/**
 * Each SQL function's current definition is its file under db/<schema>/functions/: what a
 * newcomer reads is what the database runs. Compared by Postgres itself: the definitions before
 * and after applying every file (in a transaction rolled back) must be the same.
 */
const config = loadConfig();

/** name → pg_get_functiondef of every function in the service schemas. */
async function definitions(client: pg.Client): Promise<Record<string, string>> {
  const { rows } = await client.query<{ name: string; definition: string }>(
    `SELECT n.nspname || '.' || p.proname AS name, pg_get_functiondef(p.oid) AS definition
     FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname = ANY($1) ORDER BY 1`,
    [SERVICE_SCHEMAS],
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.definition]));
}

/** What the database holds, and what it would hold with every function file applied over it. */
async function liveAndFromFiles(client: pg.Client, change?: string) {
  await client.query('BEGIN');
  try {
    if (change) await client.query(change);
    const live = await definitions(client);
    for (const schema of SERVICE_SCHEMAS)
      for (const file of functionFiles(schema)) await client.query(file.sql);
    return { live, fromFiles: await definitions(client) };
  } finally {
    await client.query('ROLLBACK');
  }
}

const filesOf = (schema: ServiceSchema) =>
  functionFiles(schema).map((f) => `${schema}.${f.name.replace(/\.sql$/, '')}`);

async function connected(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

describe('SQL functions, one file each', () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = await connected(config.databaseUrl);
  });
  afterAll(() => client.end());

  it('every function in the database has its file, and every file its function', async () => {
    const live = Object.keys(await definitions(client));
    expect(live.length).toBeGreaterThan(0);
    expect(SERVICE_SCHEMAS.flatMap(filesOf).sort()).toEqual(live.sort());
  });

  it('each file defines its own function (a file of comments alone would change nothing)', () => {
    for (const schema of SERVICE_SCHEMAS)
      for (const file of functionFiles(schema)) {
        const name = file.name.replace(/\.sql$/, '');
        expect([
          file.name,
          file.sql.includes(`CREATE OR REPLACE FUNCTION ${schema}.${name}(`),
        ]).toEqual([file.name, true]);
      }
  });

  it('the files define exactly what the database runs', async () => {
    const { live, fromFiles } = await liveAndFromFiles(client);
    expect(fromFiles).toEqual(live);
  });

  it('when a migration redefines a function without its file, the comparison finds it', async () => {
    const { live, fromFiles } = await liveAndFromFiles(
      client,
      `CREATE OR REPLACE FUNCTION ledger.now_ms() RETURNS timestamptz LANGUAGE sql STABLE AS 'SELECT now()'`,
    );
    expect(fromFiles['ledger.now_ms']).not.toEqual(live['ledger.now_ms']);
  });

  it('a fresh database, migrated, holds the same functions as this one', async () => {
    const name = `functions_scratch_${process.pid}`;
    const url = new URL(config.databaseUrl);
    url.pathname = `/${name}`;
    await client.query(`DROP DATABASE IF EXISTS ${name}`);
    await client.query(`CREATE DATABASE ${name}`);
    try {
      await migrateAll(url.href, createLogger('warn'));
      const fresh = await connected(url.href);
      try {
        expect(await definitions(fresh)).toEqual(await definitions(client));
      } finally {
        await fresh.end();
      }
    } finally {
      await client.query(`DROP DATABASE ${name} WITH (FORCE)`);
    }
  }, 60_000);
});
