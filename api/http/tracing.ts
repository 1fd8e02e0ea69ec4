import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  propagation,
  trace,
  type Link,
} from '@opentelemetry/api';
import type { Context, Middleware, Next } from 'koa';
import { tracingActive } from '../../platform/tracing';
import { peerTrustResolver } from './client-address';
import { matchedRoute } from './route';

const tracer = trace.getTracer('platform-http');

/**
 * Each request's server span, the parent of every span its handling makes (Postgres, Redis, the
 * quota client, a workflow start), named by its route. A caller's W3C traceparent is its parent
 * only when the peer is trusted (TRUSTED_PROXIES, as for X-Forwarded-For): anyone else's starts a
 * trace of its own, linked to the one it named, so that nobody outside can join or sample our
 * traces. Null when this process records no spans: nothing to mount.
 */
export function traceRequests(
  options: { service: string; trustedProxies: string[]; untraced: Set<string> },
  active = tracingActive(),
): Middleware | null {
  if (!active) return null;
  const { service, untraced } = options;
  const trusted = peerTrustResolver(options.trustedProxies);
  return async function traceRequest(ctx: Context, next: Next): Promise<void> {
    // The probes, polled every few seconds, would each be a trace of nothing.
    if (untraced.has(ctx.path)) {
      await next();
      return;
    }
    const carried = propagation.extract(ROOT_CONTEXT, ctx.headers);
    const parent = trusted(ctx.req) ? carried : ROOT_CONTEXT;
    const named = trace.getSpanContext(carried);
    const links: Link[] = parent === ROOT_CONTEXT && named ? [{ context: named }] : [];
    const span = tracer.startSpan(
      ctx.method,
      {
        kind: SpanKind.SERVER,
        links,
        attributes: {
          'http.request.method': ctx.method,
          'url.path': ctx.path,
          'platform.service': service,
        },
      },
      parent,
    );
    try {
      await context.with(trace.setSpan(parent, span), next);
    } finally {
      const route = matchedRoute(ctx);
      if (route !== undefined) {
        span.updateName(`${ctx.method} ${route}`);
        span.setAttribute('http.route', route);
      }
      span.setAttributes({
        'http.response.status_code': ctx.status,
        'platform.request_id': String(ctx.state.requestId ?? ''),
        'client.address': String(ctx.state.clientAddress ?? ''),
        ...platformIds(ctx),
      });
      if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
  };
}

/** Longer than any id the platform makes: a path segment past it is not one of ours. */
const ID_LENGTH_MAX = 128;

/**
 * The platform's ids the request named, as attributes: the tenant and key that authenticated
 * it (every service's principal has both; a key id is its public part), and the route's
 * parameters (`platform.track_id`, `platform.workflow_id`, `platform.transaction_id`, ...).
 */
function platformIds(ctx: Context): Record<string, string> {
  const ids: Record<string, string> = {};
  const principal = ctx.state.principal as { tenantId?: string | null; keyId?: string } | undefined;
  if (principal?.tenantId) ids['platform.tenant_id'] = principal.tenantId;
  if (principal?.keyId) ids['platform.key_id'] = principal.keyId;
  const params = (ctx as Context & { params?: Record<string, string> }).params ?? {};
  for (const [name, value] of Object.entries(params))
    if (typeof value === 'string' && value.length <= ID_LENGTH_MAX) ids[`platform.${name}`] = value;
  return ids;
}
