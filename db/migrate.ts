import path from 'node:path';
import fs from 'node:fs';
import { runner } from 'node-pg-migrate';
import { loadConfig } from '../api/platform/config';
import { createLogger } from '../api/platform/logger';

/** One Postgres schema per service; each has its own migrations folder and history table. */
export const SERVICE_SCHEMAS = ['ledger', 'runs', 'quota'] as const;
export type ServiceSchema = (typeof SERVICE_SCHEMAS)[number];

/** The migrations folder, found from the source tree or from the compiled one under dist/. */
export function migrationsDir(schema: ServiceSchema): string {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('cannot find the repository root from ' + __dirname);
    dir = parent;
  }
  return path.join(dir, 'db', 'migrations', schema);
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
    log.info({ schema, applied: applied.map((m) => m.name) }, 'migrations up to date');
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
