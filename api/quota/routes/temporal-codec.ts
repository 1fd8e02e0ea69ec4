import { createHash } from 'node:crypto';
import type Router from '@koa/router';
import type { Context } from 'koa';
import {
  CODEC_BODY_LIMIT_BYTES,
  CODEC_MAX_PAYLOADS,
  CODEC_SESSION_SECONDS,
  JSON_PAYLOADS,
  CODEC_REQUEST_HEADERS,
  codecCors,
  codecPayloads,
  type CodecPayloadsBody,
} from '../../http/codec-endpoint';
import { payloadCodec } from '../../../platform/payload-codec';
import { bodyRefusal } from '../../../services/quota/errors';
import type { Logger } from '../../../platform/logger';
import {
  mountOperation,
  operation,
  principalOf,
  validated,
  type QuotaRouteDeps,
} from './operation';

/**
 * The platform's Temporal codec endpoint (api/http/codec-endpoint.ts), served here because
 * operator keys live here: the Web UI and the temporal CLI decode every service's payloads with
 * an operator key holding `payloads:codec`. Browsers cannot send `Authorization` from the UI, so
 * an operator opens a session once (the key in an HttpOnly cookie of these paths only).
 */
export const CODEC_PATH = '/v1/ops/temporal-codec';
export const CODEC_SESSION_COOKIE = 'quota_codec_key';

const BOUNDS = `At most ${CODEC_MAX_PAYLOADS} payloads; bodies up to ${CODEC_BODY_LIMIT_BYTES} bytes (413 past it: these routes take more than the service's other routes). CORS answers the origins of TEMPORAL_CODEC_CORS_ORIGINS (the Web UI), credentials allowed.`;

const codecOperation = (direction: 'encode' | 'decode') =>
  operation({
    method: 'post',
    path: `${CODEC_PATH}/${direction}`,
    operationId: direction === 'decode' ? 'decodePayloads' : 'encodePayloads',
    summary:
      direction === 'decode'
        ? "Temporal's remote codec: decrypts payloads (operator)"
        : "Temporal's remote codec: encrypts payloads under the active key (operator)",
    description: `${
      direction === 'decode'
        ? 'Point the Web UI or `temporal workflow show --codec-endpoint <base>' +
          CODEC_PATH +
          ' --codec-auth "Bearer <key>"` here. A payload not encrypted comes back as it is; one under a key this deployment does not hold, or altered, is a 422 at its index (`payload_not_decryptable`).'
        : 'What the UI sends when an operator signals or starts a workflow from it.'
    } ${BOUNDS}`,
    tags: ['operations'],
    access: 'payloads:codec',
    keyCookie: CODEC_SESSION_COOKIE,
    refusals: { 413: ['PAYLOAD_TOO_LARGE'] },
    request: { body: JSON_PAYLOADS },
    responses: { '200': { description: 'the payloads, in order', schema: JSON_PAYLOADS } },
  });

/** A browser's CORS preflight, answered before any credential (browsers send none with it). */
const preflight = (direction: 'encode' | 'decode') =>
  operation({
    method: 'options',
    path: `${CODEC_PATH}/${direction}`,
    operationId: direction === 'decode' ? 'preflightDecodePayloads' : 'preflightEncodePayloads',
    summary: `CORS preflight of /${direction} from the Web UI`,
    description: `An origin of TEMPORAL_CODEC_CORS_ORIGINS gets Access-Control-Allow-Origin (itself), -Credentials (true), -Methods (POST), -Headers (${CODEC_REQUEST_HEADERS}) and -Max-Age (600); any other origin the 204 without them.`,
    tags: ['operations'],
    access: 'public',
    responses: { '204': { description: 'the preflight answered' } },
  });

export const CODEC_OPERATIONS = {
  decode: codecOperation('decode'),
  encode: codecOperation('encode'),
  decodePreflight: preflight('decode'),
  encodePreflight: preflight('encode'),
  openSession: operation({
    method: 'put',
    path: `${CODEC_PATH}/session`,
    operationId: 'openCodecSession',
    summary: "Opens a browser's codec session: the operator key in an HttpOnly cookie (operator)",
    description: `Set-Cookie \`${CODEC_SESSION_COOKIE}\`: HttpOnly, SameSite=Strict, Path=${CODEC_PATH}, ${CODEC_SESSION_SECONDS} s (Secure over HTTPS). Then enable "Include cross-origin credentials" in the Web UI's codec settings. The key is checked on every request, so a revoked key ends the session. The login page (GET ${CODEC_PATH}/login) calls this.`,
    tags: ['operations'],
    access: 'payloads:codec',
    responses: { '204': { description: 'the cookie is set' } },
  }),
  closeSession: operation({
    method: 'delete',
    path: `${CODEC_PATH}/session`,
    operationId: 'closeCodecSession',
    summary: "Ends a browser's codec session (clears the cookie)",
    tags: ['operations'],
    access: 'public',
    responses: { '204': { description: 'the cookie is cleared' } },
  }),
  loginPage: operation({
    method: 'get',
    path: `${CODEC_PATH}/login`,
    operationId: 'codecLoginPage',
    summary: 'A page where an operator pastes a key to open a codec session in this browser',
    tags: ['operations'],
    access: 'public',
    responses: {
      '200': { description: 'the page', content: { 'text/html': { schema: { type: 'string' } } } },
    },
  }),
} as const;

export function mountCodecRoutes(router: Router, deps: QuotaRouteDeps): void {
  const codec = payloadCodec(deps.config.temporalPayloadKeys);
  const cors = codecCors(deps.config.temporalCodecCorsOrigins);
  for (const direction of ['decode', 'encode'] as const) {
    const op = CODEC_OPERATIONS[direction];
    mountOperation(router, deps, CODEC_OPERATIONS[`${direction}Preflight`], cors);
    mountOperation(
      router,
      deps,
      op,
      async (ctx) => {
        const body = validated<CodecPayloadsBody>(ctx, 'body');
        // Who read which namespace's payloads in clear: one line per request, for accountability.
        (ctx.state.log as Logger).info(
          {
            actor: principalOf(ctx).actor,
            keyId: principalOf(ctx).keyId,
            namespace: ctx.get('X-Namespace') || null,
            payloads: body.payloads.length,
          },
          `temporal payloads ${direction}d`,
        );
        const answer = await codecPayloads(codec, direction, body);
        if ('refused' in answer)
          throw bodyRefusal(
            answer.refused.map(({ index, message }) => ({
              path: ['payloads', index],
              message,
              type: 'payload_not_decryptable',
            })),
          );
        ctx.body = answer;
      },
      [cors],
    );
  }
  mountOperation(router, deps, CODEC_OPERATIONS.openSession, (ctx) => {
    ctx.cookies.set(
      CODEC_SESSION_COOKIE,
      bearerToken(ctx),
      sessionCookie(ctx, CODEC_SESSION_SECONDS),
    );
    ctx.status = 204;
  });
  mountOperation(router, deps, CODEC_OPERATIONS.closeSession, (ctx) => {
    ctx.cookies.set(CODEC_SESSION_COOKIE, '', sessionCookie(ctx, 0));
    ctx.status = 204;
  });
  mountOperation(router, deps, CODEC_OPERATIONS.loginPage, (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    // The page's one script, allowed by its hash alone.
    ctx.set('Content-Security-Policy', LOGIN_PAGE_CSP);
    ctx.body = LOGIN_PAGE;
  });
}

const bearerToken = (ctx: Context) => ctx.get('Authorization').replace(/^Bearer\s+/i, '');

const sessionCookie = (ctx: Context, seconds: number) => ({
  httpOnly: true,
  sameSite: 'strict' as const,
  path: CODEC_PATH,
  maxAge: seconds * 1000,
  secure: ctx.secure,
  overwrite: true,
});

const LOGIN_SCRIPT = `
document.querySelector('form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const key = document.querySelector('input').value.trim();
  const answer = await fetch('session', { method: 'PUT', headers: { Authorization: 'Bearer ' + key } });
  document.querySelector('output').textContent = answer.status === 204
    ? 'Session open: the Web UI decodes payloads (enable "Include cross-origin credentials" in its codec settings).'
    : 'Refused (' + answer.status + '): an operator key with payloads:codec is needed.';
});`;

const LOGIN_PAGE_CSP = `default-src 'none'; connect-src 'self'; script-src 'sha256-${createHash('sha256').update(LOGIN_SCRIPT).digest('base64')}'; form-action 'none'; frame-ancestors 'none'`;

const LOGIN_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Temporal codec: operator session</title></head>
<body>
<h1>Temporal codec: operator session</h1>
<p>Paste an operator key holding <code>payloads:codec</code>. It is kept in an HttpOnly cookie of
this endpoint for ${CODEC_SESSION_SECONDS / 3600} hours; nothing else stores it.</p>
<form><input type="password" autocomplete="off" size="80" aria-label="operator key">
<button type="submit">Open session</button></form>
<p><output></output></p>
<script>${LOGIN_SCRIPT}</script>
</body></html>
`;
