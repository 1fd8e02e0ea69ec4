import http from 'node:http';
import net from 'node:net';
import client from 'prom-client';
import type { Logger } from '../platform/logger';

/**
 * The worker's metrics on its own port (WORKER_METRICS_PORT), for Prometheus and for whatever
 * scales workers: the Temporal SDK's (task slots, schedule-to-start latency, sticky cache, polls;
 * `temporal_*`) beside the process's own (CPU, memory, event-loop lag, GC; `process_*`, `nodejs_*`).
 *
 * The SDK's native core serves its metrics from a Prometheus exporter of its own; it listens on a
 * loopback port only this process knows, and each scrape of the worker's port reads it and serves
 * both sets in one answer, so one scrape target per worker is enough.
 */
export interface WorkerMetrics {
  /** Where the native core's exporter must listen (Runtime.install's `bindAddress`). */
  coreBindAddress: string;
  /** Serves /metrics on `host:port` (0: a free port, logged); resolves with the port bound. */
  listen(host: string, port: number): Promise<number>;
  close(): Promise<void>;
}

export async function prepareWorkerMetrics(
  labels: Record<string, string>,
  logger: Logger,
): Promise<WorkerMetrics> {
  const corePort = await freeLoopbackPort();
  const registry = new client.Registry();
  registry.setDefaultLabels(labels);
  client.collectDefaultMetrics({ register: registry });
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
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
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
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
