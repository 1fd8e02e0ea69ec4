import Koa from 'koa';
import inject from 'light-my-request';
import { context, propagation, trace, SpanKind } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { traceRequests } from '../../api/http/tracing';
import { traceFields } from '../../platform/tracing';

/**
 * The apps' server span, with a real SDK recording into memory: which parent a request's span
 * takes from its caller's traceparent, what it is named and what it carries.
 */
describe("a request's server span", () => {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const manager = new AsyncLocalStorageContextManager().enable();
  beforeAll(() => {
    trace.setGlobalTracerProvider(provider);
    context.setGlobalContextManager(manager);
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  });
  afterAll(async () => {
    await provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  });
  beforeEach(() => exporter.reset());

  const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
  const CALLER_SPAN = '00f067aa0ba902b7';
  const traceparent = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;

  /** An app with only the tracing middleware and one route, answering the ids it ran under. */
  function app(trustedProxies: string[]) {
    const koa = new Koa();
    koa.use(
      traceRequests({ service: 'ledger', trustedProxies, untraced: new Set(['/healthz']) }, true)!,
    );
    koa.use(async (ctx, next) => {
      ctx.state.requestId = 'req-1';
      ctx.state.principal = { tenantId: 'tenant-1', keyId: 'key-1', role: 'reader' };
      (ctx as Koa.Context & { _matchedRoute?: string })._matchedRoute = '/v1/accounts/:id';
      (ctx as Koa.Context & { params?: Record<string, string> }).params = {
        id: ctx.path.split('/').pop()!,
      };
      await next();
    });
    koa.use((ctx) => {
      ctx.status = ctx.path.endsWith('/boom') ? 503 : 200;
      ctx.body = traceFields();
    });
    return koa.callback();
  }

  it("takes a trusted peer's traceparent as its parent, named by its route, and logs carry its ids", async () => {
    const reply = await inject(app(['loopback']), {
      url: '/v1/accounts/a1',
      headers: { traceparent },
      remoteAddress: '127.0.0.1',
    });
    const [span] = exporter.getFinishedSpans();
    expect(span!.spanContext().traceId).toBe(CALLER_TRACE);
    expect(span!.parentSpanContext?.spanId).toBe(CALLER_SPAN);
    expect(span!.name).toBe('GET /v1/accounts/:id');
    expect(span!.kind).toBe(SpanKind.SERVER);
    expect(span!.attributes).toMatchObject({
      'http.request.method': 'GET',
      'http.route': '/v1/accounts/:id',
      'http.response.status_code': 200,
      'platform.service': 'ledger',
      'platform.request_id': 'req-1',
      'client.address': '',
      'platform.tenant_id': 'tenant-1',
      'platform.key_id': 'key-1',
      'platform.id': 'a1',
    });
    expect(Object.keys(span!.attributes).filter((k) => /role|secret|token/.test(k))).toEqual([]);
    expect(reply.json()).toEqual({ trace_id: CALLER_TRACE, span_id: span!.spanContext().spanId });
  });

  it("starts a trace of its own for an untrusted peer's traceparent, linked to the one it named", async () => {
    await inject(app([]), { url: '/v1/accounts/a1', headers: { traceparent } });
    const [span] = exporter.getFinishedSpans();
    expect(span!.spanContext().traceId).not.toBe(CALLER_TRACE);
    expect(span!.parentSpanContext).toBeUndefined();
    expect(span!.links.map((link) => link.context.spanId)).toEqual([CALLER_SPAN]);
  });

  it('makes no trace of a probe', async () => {
    const reply = await inject(app(['loopback']), { url: '/healthz', headers: { traceparent } });
    expect(exporter.getFinishedSpans()).toEqual([]);
    expect(reply.json()).toEqual({});
  });

  it('marks a 5xx as an error, not a 4xx', async () => {
    await inject(app([]), { url: '/v1/accounts/boom' });
    expect(exporter.getFinishedSpans()[0]!.status.code).toBe(2); // SpanStatusCode.ERROR
  });

  it('mounts nothing when this process records no spans', () => {
    expect(
      traceRequests({ service: 'ledger', trustedProxies: [], untraced: new Set() }, false),
    ).toBeNull();
    expect(traceFields()).toEqual({});
  });
});
