import { randomUUID } from 'node:crypto';
import Koa, { type Context, type Middleware, type Next } from 'koa';
import type Router from '@koa/router';
import client from 'prom-client';
import type { Logger } from '../../platform/logger';
import {
  isDomainError,
  MethodNotAllowedError,
  platformError,
  type DomainError,
  type ErrorCatalogue,
} from '../../platform/errors';
import { errorResponse } from './error-response';
import { isBackendUnreachable } from '../../db/unreachable';
import { jsonBody, type JsonBodyOptions } from './json-body';
import { apiReference } from './api-reference';
import { clientAddressResolver } from './client-address';
import { traceRequests } from './tracing';
import { matchedRoute } from './route';
import { withRequestId } from '../../platform/request-scope';

/** How one service renders an error, given the status its catalogue gives the code. */
export type ErrorEnvelope = (error: DomainError, status: number) => unknown;

export interface AppOptions {
  service: string;
  logger: Logger;
  envelope: ErrorEnvelope;
  /** The service's error codes (its own and the platform's): the status each one answers. */
  errors: ErrorCatalogue;
  body: JsonBodyOptions;
  /** Middleware that runs before body parsing and routing, e.g. an edge rate limiter. */
  edge?: Middleware[];
  routers: Router[];
  /** Paths that are logged at debug level only (probes polled every second). */
  quietPaths?: string[];
  /** TRUSTED_PROXIES: whose X-Forwarded-For names the client (`ctx.state.clientAddress`). */
  trustedProxies: string[];
}

export interface ServiceApp {
  app: Koa;
  metrics: client.Registry;
}

const REQUEST_ID_HEADER = 'X-Request-Id';
const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** Seconds a client waits before retrying a request a backend could not answer. */
export const BACKEND_RETRY_AFTER_SECONDS = 1;

/** Postgres or Redis was out of reach (restarting, failing over): transient, retry as it was. */
const serviceUnavailable = (cause: unknown) =>
  platformError('SERVICE_UNAVAILABLE', { retryAfterSeconds: BACKEND_RETRY_AFTER_SECONDS, cause });

/**
 * The Koa app every service is built on: request id, access log, metrics, one error hook
 * that renders the service's own envelope, JSON body limits, 404 and 405 with `Allow` in
 * that same envelope.
 */
export function createApp(options: AppOptions): ServiceApp {
  const app = new Koa({ proxy: false });
  const metrics = new client.Registry();
  metrics.setDefaultLabels({ service: options.service });
  const requestDuration = new client.Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [metrics],
  });
  const quiet = new Set(options.quietPaths ?? []);
  const clientAddressOf = clientAddressResolver(options.trustedProxies);

  // Outermost: the access log line and the error's are written inside the request's span.
  const tracing = traceRequests({
    service: options.service,
    trustedProxies: options.trustedProxies,
    untraced: quiet,
  });
  if (tracing) app.use(tracing);
  app.use(async function observe(ctx: Context, next: Next) {
    const started = process.hrtime.bigint();
    const incoming = ctx.get(REQUEST_ID_HEADER);
    const requestId = REQUEST_ID_PATTERN.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    ctx.state.clientAddress = clientAddressOf(ctx.req);
    ctx.state.log = options.logger.child({ requestId });
    ctx.set(REQUEST_ID_HEADER, requestId);
    try {
      await withRequestId(requestId, next);
    } catch (error) {
      renderError(ctx, error, options);
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = matchedRoute(ctx) ?? 'unmatched';
      requestDuration.observe({ method: ctx.method, route, status: ctx.status }, seconds);
      const line = {
        method: ctx.method,
        path: ctx.path,
        status: ctx.status,
        ms: Math.round(seconds * 1000),
        client: ctx.state.clientAddress as string,
      };
      if (quiet.has(ctx.path)) (ctx.state.log as Logger).debug(line, 'request');
      else (ctx.state.log as Logger).info(line, 'request');
    }
  });
  for (const middleware of options.edge ?? []) app.use(middleware);
  app.use(async function notFoundOrNotAllowed(ctx: Context, next: Next) {
    await next();
    if (ctx.body !== undefined && ctx.body !== null) return;
    // The router answers 501 for a method no route of it uses (TRACE, CONNECT, ...): to a client
    // that is a method this path does not allow, so 405 with `Allow` like any other, or 404
    // where no route has the path at all.
    const allow = ctx.response.get('Allow');
    if ((ctx.status === 405 || ctx.status === 501) && allow !== '') {
      throw new MethodNotAllowedError(allow, `method ${ctx.method} not allowed on ${ctx.path}`);
    }
    if (ctx.status === 404 || ctx.status === 501) {
      throw platformError('NOT_FOUND', { message: `no route for ${ctx.method} ${ctx.path}` });
    }
  });
  app.use(apiReference(options.service));
  app.use(jsonBody(options.body));
  for (const router of options.routers) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  return { app, metrics };
}

function renderError(ctx: Context, error: unknown, options: AppOptions): void {
  const domainError = isDomainError(error)
    ? error
    : isBackendUnreachable(error)
      ? serviceUnavailable(error)
      : platformError('INTERNAL_ERROR', { cause: error });
  const { status, headers } = errorResponse(domainError, options.errors);
  const log = ctx.state.log as Logger;
  // A backend restarting is expected and transient: one line, not a stack per request.
  if (domainError.code === 'SERVICE_UNAVAILABLE')
    log.warn({ cause: (domainError.cause as Error | undefined)?.message }, 'backend unreachable');
  // A 5xx the service chose, with its Retry-After (grants still being written, a statement budget
  // spent), is a refusal the client retries: one line, not a stack.
  else if (status >= 500 && domainError.retryAfterSeconds !== undefined)
    log.warn(
      { code: domainError.code, retryAfterSeconds: domainError.retryAfterSeconds },
      'request deferred',
    );
  else if (status >= 500) log.error({ err: domainError.cause ?? domainError }, 'request failed');
  else log.debug({ code: domainError.code, message: domainError.message }, 'request refused');
  ctx.status = status;
  ctx.body = options.envelope(domainError, status);
  for (const [name, value] of Object.entries(headers)) ctx.set(name, value);
}
