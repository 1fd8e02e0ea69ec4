import pino, { type Logger } from 'pino';
import { traceFields, tracingActive } from './tracing';

export type { Logger };

export function createLogger(level: string, bindings: Record<string, unknown> = {}): Logger {
  return pino({
    level,
    base: { pid: process.pid, ...bindings },
    timestamp: pino.stdTimeFunctions.isoTime,
    // trace_id and span_id of the span the line is written in: a log line leads to its trace.
    // (Tracing starts before any logger is made: platform/tracing-register.ts.)
    ...(tracingActive() ? { mixin: traceFields } : {}),
    redact: {
      paths: ['req.headers.authorization', '*.authorization', '*.secret'],
      censor: '[redacted]',
    },
  });
}
