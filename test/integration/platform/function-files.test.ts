import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../../platform/config';
import { createLogger } from '../../../platform/logger';
import {
  functionFiles,
  migrateAll,
  migrateNumbered,
  migrationsDir,
  runFunctionFile,
  SERVICE_SCHEMAS,
  type FunctionFile,
  type ServiceSchema,
} from '../../../db/migrate';

/**
 * Each SQL function's current definition is its file, db/<schema>/functions/<name>.sql: what a
 * newcomer reads is what the database runs. Postgres compares them itself: every file is run over
 * the database in a transaction that is rolled back, and pg_get_functiondef of each function it
 * defines must be what the database had (pg_get_functiondef is the normal form: signature,
 * attributes such as plan_cache_mode, and the body; comments outside the body are not kept).
 */
const config = loadConfig();

/**
 * The numbered migrations written before the function files existed, per schema: history, which
 * redefined functions in place. A later one may only drop a function or change its signature.
 */
const MIGRATIONS_BEFORE_FUNCTION_FILES: Record<ServiceSchema, number> = {
  ledger: 18,
  runs: 6,
  quota: 0,
};

type SchemaFile = FunctionFile & { schema: ServiceSchema };
const allFunctionFiles = (): SchemaFile[] =>
  SERVICE_SCHEMAS.flatMap((schema) => functionFiles(schema).map((f) => ({ ...f, schema })));
const shown = (file: FunctionFile) => path.relative(process.cwd(), file.path);

interface Stored {
  /** `schema.name(argument types)` */
  signature: string;
  /** pg_get_functiondef, read under the session's own search_path (it names types relative to it). */
  definition: string;
}

/** Every function of the service schemas (or of one), by oid. */
async function definitions(
  client: pg.ClientBase,
  schemas: readonly ServiceSchema[] = SERVICE_SCHEMAS,
): Promise<Map<number, Stored>> {
  const { rows } = await client.query<Stored & { oid: number }>(
    `SELECT p.oid, pg_get_functiondef(p.oid) AS definition,
            format('%s.%s(%s)', n.nspname, p.proname, pg_get_function_identity_arguments(p.oid)) AS signature
     FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname = ANY ($1) ORDER BY signature`,
    [schemas],
  );
  return new Map(rows.map(({ oid, ...stored }) => [oid, stored]));
}

/** Runs every file in a transaction rolled back: which function (oid) each defines, and the definitions then. */
async function runFilesRolledBack(client: pg.ClientBase, files: SchemaFile[]) {
  const fileOf = new Map<number, SchemaFile>();
  const strays: string[] = [];
  await client.query('BEGIN');
  try {
    for (const file of files) {
      await client.query(`SET LOCAL search_path TO ${file.schema}`); // as db/migrate.ts runs them
      const defined = await runFunctionFile(client, file.schema, file);
      if (defined.length === 0) strays.push(`${shown(file)} defines no function`);
      for (const { oid, signature } of defined) {
        if (!signature.startsWith(`${file.schema}.${file.name}(`))
          strays.push(`${shown(file)} defines ${signature}, not ${file.schema}.${file.name}`);
        fileOf.set(oid, file);
      }
    }
    await client.query('RESET search_path');
    return { fileOf, strays, fromFiles: await definitions(client) };
  } finally {
    await client.query('ROLLBACK');
  }
}

/** The first line where two definitions differ, to show in a failure. */
function firstDifference(database: string, file: string): string {
  const [a, b] = [database.split('\n'), file.split('\n')];
  const line = a.findIndex((text, i) => text !== b[i]);
  return `line ${line + 1}: database ${JSON.stringify(a[line])}, file ${JSON.stringify(b[line])}`;
}

/** Where the database and the function files disagree, one sentence each; none when they agree. */
async function disagreements(client: pg.ClientBase, files = allFunctionFiles()) {
  const live = await definitions(client);
  const { fileOf, strays, fromFiles } = await runFilesRolledBack(client, files);
  const problems = [...strays];
  for (const [oid, { signature, definition }] of live) {
    const file = fileOf.get(oid);
    const fromFile = fromFiles.get(oid)?.definition ?? '';
    if (!file) problems.push(`${signature} has no file that defines it`);
    else if (fromFile !== definition)
      problems.push(
        `${signature} differs from ${shown(file)}, ${firstDifference(definition, fromFile)}`,
      );
  }
  for (const [oid, file] of fileOf)
    if (!live.has(oid))
      problems.push(`${shown(file)} defines ${fromFiles.get(oid)?.signature}, not in the database`);
  return problems;
}

/**
 * Runs a schema's pending numbered migrations one at a time and names each one that redefines a
 * function in place (the same function, another definition: its file would overwrite it) or drops
 * a function that a file still defines (the file would bring it back).
 */
async function migrationsAgainstTheFiles(url: string, schema: ServiceSchema, dir: string) {
  const client = await connected(url);
  try {
    const problems: string[] = [];
    const dropped = new Map<string, string>();
    for (;;) {
      const before = await definitions(client, [schema]);
      const [migration] = await migrateNumbered(url, schema, { dir, count: 1 });
      if (!migration) break;
      const after = await definitions(client, [schema]);
      const signaturesAfter = new Set([...after.values()].map((f) => f.signature));
      for (const [oid, was] of before) {
        const now = after.get(oid);
        if (now && now.definition !== was.definition)
          problems.push(`${migration} redefines ${was.signature} in place: edit its file instead`);
        if (!now && !signaturesAfter.has(was.signature)) dropped.set(was.signature, migration);
      }
    }
    const files = allFunctionFiles().filter((file) => file.schema === schema);
    const { fileOf, fromFiles } = await runFilesRolledBack(client, files);
    const signatureFiles = new Map(
      [...fileOf].map(([oid, file]) => [fromFiles.get(oid)?.signature, file]),
    );
    for (const [signature, migration] of dropped) {
      const file = signatureFiles.get(signature);
      if (file) problems.push(`${migration} drops ${signature}, but ${shown(file)} defines it`);
    }
    return problems;
  } finally {
    await client.end();
  }
}

async function connected(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

function scratchUrl(name: string): string {
  const url = new URL(config.databaseUrl);
  url.pathname = `/${name}`;
  return url.href;
}

describe('SQL functions, one file each (db/<schema>/functions/<name>.sql)', () => {
  const scratch = {
    fresh: `function_files_${process.pid}_fresh`,
    stepped: `function_files_${process.pid}_stepped`,
  };
  let client: pg.Client;

  beforeAll(async () => {
    client = await connected(config.databaseUrl);
    for (const name of Object.values(scratch)) {
      await client.query(`DROP DATABASE IF EXISTS ${name}`);
      await client.query(`CREATE DATABASE ${name}`);
    }
  });
  afterAll(async () => {
    for (const name of Object.values(scratch))
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.end();
  });

  it('the migrated database runs exactly the files: every function has its file, every file defines its function', async () => {
    expect(allFunctionFiles().length).toBeGreaterThan(0);
    expect(await disagreements(client)).toEqual([]);
  });

  // Both this database (migrated many times over) and a fresh one run exactly the files, so they
  // run the same functions.
  it('a fresh database, migrated by migrateAll, runs exactly the files', async () => {
    await migrateAll(scratchUrl(scratch.fresh), createLogger('warn'));
    const fresh = await connected(scratchUrl(scratch.fresh));
    try {
      expect(await disagreements(fresh)).toEqual([]);
    } finally {
      await fresh.end();
    }
  }, 60_000);

  it('when a file defines nothing, or the database runs another body than its file, the check names both', async () => {
    const fresh = await connected(scratchUrl(scratch.fresh));
    try {
      await fresh.query(
        `CREATE OR REPLACE FUNCTION ledger.iso_ms(p_at timestamptz) RETURNS text LANGUAGE sql STABLE AS 'SELECT p_at::text'`,
      );
      const files = allFunctionFiles().map((f) =>
        f.name === 'now_ms' ? { ...f, sql: '-- the definition went missing' } : f,
      );
      const problems = await disagreements(fresh, files);
      expect(problems).toEqual([
        'db/ledger/functions/now_ms.sql defines no function',
        expect.stringMatching(
          /^ledger\.iso_ms\(p_at timestamp with time zone\) differs from db\/ledger\/functions\/iso_ms\.sql, line \d+: database .*p_at::text/,
        ),
        'ledger.now_ms() has no file that defines it',
      ]);
    } finally {
      await fresh.end();
    }
  }, 60_000);

  it('no numbered migration written after the function files redefines a function in place, or drops one that a file defines', async () => {
    const url = scratchUrl(scratch.stepped);
    const problems: string[] = [];
    for (const schema of SERVICE_SCHEMAS) {
      await migrateNumbered(url, schema, { count: MIGRATIONS_BEFORE_FUNCTION_FILES[schema] });
      problems.push(...(await migrationsAgainstTheFiles(url, schema, migrationsDir(schema))));
    }
    expect(problems).toEqual([]);
  }, 60_000);

  it('when a numbered migration redefines a function without its file, or drops one whose file stays, the check names it', async () => {
    // The stepped database of the test above, and one more ledger migration, in a copy of the directory.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-migrations-'));
    try {
      fs.cpSync(migrationsDir('ledger'), dir, { recursive: true });
      fs.writeFileSync(
        path.join(dir, '9999_rules-in-a-migration.sql'),
        `-- Up Migration
CREATE OR REPLACE FUNCTION now_ms() RETURNS timestamptz LANGUAGE sql STABLE AS $$ SELECT now() $$;
DROP FUNCTION iso_ms(timestamptz);
-- Down Migration
`,
      );
      expect(await migrationsAgainstTheFiles(scratchUrl(scratch.stepped), 'ledger', dir)).toEqual([
        '9999_rules-in-a-migration redefines ledger.now_ms() in place: edit its file instead',
        '9999_rules-in-a-migration drops ledger.iso_ms(p_at timestamp with time zone), but db/ledger/functions/iso_ms.sql defines it',
      ]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
