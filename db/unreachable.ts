import {
  BackendTerminatedError,
  BackendTerminatedUnexpectedlyError,
  ConnectionError,
} from 'slonik';
import { sqlState } from './pool';

/** slonik's errors of a database that gave no answer: not reached, or the connection lost. */
const POSTGRES_NO_ANSWER = [
  ConnectionError,
  BackendTerminatedError,
  BackendTerminatedUnexpectedlyError,
];

/**
 * SQLSTATEs of a server that is going away or not yet back: class 08 (connection exception),
 * 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now (starting up).
 */
const POSTGRES_GOING_AWAY = /^(08...|57P0[123])$/;

/** Socket errors of a peer that is down or restarting. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']);

/**
 * ioredis's own messages while it has no connection (no offline queue) or a command timed out;
 * and a Redis Cluster's while a master fails over or slots move (its client's, and the cluster's
 * own CLUSTERDOWN, TRYAGAIN, and MOVED or ASK while the slots it knows are out of date).
 */
const REDIS_NO_ANSWER =
  /^(Connection is closed\.|Stream isn't writeable|Command timed out|Reached the max retries per request limit|Too many Cluster redirections|Cluster isn't ready|Failed to refresh slots cache|None of startup nodes is available|CLUSTERDOWN|TRYAGAIN|MOVED |ASK )/;

/**
 * An error by its shape, not `instanceof Error`: a socket error made by Node's own internals is
 * of another realm's Error where the code runs in a sandbox (jest's), and a read ECONNRESET from
 * a Postgres that shut down was then answered 500.
 */
const isErrorLike = (value: unknown): value is Error & { code?: unknown; cause?: unknown } =>
  typeof value === 'object' && value !== null && typeof (value as Error).message === 'string';

/**
 * Whether an error means a backend (Postgres or Redis) was briefly out of reach, so the request
 * may be retried as it is (the edge answers SERVICE_UNAVAILABLE, never INTERNAL_ERROR). Looks
 * down the `cause` chain, where slonik and the services' own wrappers keep the original.
 */
export function isBackendUnreachable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; isErrorLike(current) && depth < 5; depth++) {
    if (POSTGRES_NO_ANSWER.some((type) => current instanceof type)) return true;
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && SOCKET_CODES.has(code)) return true;
    if (REDIS_NO_ANSWER.test(current.message)) return true;
    current = current.cause;
  }
  return POSTGRES_GOING_AWAY.test(sqlState(error) ?? '');
}
