import http from 'node:http';
import net from 'node:net';
import type { State, Worker } from '@temporalio/worker';
import client from 'prom-client';
import { platformVersion } from '../db/repository';
import type { Logger } from '../platform/logger';

/**
 * The worker's metrics on its own port (WORKER_METRICS_PORT), for Prometheus and for whatever
 * scales workers: the Temporal SDK's (task slots, schedule-to-start latency, sticky cache, polls;
 * `temporal_*`) beside the process's own (CPU, memory, event-loop lag, GC; `process_*`, `nodejs_*`).
 *
 * The SDK's native core serves its metrics from a Prometheus exporter of its own; it listens on a
 * loopback port only this process knows, and each scrape of the worker's port reads it and serves
 * both sets in one answer, so one scrape target per worker is enough.
 *
 * The same port answers the worker's probes, for Kubernetes and the image's HEALTHCHECK
 * (cli/healthcheck.ts): /healthz (and /ping) liveness, /readyz readiness.
 */
export interface WorkerMetrics {
  /** Where the native core's exporter must listen (Runtime.install's `bindAddress`). */
  coreBindAddress: string;
  /**
   * Serves /metrics and the probes on `host:port` (0: a free port, logged); resolves with the
   * port bound.
   */
  listen(host: string, port: number): Promise<number>;
  /** The process's Temporal workers, once created: /readyz reads their states from then on. */
  watch(workers: readonly ProbedWorker[]): void;
  close(): Promise<void>;
}

/** What /readyz reads of a Temporal worker: its task queue and its state. */
export type ProbedWorker = Pick<Worker, 'getState'> & { options: { taskQueue: string } };

/**
 * /readyz: 200 once every Temporal worker of the process is RUNNING (Worker#run() called, polling
 * its task queue), 503 with each one's state otherwise. None yet is not ready: the process is
 * still bundling its workflows or connecting (a worker is INITIALIZED until run() is called).
 * STOPPING and after, on SIGTERM, are not ready either, so no new work is routed to it.
 */
export function workerReadiness(
  workers: readonly ProbedWorker[],
  version: string,
): { status: 200 | 503; body: WorkerReadiness } {
  const states = workers.map((w) => [w.options.taskQueue, w.getState()] as const);
  const ready = states.length > 0 && states.every(([, state]) => state === 'RUNNING');
  return {
    status: ready ? 200 : 503,
    body: { status: ready ? 'ok' : 'not_ready', workers: Object.fromEntries(states), version },
  };
}

export interface WorkerReadiness {
  status: 'ok' | 'not_ready';
  /** Each Temporal worker's state by its task queue. */
  workers: Record<string, State>;
  /** The platform's version (package.json's). */
  version: string;
}

/**
 * Liveness: 200 while the process serves this port. It asks nothing of Temporal, Postgres or
 * Docker, so a backend that blips does not get every worker restarted (/readyz says that).
 * /ping is the same answer, the path the APIs' liveness goes by.
 */
const LIVENESS_PATHS = new Set(['/healthz', '/ping']);

export async function prepareWorkerMetrics(
  labels: Record<string, string>,
  logger: Logger,
): Promise<WorkerMetrics> {
  const corePort = await freeLoopbackPort();
  const registry = new client.Registry();
  registry.setDefaultLabels(labels);
  client.collectDefaultMetrics({ register: registry });
  const version = platformVersion();
  let watched: readonly ProbedWorker[] = [];
  const server = http.createServer((req, res) => {
    const path = req.url?.split('?')[0] ?? '';
    if (req.method === 'GET' && LIVENESS_PATHS.has(path)) {
      answerJson(res, 200, { status: 'ok', version });
      return;
    }
    if (req.method === 'GET' && path === '/readyz') {
      const readiness = workerReadiness(watched, version);
      answerJson(res, readiness.status, readiness.body);
      return;
    }
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    void exposition(registry, corePort).then(
      (body) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(body),
      (error: unknown) => {
        logger.warn({ err: (error as Error).message }, 'worker metrics scrape failed');
        res.writeHead(503).end();
      },
    );
  });
  return {
    coreBindAddress: `127.0.0.1:${corePort}`,
    async listen(host, port) {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, resolve);
      });
      const bound = (server.address() as net.AddressInfo).port;
      logger.info({ port: bound }, `worker metrics at http://${host}:${bound}/metrics`);
      return bound;
    },
    watch(workers) {
      watched = workers;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function answerJson(res: http.ServerResponse, status: number, body: object): void {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}

/** The process's metrics, then the native core's as its exporter wrote them. */
async function exposition(registry: client.Registry, corePort: number): Promise<string> {
  const core = await fetch(`http://127.0.0.1:${corePort}/metrics`, {
    signal: AbortSignal.timeout(2_000),
  });
  if (!core.ok) throw new Error(`the SDK's exporter answered ${core.status}`);
  return `${await registry.metrics()}\n${await core.text()}`;
}

/**
 * A loopback port free now, for the core to bind a moment later (should another process take it in
 * between, the core's exporter fails to start and so does the worker, to be restarted).
 */
async function freeLoopbackPort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}
