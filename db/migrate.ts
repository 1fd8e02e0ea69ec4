import { createHash } from 'node:crypto';
import path from 'node:path';
import fs from 'node:fs';
import pg from 'pg';
import { runner } from 'node-pg-migrate';
import { loadConfig } from '../api/platform/config';
import { createLogger } from '../api/platform/logger';

/**
 * Migrations: one Postgres schema per service, each with its numbered migrations
 * (db/migrations/<schema>/, history in <schema>.schema_migrations) and, applied after them, its
 * SQL functions' current definitions (db/<schema>/functions/<name>.sql; see db/README.md).
 */
export const SERVICE_SCHEMAS = ['ledger', 'runs', 'quota'] as const;
export type ServiceSchema = (typeof SERVICE_SCHEMAS)[number];

/** The repository root, found from the source tree or from the compiled one under dist/. */
function repositoryRoot(): string {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('cannot find the repository root from ' + __dirname);
    dir = parent;
  }
  return dir;
}

export const migrationsDir = (schema: ServiceSchema) =>
  path.join(repositoryRoot(), 'db', 'migrations', schema);

/** Where each SQL function's current definition lives, one file per function. */
export const functionsDir = (schema: ServiceSchema) =>
  path.join(repositoryRoot(), 'db', schema, 'functions');

/** The function files of a schema, by name (the order they are applied in). */
export function functionFiles(schema: ServiceSchema): { name: string; sql: string }[] {
  const dir = functionsDir(schema);
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((name) => name.endsWith('.sql'))
    .sort()
    .map((name) => ({ name, sql: fs.readFileSync(path.join(dir, name), 'utf8') }));
}

/**
 * Applies a schema's function files (CREATE OR REPLACE) after its numbered migrations, in one
 * transaction, when they differ from what was applied last (a checksum kept in
 * <schema>.schema_functions): Flyway's repeatable migrations. Returns the files applied.
 */
async function applyFunctions(databaseUrl: string, schema: ServiceSchema): Promise<string[]> {
  const files = functionFiles(schema);
  if (files.length === 0) return [];
  const checksum = createHash('sha256')
    .update(files.map((f) => `${f.name}\n${f.sql}`).join('\n'))
    .digest('hex');
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('BEGIN');
    // Two processes migrating at once (an API and the worker starting together) take turns.
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`functions:${schema}`]);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${schema}.schema_functions (checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const applied = await client.query(`SELECT checksum FROM ${schema}.schema_functions`);
    if ((applied.rows[0] as { checksum?: string } | undefined)?.checksum === checksum) {
      await client.query('COMMIT');
      return [];
    }
    for (const file of files) await client.query(file.sql);
    await client.query(`DELETE FROM ${schema}.schema_functions`);
    await client.query(`INSERT INTO ${schema}.schema_functions (checksum) VALUES ($1)`, [checksum]);
    await client.query('COMMIT');
    return files.map((f) => f.name);
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    await client.end();
  }
}

export async function migrateAll(databaseUrl: string, log = createLogger('info')): Promise<void> {
  for (const schema of SERVICE_SCHEMAS) {
    const applied = await runner({
      databaseUrl,
      dir: migrationsDir(schema),
      direction: 'up',
      schema,
      createSchema: true,
      migrationsSchema: schema,
      migrationsTable: 'schema_migrations',
      singleTransaction: true,
      checkOrder: true,
      log: () => {},
    });
    const functions = await applyFunctions(databaseUrl, schema);
    log.info(
      { schema, applied: applied.map((m) => m.name), functions: functions.length },
      'migrations up to date',
    );
  }
}

if (require.main === module) {
  const config = loadConfig();
  migrateAll(config.databaseUrl, createLogger(config.logLevel, { process: 'migrate' })).catch(
    (error: unknown) => {
      console.error('migration failed:', error);
      process.exit(1);
    },
  );
}
