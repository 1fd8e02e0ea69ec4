import { randomBytes } from 'node:crypto';
import { ROOT_CONTEXT, SpanKind, TraceFlags, trace, type Context } from '@opentelemetry/api';
import { SamplingDecision } from '@opentelemetry/sdk-trace';
import { platformSampler } from '../../../platform/tracing-sampler';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const under = (sampled: boolean): Context =>
  trace.setSpanContext(ROOT_CONTEXT, {
    traceId: TRACE,
    spanId: '00f067aa0ba902b7',
    traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
  });

describe("the platform's sampler", () => {
  const decide = (env: NodeJS.ProcessEnv, context: Context, kind: SpanKind, traceId = TRACE) =>
    platformSampler(env).shouldSample(context, traceId, 'span', kind, {}, []).decision;
  const { RECORD_AND_SAMPLED: SAMPLED, NOT_RECORD } = SamplingDecision;

  it('begins a trace only at a request or a message, never at a background query', () => {
    expect(decide({}, ROOT_CONTEXT, SpanKind.SERVER)).toBe(SAMPLED);
    expect(decide({}, ROOT_CONTEXT, SpanKind.CONSUMER)).toBe(SAMPLED);
    expect(decide({}, ROOT_CONTEXT, SpanKind.INTERNAL)).toBe(NOT_RECORD);
    expect(decide({}, ROOT_CONTEXT, SpanKind.CLIENT)).toBe(NOT_RECORD);
  });

  it("follows its parent's decision inside a trace (parent-based by default)", () => {
    expect(decide({}, under(true), SpanKind.CLIENT)).toBe(SAMPLED);
    expect(decide({}, under(false), SpanKind.CLIENT)).toBe(NOT_RECORD);
    expect(decide({}, under(false), SpanKind.SERVER)).toBe(NOT_RECORD);
  });

  it('takes OTEL_TRACES_SAMPLER and its ratio for the traces it begins', () => {
    const ratio = {
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.01',
    };
    const ids = Array.from({ length: 20_000 }, () => randomBytes(16).toString('hex'));
    const kept = ids.filter((id) => decide(ratio, ROOT_CONTEXT, SpanKind.SERVER, id) === SAMPLED);
    expect(kept.length / ids.length).toBeGreaterThan(0.005);
    expect(kept.length / ids.length).toBeLessThan(0.015);
    // A trace a trusted caller sampled is kept whatever its id.
    expect(ids.every((id) => decide(ratio, under(true), SpanKind.SERVER, id) === SAMPLED)).toBe(
      true,
    );
    expect(decide({ OTEL_TRACES_SAMPLER: 'always_off' }, under(true), SpanKind.SERVER)).toBe(
      NOT_RECORD,
    );
    expect(decide({ OTEL_TRACES_SAMPLER: 'always_on' }, under(false), SpanKind.SERVER)).toBe(
      SAMPLED,
    );
  });

  it('takes an argument out of [0, 1], or none, as 1', () => {
    const ids = Array.from({ length: 200 }, () => randomBytes(16).toString('hex'));
    for (const arg of ['', '7', '-1', 'x']) {
      const env = { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: arg };
      expect(ids.every((id) => decide(env, ROOT_CONTEXT, SpanKind.SERVER, id) === SAMPLED)).toBe(
        true,
      );
    }
  });
});
