// First: tracing, when wanted, patches the modules the others load.
import '../platform/tracing-register';
import { loadConfig } from '../platform/config';
import { createLogger } from '../platform/logger';
import { bootService, type BootedService } from './bootstrap';
import { SERVICES, isServiceName, type ServiceName } from './services';
import { watchEventLoop } from '../platform/event-loop';
import { stopTracing } from '../platform/tracing';

/**
 * Serves the services named on the command line (all three by default), each on its own
 * port, until SIGINT/SIGTERM; then drains in-flight requests and closes every backend.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, { process: 'api' });
  watchEventLoop((stall) => logger.warn(stall, 'event loop held up'));
  const requested = process.argv.slice(2);
  const unknown = requested.filter((name) => !isServiceName(name));
  if (unknown.length > 0)
    throw new Error(
      `unknown service(s): ${unknown.join(', ')}; known: ${Object.keys(SERVICES).join(', ')}`,
    );
  const names = (requested.length > 0 ? requested : Object.keys(SERVICES)) as ServiceName[];

  const booted: BootedService[] = [];
  for (const name of names) {
    booted.push(await bootService(name, SERVICES[name], config, logger, config.ports[name]));
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    void Promise.all(booted.map((b) => b.close()))
      .then(stopTracing)
      .then(() => process.exit(0));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((error: unknown) => {
  console.error('api failed to start:', error);
  process.exit(1);
});
