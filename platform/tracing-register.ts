import path from 'node:path';
import { startTracing } from './tracing';

/**
 * The first import of each entry point (api/main.ts, worker/main.ts): the SDK, when traces are
 * wanted, has to be running before pg, ioredis and http are loaded to patch them. The service
 * name is the process's: `ledger`, `runs` or `quota` for an API process serving one, `platform`
 * for one serving several, `platform-worker` for the worker; OTEL_SERVICE_NAME overrides it.
 */
export function processServiceName(argv: readonly string[] = process.argv): string {
  const entry = path.basename(path.dirname(argv[1] ?? ''));
  if (entry === 'worker') return 'platform-worker';
  const services = argv.slice(2);
  return services.length === 1 ? services[0]! : 'platform';
}

startTracing(processServiceName());
