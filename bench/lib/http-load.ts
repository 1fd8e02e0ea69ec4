/**
 * The benches' load generator: node:http over keep-alive sockets, driven either closed-loop
 * (N clients, each sending its next request when the last one answers: throughput at
 * saturation) or open-loop at a fixed rate (requests evenly spaced whatever the answers: the
 * latency a service shows at that rate).
 *
 * Why not autocannon: its rate option lets each connection send its share of a second's
 * requests back to back and then wait for the next second, so "100/s over 10 connections" is a
 * burst of 100 requests at concurrency 10 every second, and the latency it reports is that of
 * the burst's queue, not of 100 evenly spaced requests.
 */
import http from 'node:http';

export interface Reply {
  status: number;
  json(): unknown;
}

/** fetch (undici) cost about 1 ms of CPU per request here, on the cores under test. */
const agent = new http.Agent({ keepAlive: true, maxSockets: 1024 });

export function httpCall(
  base: string,
  method: string,
  route: string,
  headers: Record<string, string>,
  body?: string,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      base + route,
      {
        method,
        agent,
        headers:
          body === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: response.statusCode ?? 0, json: () => JSON.parse(text) as unknown });
        });
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

export interface LoadFigures {
  /** Requests answered below 300. */
  ok: number;
  /** Requests answered 300 or above, or failed on the wire. */
  errors: number;
  /** The errors by what they were: `<status> <detail>` (the JSON body's detail, when a string), or `no answer`. */
  failures: Map<string, number>;
  /** Open loop only: requests not sent because `maxInFlight` were still unanswered. */
  skipped: number;
  seconds: number;
  /** Of the successful requests; open loop: from the instant it was due, not when it went. */
  latenciesMs: number[];
  /** For each latency, when its request started (open loop: was due), in ms from the run's start. */
  startsMs: number[];
  /** The run's start, a performance.now() instant (startsMs count from it). */
  originMs: number;
}

const emptyFigures = (seconds: number): LoadFigures => ({
  ok: 0,
  errors: 0,
  failures: new Map(),
  skipped: 0,
  seconds,
  latenciesMs: [],
  startsMs: [],
  originMs: performance.now(),
});

/** What a failed request was: its status and the detail of its JSON body, or `no answer`. */
function failure(reply: Reply | null): string {
  if (reply === null) return 'no answer';
  let detail: unknown;
  try {
    detail = (reply.json() as { detail?: unknown } | null)?.detail;
  } catch {
    // not JSON
  }
  return typeof detail === 'string' ? `${reply.status} ${detail}` : String(reply.status);
}

/** A reply's outcome: a success with its latency and start, or a failure. */
function record(figures: LoadFigures, reply: Reply | null, startMs: number, latencyMs: number) {
  if (reply === null || reply.status >= 300) {
    figures.errors++;
    const what = failure(reply);
    figures.failures.set(what, (figures.failures.get(what) ?? 0) + 1);
    return;
  }
  figures.ok++;
  figures.latenciesMs.push(latencyMs);
  figures.startsMs.push(startMs);
}

/** `clients` callers in a loop for `seconds`: what the service sustains at saturation. */
export async function closedLoop(
  clients: number,
  seconds: number,
  request: () => Promise<Reply>,
): Promise<LoadFigures> {
  const figures = emptyFigures(seconds);
  const deadline = Date.now() + seconds * 1000;
  const started = figures.originMs;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (Date.now() < deadline) {
        const t0 = performance.now();
        record(figures, await request().catch(() => null), t0 - started, performance.now() - t0);
      }
    }),
  );
  figures.seconds = (performance.now() - started) / 1000;
  return figures;
}

/**
 * `ratePerSecond` requests a second, evenly spaced, for `seconds`, each sent when it is due
 * whether or not earlier ones have answered. Latency counts from the due instant, so a
 * generator that falls behind shows as latency rather than hiding it. At most `maxInFlight`
 * are outstanding; a request due beyond that is skipped and counted, so a rate the service
 * cannot sustain ends the run with a count instead of an unbounded queue.
 */
export async function openLoop(
  ratePerSecond: number,
  seconds: number,
  request: () => Promise<Reply>,
  maxInFlight = 512,
): Promise<LoadFigures> {
  const figures = emptyFigures(seconds);
  const intervalMs = 1000 / ratePerSecond;
  const total = Math.round(ratePerSecond * seconds);
  const started = figures.originMs;
  const pending = new Set<Promise<void>>();
  for (let sent = 0; sent < total;) {
    const now = performance.now();
    for (; sent < total && started + sent * intervalMs <= now; sent++) {
      if (pending.size >= maxInFlight) {
        figures.skipped++;
        continue;
      }
      const due = started + sent * intervalMs;
      const call: Promise<void> = request()
        .catch(() => null)
        .then((reply) => {
          record(figures, reply, due - started, performance.now() - due);
          pending.delete(call);
        });
      pending.add(call);
    }
    const nextDue = started + sent * intervalMs;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, nextDue - performance.now())));
  }
  await Promise.all(pending);
  figures.seconds = (performance.now() - started) / 1000;
  return figures;
}

/** The p-th percentile (0-100) of unsorted values; NaN when there are none. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))]!;
}

/**
 * The `count` windows of `windowMs` whose slowest request was slowest: where a p99 comes from
 * (a few stalls, or a slow service throughout).
 */
export function slowestWindows(
  figures: Pick<LoadFigures, 'latenciesMs' | 'startsMs'>,
  windowMs: number,
  count: number,
): { startMs: number; maxMs: number; requests: number }[] {
  const windows = new Map<number, { startMs: number; maxMs: number; requests: number }>();
  figures.latenciesMs.forEach((latency, i) => {
    const startMs = Math.floor(figures.startsMs[i]! / windowMs) * windowMs;
    const w = windows.get(startMs) ?? { startMs, maxMs: 0, requests: 0 };
    w.maxMs = Math.max(w.maxMs, latency);
    w.requests++;
    windows.set(startMs, w);
  });
  return [...windows.values()].sort((a, b) => b.maxMs - a.maxMs).slice(0, count);
}
