import fs from 'node:fs';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { webhookTestFiles } from './webhook-test-env';

export interface ReceivedRequest {
  method: string;
  /** Path and query, as requested. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as it arrived: what a receiver verifies a signature over. */
  rawBody: Buffer;
  receivedAt: Date;
  /** How the answer went: `aborted` when the client hung up before all of it was written. */
  response: { state: 'pending' | 'finished' | 'aborted'; bytesWritten: number };
}

/** An answer to program: `hang` never answers (the client's timeout must end it). */
export type ReceiverAnswer =
  | 'hang'
  | {
      status?: number;
      headers?: Record<string, string>;
      body?: string | Buffer;
      /** A body of this many bytes, written in chunks as the client reads them. */
      streamBytes?: number;
      /** Sends the status and headers, then never the body's end. */
      hangAfterHeaders?: boolean;
      delayMs?: number;
    };

export type AnswerHandler = (
  request: ReceivedRequest,
  index: number,
) => ReceiverAnswer | Promise<ReceiverAnswer>;

export interface Receiver {
  /** https://localhost:<port> */
  url: string;
  /** https://[::1]:<port>, or null where the host has no IPv6 loopback. */
  ipv6Url: string | null;
  port: number;
  /** Every request so far, in arrival order. */
  requests: ReceivedRequest[];
  /** Programs the answers from now on (the default is a 200 with an empty body). */
  respondWith(handler: AnswerHandler): void;
  /** Resolves with the requests once there are at least `count`; throws after `timeoutMs`. */
  waitForRequests(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  /** The requests whose path starts with `path`, once there are at least `count` of them. */
  waitForRequestsTo(path: string, count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

/** A test receiver refuses a larger body with 413, as a real one would. */
const REQUEST_BODY_MAX_BYTES = 16 * 1024 * 1024;
const STREAM_CHUNK_BYTES = 64 * 1024;
const WAIT_FOR_REQUESTS_TIMEOUT_MS = 30_000;

const defaultAnswer: AnswerHandler = () => ({ status: 200 });

/**
 * A real HTTPS receiver on loopback with the certificate global-setup made (signed by the test
 * CA, names localhost, 127.0.0.1 and ::1), so a sender reaches it only by trusting that CA.
 */
export async function startHttpsReceiver(): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const waiters = new Set<() => void>();
  const timers = new Set<NodeJS.Timeout>();
  let answer = defaultAnswer;

  const handleRequest = (incoming: IncomingMessage, outgoing: ServerResponse) => {
    const handle = async () => {
      const rawBody = await receive(incoming);
      if (rawBody === null) return void outgoing.writeHead(413).end();
      const request = record(incoming, rawBody, outgoing);
      requests.push(request);
      waiters.forEach((wake) => wake());
      await respond(outgoing, request, await answer(request, requests.length - 1), timers);
    };
    // A client gone mid-request, or a handler that threw: that request's connection ends.
    handle().catch(() => outgoing.destroy());
  };
  const { servers, port, ipv6 } = await listenOnLoopback(handleRequest);
  const waitForMatching = (
    path: string,
    count: number,
    timeoutMs = WAIT_FOR_REQUESTS_TIMEOUT_MS,
  ) => {
    const matching = () => requests.filter((request) => request.path.startsWith(path));
    return waitFor(() => matching().length >= count, waiters, timeoutMs).then(matching, () => {
      const seen = matching().length;
      throw new Error(
        `receiver: ${seen} of ${count} requests to ${path || '/'} within ${timeoutMs} ms`,
      );
    });
  };

  return {
    url: `https://localhost:${port}`,
    ipv6Url: ipv6 ? `https://[::1]:${port}` : null,
    port,
    requests,
    respondWith: (handler) => void (answer = handler),
    waitForRequests: (count, timeoutMs) => waitForMatching('', count, timeoutMs),
    waitForRequestsTo: waitForMatching,
    close: () => {
      timers.forEach(clearTimeout);
      return Promise.all(servers.map(close)).then(() => undefined);
    },
  };
}

/**
 * 127.0.0.1, and ::1 on the same port where the host has an IPv6 loopback: never a public
 * interface, and `localhost` reaches it whichever address the hosts file gives first.
 */
async function listenOnLoopback(
  handleRequest: (incoming: IncomingMessage, outgoing: ServerResponse) => void,
): Promise<{ servers: https.Server[]; port: number; ipv6: boolean }> {
  const files = webhookTestFiles();
  const tlsOptions = { cert: fs.readFileSync(files.certFile), key: fs.readFileSync(files.keyFile) };
  const ipv4 = https.createServer(tlsOptions, handleRequest);
  const port = await listen(ipv4, 0, '127.0.0.1');
  const ipv6 = https.createServer(tlsOptions, handleRequest);
  const ipv6Listening = await listen(ipv6, port, '::1').then(
    () => true,
    () => false,
  );
  return { servers: ipv6Listening ? [ipv4, ipv6] : [ipv4], port, ipv6: ipv6Listening };
}

/** Resolves with the port listened on. */
function listen(server: https.Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function close(server: https.Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** The whole body, or null past REQUEST_BODY_MAX_BYTES. */
async function receive(incoming: IncomingMessage): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let sizeBytes = 0;
  for await (const chunk of incoming as AsyncIterable<Buffer>) {
    sizeBytes += chunk.length;
    if (sizeBytes > REQUEST_BODY_MAX_BYTES) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function record(incoming: IncomingMessage, rawBody: Buffer, outgoing: ServerResponse) {
  const request: ReceivedRequest = {
    method: incoming.method ?? '',
    path: incoming.url ?? '',
    headers: incoming.headers,
    rawBody,
    receivedAt: new Date(),
    response: { state: 'pending', bytesWritten: 0 },
  };
  outgoing.on('finish', () => (request.response.state = 'finished'));
  outgoing.on('close', () => {
    if (request.response.state === 'pending') request.response.state = 'aborted';
  });
  return request;
}

async function respond(
  outgoing: ServerResponse,
  request: ReceivedRequest,
  answer: ReceiverAnswer,
  timers: Set<NodeJS.Timeout>,
): Promise<void> {
  if (answer === 'hang') return;
  if (answer.delayMs !== undefined) await delay(answer.delayMs, timers);
  if (outgoing.destroyed) return;
  outgoing.writeHead(answer.status ?? 200, answer.headers);
  if (answer.hangAfterHeaders) return void outgoing.flushHeaders();
  if (answer.streamBytes !== undefined) return stream(outgoing, request, answer.streamBytes);
  const body = answer.body ?? '';
  request.response.bytesWritten = Buffer.byteLength(body);
  outgoing.end(body);
}

/** Writes `sizeBytes` as the client takes them, stopping when it hangs up. */
async function stream(
  outgoing: ServerResponse,
  request: ReceivedRequest,
  sizeBytes: number,
): Promise<void> {
  const chunk = Buffer.alloc(STREAM_CHUNK_BYTES, 'x');
  while (request.response.bytesWritten < sizeBytes && !outgoing.destroyed) {
    const piece = chunk.subarray(
      0,
      Math.min(chunk.length, sizeBytes - request.response.bytesWritten),
    );
    request.response.bytesWritten += piece.length;
    if (!outgoing.write(piece)) await drainedOrClosed(outgoing);
  }
  if (!outgoing.destroyed) outgoing.end();
}

const drainedOrClosed = (outgoing: ServerResponse) =>
  new Promise<void>((resolve) => {
    const done = () => {
      outgoing.off('drain', done).off('close', done);
      resolve();
    };
    outgoing.on('drain', done).on('close', done);
  });

const delay = (ms: number, timers: Set<NodeJS.Timeout>) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      resolve();
    }, ms);
    timers.add(timer);
  });

function waitFor(condition: () => boolean, waiters: Set<() => void>, timeoutMs: number) {
  return new Promise<void>((resolve, reject) => {
    if (condition()) return resolve();
    const timer = setTimeout(() => {
      waiters.delete(wake);
      reject(new Error('timeout'));
    }, timeoutMs);
    const wake = () => {
      if (!condition()) return;
      clearTimeout(timer);
      waiters.delete(wake);
      resolve();
    };
    waiters.add(wake);
  });
}
