import { TraceFlags, trace } from '@opentelemetry/api';

/**
 * The OpenTelemetry settings a deployment sets (the SDK reads them; the rest of the OTEL_* family
 * works too): where traces go, how they are sampled, what the process is called.
 */
export const TRACING_VARIABLES = [
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_TRACES_EXPORTER',
  'OTEL_SERVICE_NAME',
  'OTEL_RESOURCE_ATTRIBUTES',
  'OTEL_SDK_DISABLED',
] as const;

/**
 * OpenTelemetry traces, exported over OTLP when the standard settings ask for them and absent
 * otherwise: with no OTLP endpoint set the SDK is never loaded, no exporter starts and no module
 * is patched, so an untraced process pays nothing but the no-op API's calls. The SDK reads the
 * other OTEL_* settings itself (OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_RESOURCE_ATTRIBUTES, ...);
 * OTEL_TRACES_SAMPLER and its argument are read by the platform's sampler (tracing-sampler.ts).
 */
export function tracingWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === 'true') return false;
  if ((env.OTEL_TRACES_EXPORTER ?? 'otlp') === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

interface Started {
  shutdown(): Promise<void>;
}
let started: Started | null = null;

/** Whether this process records spans (startTracing started the SDK). */
export const tracingActive = (): boolean => started !== null;

/**
 * Starts the SDK with the instrumentations of the platform's own calls: outgoing HTTP (Docker's
 * socket, S3, webhook deliveries, the quota client's fetch), Postgres and Redis. It must run
 * before those modules are first loaded (platform/tracing-register.ts, the first import of each
 * entry point). Incoming requests are the apps' own server spans (api/http/tracing.ts), which
 * trust a caller's traceparent only as TRUSTED_PROXIES says.
 */
export function startTracing(serviceName: string, env: NodeJS.ProcessEnv = process.env): boolean {
  if (started !== null || !tracingWanted(env)) return false;
  /* eslint-disable @typescript-eslint/no-require-imports -- loaded only when traces are wanted */
  const { NodeSDK } =
    require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { HttpInstrumentation } =
    require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { UndiciInstrumentation } =
    require('@opentelemetry/instrumentation-undici') as typeof import('@opentelemetry/instrumentation-undici');
  const { PgInstrumentation } =
    require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');
  const { IORedisInstrumentation } =
    require('@opentelemetry/instrumentation-ioredis') as typeof import('@opentelemetry/instrumentation-ioredis');
  const { platformSampler } = require('./tracing-sampler') as typeof import('./tracing-sampler');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const sdk = new NodeSDK({
    ...(env.OTEL_SERVICE_NAME ? {} : { serviceName }),
    sampler: platformSampler(env),
    // Traces only, unless asked: the metrics are Prometheus' (/metrics), the logs pino's (stdout),
    // and the SDK's default would push both to an OTLP endpoint that may take traces alone.
    ...(env.OTEL_METRICS_EXPORTER ? {} : { metricReaders: [] }),
    ...(env.OTEL_LOGS_EXPORTER ? {} : { logRecordProcessors: [] }),
    // Spans only inside a trace: the sampler would drop the others (tracing-sampler.ts); these
    // options spare making them.
    instrumentations: [
      new HttpInstrumentation({
        disableIncomingRequestInstrumentation: true,
        requireParentforOutgoingSpans: true,
      }),
      new UndiciInstrumentation({ requireParentforSpans: true }),
      // The statement's text, never its values (they can be keys' hashes, amounts, bodies).
      new PgInstrumentation({ enhancedDatabaseReporting: false, requireParentSpan: true }),
      new IORedisInstrumentation({
        dbStatementSerializer: (command) => command,
        requireParentSpan: true,
      }),
    ],
  });
  sdk.start();
  started = sdk;
  return true;
}

/** Flushes what is buffered and stops exporting (before the process exits). */
export async function stopTracing(): Promise<void> {
  const sdk = started;
  started = null;
  await sdk?.shutdown();
}

/**
 * The active span's ids for a log line (pino's mixin), so that a line leads to its trace; none
 * outside a span or when nothing records.
 */
export function traceFields(): { trace_id?: string; span_id?: string } {
  const span = trace.getActiveSpan();
  if (span === undefined) return {};
  const { traceId, spanId, traceFlags } = span.spanContext();
  // An unsampled span is in no trace store: its ids would lead nowhere.
  return traceFlags & TraceFlags.SAMPLED ? { trace_id: traceId, span_id: spanId } : {};
}
