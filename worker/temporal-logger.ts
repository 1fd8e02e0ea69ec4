import type { LogLevel, LogMetadata, Logger as TemporalLogger } from '@temporalio/common';
import type { Logger } from '../platform/logger';

/**
 * Temporal's level for each of pino's. Its INFO lines (a worker's state changes, the bundle's
 * size) are detail here: they show at LOG_LEVEL=debug.
 */
const PINO_LEVEL = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'debug',
  WARN: 'warn',
  ERROR: 'error',
} as const satisfies Record<LogLevel, string>;

/**
 * The worker's Temporal runtime logs (the SDK's own lines, workflow.log, activity Context.log and,
 * forwarded, the native core's) through the process's pino logger, so every line the worker
 * writes is one JSON object.
 */
export function temporalLogger(logger: Logger): TemporalLogger {
  const temporal = logger.child({ component: 'temporal' });
  const log = (level: LogLevel, message: string, meta?: LogMetadata) =>
    temporal[PINO_LEVEL[level]](meta ?? {}, message);
  return {
    log,
    trace: (message, meta) => log('TRACE', message, meta),
    debug: (message, meta) => log('DEBUG', message, meta),
    info: (message, meta) => log('INFO', message, meta),
    warn: (message, meta) => log('WARN', message, meta),
    error: (message, meta) => log('ERROR', message, meta),
  };
}
