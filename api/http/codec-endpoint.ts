import type { Payload, PayloadCodec } from '@temporalio/common';
import Joi from 'joi';
import type { Context, Middleware, Next } from 'koa';
import { PayloadDecryptionError } from '../../platform/payload-codec';

/**
 * Temporal's remote codec protocol, for the Web UI and `temporal ... --codec-endpoint`: POST
 * `<endpoint>/decode` (and `/encode`) with `{"payloads": [...]}` in protobuf JSON (metadata values
 * and data in base64), answered in the same shape. The UI calls it from the browser, so CORS
 * answers its origin (credentials allowed: an operator's session cookie); the CLI sends
 * `Authorization` (`--codec-auth`). Which credential may call it is the hosting service's rule.
 */

/** Payloads in one request; the UI sends one event's (a handful). */
export const CODEC_MAX_PAYLOADS = 1000;
/** A body may carry one payload at Temporal's own size limit (2 MiB), base64 and JSON around it. */
export const CODEC_BODY_LIMIT_BYTES = 4 * 1024 * 1024;
/** Metadata entries of one payload. */
export const CODEC_MAX_METADATA = 32;
/** How long a browser keeps an operator's session cookie (a working day). */
export const CODEC_SESSION_SECONDS = 8 * 3600;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const base64 = () => Joi.string().pattern(BASE64, 'base64').allow('');

export const JSON_PAYLOADS = Joi.object({
  payloads: Joi.array()
    .items(
      Joi.object({
        metadata: Joi.object()
          .pattern(/^[\s\S]{1,256}$/, base64())
          .max(CODEC_MAX_METADATA)
          .default({})
          .description('metadata values in base64 (e.g. `encoding`)'),
        data: base64().default('').description('the payload bytes in base64'),
      }).id('CodecPayload'),
    )
    .max(CODEC_MAX_PAYLOADS)
    .required(),
}).id('CodecPayloads');

interface JsonPayload {
  metadata: Record<string, string>;
  data: string;
}

/** A request's (and an answer's) body, as JSON_PAYLOADS validated it. */
export interface CodecPayloadsBody {
  payloads: JsonPayload[];
}

const fromJson = (p: JsonPayload): Payload => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata).map(([name, value]) => [name, Buffer.from(value, 'base64')]),
  ),
  data: Buffer.from(p.data, 'base64'),
});

const toJson = (p: Payload): JsonPayload => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([name, value]) => [
      name,
      Buffer.from(value ?? []).toString('base64'),
    ]),
  ),
  data: Buffer.from(p.data ?? []).toString('base64'),
});

/** A payload of the request the codec could not decode, by its index. */
export interface CodecRefusal {
  index: number;
  message: string;
}

/**
 * The answer to `/encode` or `/decode`: the request's payloads through the codec, in order; or
 * the payloads it could not decrypt (another deployment's key, altered), each with its index.
 */
export async function codecPayloads(
  codec: PayloadCodec,
  direction: 'encode' | 'decode',
  body: CodecPayloadsBody,
): Promise<CodecPayloadsBody | { refused: CodecRefusal[] }> {
  const payloads = body.payloads.map(fromJson);
  if (direction === 'encode') return { payloads: (await codec.encode(payloads)).map(toJson) };
  const decoded: JsonPayload[] = [];
  const refused: CodecRefusal[] = [];
  for (const [index, payload] of payloads.entries()) {
    try {
      decoded.push(...(await codec.decode([payload])).map(toJson));
    } catch (error) {
      if (!(error instanceof PayloadDecryptionError)) throw error;
      refused.push({ index, message: error.message });
    }
  }
  return refused.length > 0 ? { refused } : { payloads: decoded };
}

/** What a browser sends to the codec beside its credentials (the UI's own headers). */
export const CODEC_REQUEST_HEADERS =
  'Authorization, Authorization-Extras, Content-Type, X-Namespace';

/**
 * CORS for the listed origins only (exact matches, e.g. the Web UI's `http://127.0.0.1:8233`):
 * a preflight is answered 204 here, before any credential check (browsers send none with it);
 * other requests go on with the headers set, their refusals included, so the UI reads them.
 */
export function codecCors(origins: readonly string[]): Middleware {
  const allowed = new Set(origins);
  return async function corsForTheWebUi(ctx: Context, next: Next): Promise<void> {
    ctx.vary('Origin');
    const origin = ctx.get('Origin');
    if (allowed.has(origin)) {
      ctx.set('Access-Control-Allow-Origin', origin);
      ctx.set('Access-Control-Allow-Credentials', 'true');
    }
    if (ctx.method !== 'OPTIONS') {
      await next();
      return;
    }
    if (allowed.has(origin)) {
      ctx.set('Access-Control-Allow-Methods', 'POST');
      ctx.set('Access-Control-Allow-Headers', CODEC_REQUEST_HEADERS);
      ctx.set('Access-Control-Max-Age', '600');
    }
    ctx.status = 204;
  };
}
