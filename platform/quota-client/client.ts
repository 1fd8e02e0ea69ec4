import createClient, { type Middleware } from 'openapi-fetch';
import { ulid } from 'ulid';
import { KEYED_PATHS, type paths } from './quota-api';

/** How a service reaches the quota service. */
export interface QuotaClientOptions {
  baseUrl: string;
  /** A key of the quota service (`qk_...`), sent as a bearer token. */
  apiKey: string;
  /** Tries per call while the service answers 429 or 503 (default 4). */
  attempts?: number;
  /** The longest wait between two tries, whatever Retry-After asks (default 5 s). */
  maxDelayMs?: number;
  /** How long one try may take before it is abandoned as not answered (default 10 s). */
  timeoutMs?: number;
  /**
   * The id of the request a call is made for, if any: sent as X-Request-Id (when the call does
   * not set one), so that the quota service's log lines of the call carry the caller's id.
   */
  requestId?: () => string | undefined;
}

export type QuotaClient = ReturnType<typeof createQuotaClient>;

/** Answers a call may be tried again for: the service is busy (429) or not ready (503). */
const RETRIED = new Set([429, 503]);
const FIRST_DELAY_MS = 100;

/**
 * A typed client of the quota service's API (types generated from its OpenAPI document:
 * quota-api.ts). A call answered 429 or 503 is tried again after Retry-After (or a doubling
 * delay); a call whose body carries an idempotency_key (consume, commit, ...) is given one when
 * the caller did not, the same on every try, so a retry never decides twice.
 */
export function createQuotaClient(options: QuotaClientOptions) {
  const client = createClient<paths>({
    baseUrl: options.baseUrl,
    headers: { authorization: `Bearer ${options.apiKey}` },
    fetch: retrying(
      options.attempts ?? 4,
      options.maxDelayMs ?? 5_000,
      options.timeoutMs ?? 10_000,
    ),
  });
  client.use(oneIdempotencyKey);
  if (options.requestId) client.use(forwardRequestId(options.requestId));
  return client;
}

const REQUEST_ID_HEADER = 'x-request-id';

function forwardRequestId(requestId: () => string | undefined): Middleware {
  return {
    onRequest({ request }) {
      const id = requestId();
      if (id !== undefined && !request.headers.has(REQUEST_ID_HEADER))
        request.headers.set(REQUEST_ID_HEADER, id);
      return undefined;
    },
  };
}

const oneIdempotencyKey: Middleware = {
  async onRequest({ request, schemaPath }) {
    if (request.method !== 'POST' || !KEYED_PATHS.includes(schemaPath)) return undefined;
    const body = (await request.clone().json()) as Record<string, unknown>;
    if (body.idempotency_key !== undefined && body.idempotency_key !== null) return undefined;
    return new Request(request, { body: JSON.stringify({ ...body, idempotency_key: ulid() }) });
  },
};

function retrying(attempts: number, maxDelayMs: number, timeoutMs: number) {
  return async (request: Request): Promise<Response> => {
    for (let attempt = 1; ; attempt++) {
      const response = await fetch(request.clone(), { signal: AbortSignal.timeout(timeoutMs) });
      if (!RETRIED.has(response.status) || attempt >= attempts) return response;
      await response.body?.cancel();
      const delayMs = retryDelayMs(response.headers.get('retry-after'), attempt, maxDelayMs);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  };
}

/** Retry-After's seconds when it gives them, else 100 ms doubling per try; at most maxMs. */
export function retryDelayMs(retryAfter: string | null, attempt: number, maxMs: number): number {
  const seconds = retryAfter === null || retryAfter.trim() === '' ? NaN : Number(retryAfter);
  const ms =
    Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : FIRST_DELAY_MS * 2 ** (attempt - 1);
  return Math.min(ms, maxMs);
}
