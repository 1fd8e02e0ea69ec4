import http from 'node:http';
import type Koa from 'koa';
import type { Logger } from '../../platform/logger';

export interface RunningServer {
  server: http.Server;
  port: number;
  /** Stops accepting, lets in-flight requests finish within the grace period, then cuts the rest. */
  close(): Promise<void>;
}

export async function listen(
  app: Koa,
  options: { host: string; port: number; graceMs: number; logger: Logger },
): Promise<RunningServer> {
  const server = http.createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  options.logger.info({ host: options.host, port }, 'listening');
  return {
    server,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        const deadline = setTimeout(() => server.closeAllConnections(), options.graceMs);
        deadline.unref();
        server.close(() => {
          clearTimeout(deadline);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
