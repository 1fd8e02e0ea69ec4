import type Koa from 'koa';
import type client from 'prom-client';
import type { PlatformDeps } from '../platform/deps';

/** One service's HTTP app plus whatever background work it keeps while it serves. */
export interface ServiceInstance {
  name: string;
  app: Koa;
  metrics: client.Registry;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export type ServiceFactory = (deps: PlatformDeps) => ServiceInstance;
