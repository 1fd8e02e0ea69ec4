import dns from 'node:dns';
import fs from 'node:fs';
import type { IncomingMessage } from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import tls from 'node:tls';
import { createEgressPolicy, type EgressPolicy } from './egress';

/** How much of a receiver's answer is read before the connection is dropped. */
export const RESPONSE_BODY_MAX_BYTES_DEFAULT = 64 * 1024;

export type SendOutcome =
  | { verdict: 'delivered'; status: number; durationMs: number }
  | { verdict: 'retry'; status: number | null; error: string; durationMs: number }
  | { verdict: 'dead'; status: number | null; error: string; durationMs: number };

/** A signed request, ready to go: its body is sent byte for byte as the caller signed it. */
export interface WebhookRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface WebhookSender {
  send(request: WebhookRequest): Promise<SendOutcome>;
}

export interface WebhookSenderOptions {
  /** CIDRs reachable although not public (WEBHOOK_EGRESS_ALLOW); an invalid one throws here. */
  egressAllow: string[];
  /** A PEM file of CAs trusted beside Node's own roots (WEBHOOK_CA_FILE), read once here. */
  caFile: string | null;
  /** One attempt, from DNS through the last byte read. */
  timeoutMs: number;
  responseBodyMaxBytes?: number;
}

type Failure = { verdict: 'retry' | 'dead'; error: string };
type AttemptResult = { status: number } | { status: number | null; failure: Failure };

interface Target {
  hostname: string;
  port: number;
  path: string;
}

interface AttemptSettings {
  policy: EgressPolicy;
  secureContext: tls.SecureContext | undefined;
  timeoutMs: number;
  responseBodyMaxBytes: number;
}

/**
 * Sends webhook attempts with the spec's verdicts (2xx delivered; 408, 429, 5xx, 3xx, timeouts
 * and transport failures retry; other 4xx dead) to public addresses only. Each attempt is one
 * connection of its own (no keep-alive), so every attempt resolves and checks its addresses
 * afresh, and nothing connects to an address that was not checked.
 */
export function createWebhookSender(options: WebhookSenderOptions): WebhookSender {
  const settings: AttemptSettings = {
    policy: createEgressPolicy(options.egressAllow),
    secureContext: options.caFile === null ? undefined : secureContextTrusting(options.caFile),
    timeoutMs: options.timeoutMs,
    responseBodyMaxBytes: options.responseBodyMaxBytes ?? RESPONSE_BODY_MAX_BYTES_DEFAULT,
  };
  return { send: (request) => send(request, settings) };
}

async function send(request: WebhookRequest, settings: AttemptSettings): Promise<SendOutcome> {
  const startedAt = performance.now();
  const target = parseTarget(request.url);
  const result: AttemptResult =
    target === null
      ? { status: null, failure: { verdict: 'dead', error: 'invalid_url' } }
      : await attempt(request, target, settings);
  const durationMs = Math.round(performance.now() - startedAt);
  if (!('failure' in result)) return { ...outcomeOfStatus(result.status), durationMs };
  return { ...result.failure, status: result.status, durationMs };
}

/** The verdict a receiver's final status gives the attempt. */
export function outcomeOfStatus(
  status: number,
): { verdict: 'delivered'; status: number } | (Failure & { status: number }) {
  if (status >= 200 && status <= 299) return { verdict: 'delivered', status };
  // Not followed: a redirect could lead anywhere, and the receiver did not take the event.
  if (status >= 300 && status <= 399)
    return { verdict: 'retry', status, error: `redirect:${status}` };
  if (status >= 400 && status <= 499 && status !== 408 && status !== 429)
    return { verdict: 'dead', status, error: `http:${status}` };
  return { verdict: 'retry', status, error: `http:${status}` };
}

/** An absolute https URL without credentials, or null. */
function parseTarget(url: string): Target | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  if (parsed.protocol !== 'https:' || parsed.username !== '' || parsed.password !== '') return null;
  return {
    hostname: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: parsed.port === '' ? 443 : Number(parsed.port),
    path: `${parsed.pathname}${parsed.search}`,
  };
}

/** Node's roots and the file's CAs, parsed once: a context per attempt would re-read ~150 roots. */
function secureContextTrusting(caFile: string): tls.SecureContext {
  let pem: string;
  try {
    pem = fs.readFileSync(caFile, 'utf8');
  } catch (error) {
    throw new Error(`WEBHOOK_CA_FILE: cannot read ${caFile}: ${(error as Error).message}`);
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----'))
    throw new Error(`WEBHOOK_CA_FILE: ${caFile} holds no PEM certificate`);
  return tls.createSecureContext({ ca: [...tls.rootCertificates, pem] });
}

/** Why an attempt stopped before a status, told apart from Node's own errors. */
class AttemptStopped extends Error {
  constructor(readonly failure: Failure) {
    super(failure.error);
  }
}

/** Where the connection was when an error came: it names the error's cause. */
type Phase = 'connecting' | 'tls' | 'http';

function attempt(
  request: WebhookRequest,
  target: Target,
  settings: AttemptSettings,
): Promise<AttemptResult> {
  // Node connects to an IP literal without a lookup, so the literal is the address to check.
  if (net.isIP(target.hostname) !== 0 && !settings.policy.allows(target.hostname))
    return Promise.resolve({ status: null, failure: egressRefused(target.hostname) });
  return new Promise((resolve) => {
    let phase: Phase = 'connecting';
    let status: number | null = null;
    const settle = (result: AttemptResult) => {
      clearTimeout(timer);
      resolve(result); // later calls are no-ops: the first result stands
    };
    const body = Buffer.from(request.body, 'utf8');
    const outgoing = https.request(
      requestOptions(target, headersFor(request, body.length), settings),
    );
    const timer = setTimeout(() => {
      settle({ status, failure: { verdict: 'retry', error: 'timeout' } });
      outgoing.destroy();
    }, settings.timeoutMs);
    outgoing.on('socket', (socket) => {
      socket.once('connect', () => (phase = 'tls'));
      socket.once('secureConnect', () => (phase = 'http'));
    });
    outgoing.on('error', (error) => settle({ status, failure: failureOf(error, phase) }));
    outgoing.on('response', (response) => {
      status = response.statusCode ?? 0;
      readCapped(response, status, settings.responseBodyMaxBytes, settle);
    });
    outgoing.end(body);
  });
}

function requestOptions(
  target: Target,
  headers: Record<string, string>,
  settings: AttemptSettings,
): https.RequestOptions & Pick<tls.ConnectionOptions, 'secureContext'> {
  return {
    method: 'POST',
    hostname: target.hostname,
    port: target.port,
    path: target.path,
    headers,
    // A connection of its own per attempt: no reuse of a socket an earlier lookup chose.
    agent: false,
    lookup: checkedLookup(settings.policy),
    rejectUnauthorized: true,
    // Reaches tls.connect through the agent; undefined keeps Node's default roots.
    secureContext: settings.secureContext,
  };
}

/**
 * Reads the answer up to `maxBytes` without keeping it, then drops the connection: the status
 * is the verdict, and a receiver streaming without end must not hold the attempt or the memory.
 */
function readCapped(
  response: IncomingMessage,
  status: number,
  maxBytes: number,
  settle: (result: AttemptResult) => void,
): void {
  let bytesRead = 0;
  response.on('data', (chunk: Buffer) => {
    bytesRead += chunk.length;
    if (bytesRead < maxBytes) return;
    settle({ status });
    response.destroy();
  });
  response.on('end', () => settle({ status }));
  response.on('error', (error) => settle({ status, failure: failureOf(error, 'http') }));
  response.on('close', () =>
    settle({ status, failure: { verdict: 'retry', error: 'transport:response_aborted' } }),
  );
}

/** Host and body framing belong to the URL and the body, whatever the caller's headers say. */
const HEADERS_OF_THE_SENDER = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
]);

function headersFor(request: WebhookRequest, bodyBytes: number): Record<string, string> {
  const headers = Object.fromEntries(
    Object.entries(request.headers).filter(
      ([name]) => !HEADERS_OF_THE_SENDER.has(name.toLowerCase()),
    ),
  );
  return { ...headers, 'Content-Length': String(bodyBytes) };
}

/**
 * Resolves the name as Node's own lookup would, then refuses it when ANY of its addresses is
 * refused: the socket connects to what this returns, so what is checked is what is reached (no
 * window for a second, rebinding answer), and a name that mixes public and internal addresses
 * is not half-trusted.
 */
function checkedLookup(policy: EgressPolicy): net.LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(
      hostname,
      { all: true, family: options.family, hints: options.hints },
      (error, addresses) => {
        if (error || addresses.length === 0) {
          const code = error?.code ?? 'ENOTFOUND';
          return callback(new AttemptStopped({ verdict: 'retry', error: `dns:${code}` }), '');
        }
        const refused = addresses.find(({ address }) => !policy.allows(address));
        if (refused) return callback(new AttemptStopped(egressRefused(refused.address)), '');
        if (options.all) return callback(null, addresses);
        return callback(null, addresses[0]!.address, addresses[0]!.family);
      },
    );
  };
}

const egressRefused = (address: string): Failure => ({
  verdict: 'dead',
  error: `egress_refused:${address}`,
});

function failureOf(error: Error, phase: Phase): Failure {
  if (error instanceof AttemptStopped) return error.failure;
  const code = (error as NodeJS.ErrnoException).code ?? error.name;
  return { verdict: 'retry', error: `${phase === 'tls' ? 'tls' : 'transport'}:${code}` };
}
