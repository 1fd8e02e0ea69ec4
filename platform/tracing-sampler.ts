import { SpanKind, trace, type Attributes, type Context, type Link } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SamplingResult,
} from '@opentelemetry/sdk-trace';

/**
 * The sampler OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG name (the specification's six;
 * unset or unknown: parentbased_always_on, its default), under one rule of the platform's: a trace
 * begins only where work comes in, a request (a SERVER span) or a message (CONSUMER). A span that
 * would begin one anywhere else is not recorded, nor is what it starts: the statements and
 * commands of the timers and pollers that every process runs every second (slonik makes a span of
 * each of its queries) would otherwise be a stream of traces of their own.
 */
export function platformSampler(env: NodeJS.ProcessEnv = process.env): Sampler {
  return new EntrySampler(samplerFromEnv(env));
}

class EntrySampler implements Sampler {
  constructor(private readonly delegate: Sampler) {}

  shouldSample(
    context: Context,
    traceId: string,
    spanName: string,
    spanKind: SpanKind,
    attributes: Attributes,
    links: Link[],
  ): SamplingResult {
    const entry = spanKind === SpanKind.SERVER || spanKind === SpanKind.CONSUMER;
    if (!entry && trace.getSpanContext(context) === undefined)
      return { decision: SamplingDecision.NOT_RECORD };
    return this.delegate.shouldSample(context, traceId, spanName, spanKind, attributes, links);
  }

  toString(): string {
    return `EntrySampler{${this.delegate.toString()}}`;
  }
}

function samplerFromEnv(env: NodeJS.ProcessEnv): Sampler {
  const ratio = () => {
    const arg = Number(env.OTEL_TRACES_SAMPLER_ARG);
    return env.OTEL_TRACES_SAMPLER_ARG?.trim() && arg >= 0 && arg <= 1 ? arg : 1;
  };
  switch (env.OTEL_TRACES_SAMPLER?.trim()) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio());
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio()) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}
