import getRawBody from 'raw-body';
import type { Context, Next } from 'koa';
import { DomainError } from '../../platform/errors';

declare module 'koa' {
  interface Request {
    /** The parsed JSON body, set by jsonBody(). */
    body?: unknown;
  }
}

export interface JsonBodyOptions {
  /** Largest body accepted, in bytes; past it the request is answered 413. */
  limitBytes: number;
  /** Deepest nesting accepted; checked on the raw text before parsing. */
  maxDepth: number;
  /** Paths that take larger bodies (Temporal's payloads to the codec endpoint), by prefix. */
  largerLimits?: { pathPrefix: string; limitBytes: number }[];
}

/** What the body parser puts on ctx.state for later middleware (idempotency hashes the raw text). */
export interface ParsedBodyState {
  rawBody?: string;
}

export class PayloadTooLargeError extends DomainError {
  constructor(limitBytes: number) {
    super('PAYLOAD_TOO_LARGE', { message: `request body exceeds ${limitBytes} bytes` });
  }
}

export class JsonDepthError extends DomainError {
  constructor(maxDepth: number) {
    super('INVALID_JSON_DEPTH', { message: `JSON nesting deeper than ${maxDepth} levels` });
  }
}

export class MalformedJsonError extends DomainError {
  constructor(reason: string) {
    super('MALFORMED_JSON', { message: `malformed JSON body: ${reason}` });
  }
}

export class UnsupportedMediaTypeError extends DomainError {
  constructor() {
    super('UNSUPPORTED_MEDIA_TYPE', { message: 'request body must be application/json' });
  }
}

/**
 * Deepest bracket nesting of a JSON text, counted without parsing it, so a hostile body
 * cannot make the parser recurse. Brackets inside strings do not count.
 */
export function jsonNestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b /* { */ || c === 0x5b /* [ */) deepest = Math.max(deepest, ++depth);
    else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth--;
  }
  return deepest;
}

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Reads a JSON body under a size limit and a nesting limit into ctx.request.body. */
export function jsonBody(options: JsonBodyOptions) {
  return async function parseJsonBody(ctx: Context, next: Next): Promise<void> {
    if (!METHODS_WITH_BODY.has(ctx.method)) {
      await next();
      return;
    }
    const limit =
      options.largerLimits?.find((l) => ctx.path.startsWith(l.pathPrefix))?.limitBytes ??
      options.limitBytes;
    const declaredLength = Number(ctx.get('content-length') || '0');
    if (declaredLength > limit) throw new PayloadTooLargeError(limit);
    let raw: string;
    try {
      raw = await getRawBody(ctx.req, { limit, encoding: 'utf8' });
    } catch (error) {
      if ((error as { type?: string }).type === 'entity.too.large') {
        throw new PayloadTooLargeError(limit);
      }
      throw error;
    }
    (ctx.state as ParsedBodyState).rawBody = raw;
    if (raw.trim() === '') {
      ctx.request.body = undefined;
      await next();
      return;
    }
    if (!ctx.is('application/json', '+json') && ctx.get('content-type') !== '') {
      throw new UnsupportedMediaTypeError();
    }
    if (jsonNestingDepth(raw) > options.maxDepth) throw new JsonDepthError(options.maxDepth);
    try {
      ctx.request.body = JSON.parse(raw) as unknown;
    } catch (error) {
      throw new MalformedJsonError((error as Error).message);
    }
    await next();
  };
}
