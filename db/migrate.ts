import { createHash } from 'node:crypto';
import path from 'node:path';
import { repositoryRoot } from './repository';
import fs from 'node:fs';
import pg from 'pg';
import { runner } from 'node-pg-migrate';
import { loadConfig } from '../platform/config';
import { createLogger } from '../platform/logger';

/**
 * Migrations: one Postgres schema per service, migrated in two steps (db/README.md):
 *
 * 1. its numbered migrations, db/migrations/<schema>/NNNN_*.sql (node-pg-migrate, history in
 *    <schema>.schema_migrations): tables, indexes, triggers, types, roles, and a function's
 *    change of signature or its removal. History: never edit one that has been applied.
 * 2. its SQL functions' current definitions, one file each, db/<schema>/functions/<name>.sql
 *    (CREATE OR REPLACE), applied after them in one transaction whenever a file changed or a
 *    numbered migration ran (Flyway's repeatable migrations; node-pg-migrate has none).
 *
 * The ledger's posting rules are db/ledger/functions/post_transactions.sql and the posting_*.sql
 * it runs. To change a rule, edit its file; add a numbered migration only when a function's
 * signature changes or it goes away. test/integration/platform/function-files.test.ts fails when
 * the database and the files disagree.
 */
export const SERVICE_SCHEMAS = ['ledger', 'runs', 'quota'] as const;
export type ServiceSchema = (typeof SERVICE_SCHEMAS)[number];

export const migrationsDir = (schema: ServiceSchema) =>
  path.join(repositoryRoot(), 'db', 'migrations', schema);

/** Where each SQL function's current definition lives, one file per function. */
export const functionsDir = (schema: ServiceSchema) =>
  path.join(repositoryRoot(), 'db', schema, 'functions');

export interface FunctionFile {
  /** The function's name: the file's, without `.sql`. */
  name: string;
  path: string;
  sql: string;
}

/** The function files of a schema, by name (the order they are applied in). */
export function functionFiles(schema: ServiceSchema): FunctionFile[] {
  const dir = functionsDir(schema);
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file) => ({
      name: file.slice(0, -'.sql'.length),
      path: path.join(dir, file),
      sql: fs.readFileSync(path.join(dir, file), 'utf8'),
    }));
}

/** Runs a schema's pending numbered migrations (all, or the next `count`); returns their names. */
export async function migrateNumbered(
  databaseUrl: string,
  schema: ServiceSchema,
  options: { dir?: string; count?: number } = {},
): Promise<string[]> {
  const applied = await runner({
    databaseUrl,
    dir: options.dir ?? migrationsDir(schema),
    count: options.count,
    direction: 'up',
    schema,
    createSchema: true,
    migrationsSchema: schema,
    migrationsTable: 'schema_migrations',
    singleTransaction: true,
    checkOrder: true,
    log: () => {},
  });
  return applied.map((m) => m.name);
}

/** Every function of a schema: its identity, `schema.name(argument types)`, and its row's version. */
async function functionRows(client: pg.ClientBase, schema: ServiceSchema) {
  const { rows } = await client.query<{ oid: number; signature: string; row: string }>(
    `SELECT p.oid, p.ctid::text AS row,
            format('%s.%s(%s)', $1::text, p.proname, pg_get_function_identity_arguments(p.oid)) AS signature
     FROM pg_proc p WHERE p.pronamespace = $1::regnamespace`,
    [schema],
  );
  return rows;
}

/**
 * Runs one function file and returns the functions it created or replaced (each CREATE OR REPLACE
 * writes a new version of the function's catalogue row, even when nothing in it changed), so a
 * file that defines nothing, or another name, is found.
 */
export async function runFunctionFile(
  client: pg.ClientBase,
  schema: ServiceSchema,
  file: FunctionFile,
): Promise<{ oid: number; signature: string }[]> {
  const before = new Map((await functionRows(client, schema)).map((f) => [f.oid, f.row]));
  await client.query(file.sql);
  return (await functionRows(client, schema))
    .filter((f) => before.get(f.oid) !== f.row)
    .map(({ oid, signature }) => ({ oid, signature }));
}

const FUNCTIONS_TABLE = 'schema_functions';

/**
 * Applies a schema's function files (CREATE OR REPLACE), in one transaction, when they differ
 * from what was applied last (a checksum kept in <schema>.schema_functions) or `migrated` (a
 * numbered migration just ran: whatever it did to a function, the file has the last word, so an
 * existing database and a fresh one end with the same functions). Returns the files applied.
 */
async function applyFunctions(
  databaseUrl: string,
  schema: ServiceSchema,
  migrated: boolean,
): Promise<string[]> {
  const files = functionFiles(schema);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('BEGIN');
    if (files.length === 0) {
      await refuseFunctionsWithoutFiles(client, schema);
      await client.query('COMMIT');
      return [];
    }
    const checksum = createHash('sha256')
      .update(files.map((f) => `${f.name}\n${f.sql}`).join('\n'))
      .digest('hex');
    // Two processes migrating at once (an API and the worker starting together) take turns.
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`functions:${schema}`]);
    // As node-pg-migrate runs a migration: unqualified names in a file resolve in its schema.
    await client.query(`SET LOCAL search_path TO ${schema}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${schema}.${FUNCTIONS_TABLE} (checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const applied = await client.query<{ checksum: string }>(
      `SELECT checksum FROM ${schema}.${FUNCTIONS_TABLE}`,
    );
    if (!migrated && applied.rows[0]?.checksum === checksum) {
      await client.query('COMMIT');
      return [];
    }
    for (const file of files) {
      const defined = (await runFunctionFile(client, schema, file)).map((f) => f.signature);
      if (defined.length === 0 || defined.some((f) => !f.startsWith(`${schema}.${file.name}(`)))
        throw new Error(
          `${file.path} must define ${schema}.${file.name} and nothing else; it defines ${defined.join(', ') || 'nothing'}`,
        );
    }
    await client.query(`DELETE FROM ${schema}.${FUNCTIONS_TABLE}`);
    await client.query(`INSERT INTO ${schema}.${FUNCTIONS_TABLE} (checksum) VALUES ($1)`, [
      checksum,
    ]);
    await client.query('COMMIT');
    return files.map((f) => f.name);
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    await client.end();
  }
}

/** A schema with functions and not one file: the files were not shipped beside the code. */
async function refuseFunctionsWithoutFiles(client: pg.ClientBase, schema: ServiceSchema) {
  const functions = await functionRows(client, schema);
  if (functions.length > 0)
    throw new Error(
      `${schema} has ${functions.length} functions but ${functionsDir(schema)} holds no file`,
    );
}

export async function migrateAll(databaseUrl: string, log = createLogger('info')): Promise<void> {
  for (const schema of SERVICE_SCHEMAS) {
    const applied = await migrateNumbered(databaseUrl, schema);
    const functions = await applyFunctions(databaseUrl, schema, applied.length > 0);
    log.info({ schema, applied, functions: functions.length }, 'migrations up to date');
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
