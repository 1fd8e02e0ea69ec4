import type { IncomingMessage } from 'node:http';
import type { Context } from 'koa';
import proxyAddr from 'proxy-addr';

/**
 * The address of the client a request comes from. The socket's peer, unless that peer is a
 * trusted proxy (TRUSTED_PROXIES): then X-Forwarded-For is read from its right, hop by hop, for as
 * long as each hop is trusted, and the first untrusted one is the client (Express's `trust proxy`
 * with a list, by the same library). No trusted proxies: the socket's peer, whatever the header
 * says, so a caller cannot choose its own address.
 */
export function clientAddressResolver(trustedProxies: string[]): (req: IncomingMessage) => string {
  if (trustedProxies.length === 0) return (req) => req.socket.remoteAddress ?? 'unknown';
  const trust = proxyAddr.compile(trustedProxies);
  return (req) => proxyAddr(req, trust);
}

/**
 * Whether the socket's peer is a trusted proxy (TRUSTED_PROXIES): its word about the request
 * (X-Forwarded-For, a traceparent) is taken; nobody's is without a list.
 */
export function peerTrustResolver(trustedProxies: string[]): (req: IncomingMessage) => boolean {
  if (trustedProxies.length === 0) return () => false;
  const trust = proxyAddr.compile(trustedProxies);
  return (req) => trust(req.socket.remoteAddress ?? '', 0);
}

/** The request's client as createApp resolved it; the socket's peer outside such an app. */
export const clientAddress = (ctx: Context): string | undefined =>
  (ctx.state.clientAddress as string | undefined) ?? ctx.req.socket.remoteAddress;
