import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The id of the request this process is serving (its X-Request-Id), for the calls it makes on
 * that request's behalf: the quota client sends it on, so the quota service's log lines of a
 * metering call carry the caller's request id. Set for each request by createApp.
 */
const scope = new AsyncLocalStorage<string>();

export const withRequestId = <T>(requestId: string, work: () => Promise<T>): Promise<T> =>
  scope.run(requestId, work);

/** The request being served, if any (none in a worker's activity or a timer). */
export const currentRequestId = (): string | undefined => scope.getStore();
