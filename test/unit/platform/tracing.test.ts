import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { tracingWanted } from '../../../platform/tracing';
import { processServiceName } from '../../../platform/tracing-register';

const ROOT = path.resolve(__dirname, '../../..');

/**
 * What a process that loads the tracing register first ends up with: whether it records spans,
 * and which OpenTelemetry SDK modules it has loaded.
 */
function probe(env: NodeJS.ProcessEnv): { active: boolean; sdkModules: string[] } {
  const script = `
    require('./platform/tracing-register');
    const { tracingActive, stopTracing } = require('./platform/tracing');
    const sdkModules = Object.keys(require.cache)
      .filter((file) => /@opentelemetry\\/(sdk-|exporter-|instrumentation)/.test(file))
      .map((file) => file.replace(/.*node_modules\\//, '').split('/').slice(0, 2).join('/'));
    console.log(JSON.stringify({ active: tracingActive(), sdkModules: [...new Set(sdkModules)] }));
    stopTracing();`;
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('OTEL_')),
  );
  const out = execFileSync(path.join(ROOT, 'node_modules/.bin/tsx'), ['-e', script], {
    cwd: ROOT,
    env: { ...clean, ...env },
    encoding: 'utf8',
  });
  return JSON.parse(out.trim().split('\n').pop()!) as { active: boolean; sdkModules: string[] };
}

describe('tracing, on when an OTLP endpoint is set and absent otherwise', () => {
  it('wants traces for an OTLP endpoint (either variable), unless the SDK or the exporter is turned off', () => {
    expect(tracingWanted({})).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toBe(
      true,
    );
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };
    expect(tracingWanted({ ...on, OTEL_SDK_DISABLED: 'true' })).toBe(false);
    expect(tracingWanted({ ...on, OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
    expect(tracingWanted({ ...on, OTEL_SDK_DISABLED: 'false' })).toBe(true);
  });

  it('with no endpoint set, loads no SDK, no exporter and no instrumentation', () => {
    expect(probe({})).toEqual({ active: false, sdkModules: [] });
  });

  it('with an endpoint set, starts the SDK with its OTLP exporter and the instrumentations', () => {
    // Nothing listens there: no span is made, so nothing is sent.
    const { active, sdkModules } = probe({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    expect(active).toBe(true);
    expect(sdkModules).toEqual(
      expect.arrayContaining([
        '@opentelemetry/sdk-node',
        '@opentelemetry/exporter-trace-otlp-proto',
        '@opentelemetry/instrumentation-pg',
        '@opentelemetry/instrumentation-ioredis',
        '@opentelemetry/instrumentation-http',
        '@opentelemetry/instrumentation-undici',
      ]),
    );
  }, 30_000);

  it("names the service after the process: the one API it serves, the platform's several, the worker", () => {
    expect(processServiceName(['node', '/app/dist/api/main.js', 'ledger'])).toBe('ledger');
    expect(processServiceName(['node', '/app/dist/api/main.js'])).toBe('platform');
    expect(processServiceName(['node', '/app/dist/api/main.js', 'runs', 'quota'])).toBe('platform');
    expect(processServiceName(['node', '/app/dist/worker/main.js'])).toBe('platform-worker');
  });
});
