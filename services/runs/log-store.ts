import path from 'node:path';

/**
 * Where a run's logs live, shared by the capturing activity and the API: one file per
 * stream plus `both` (the two interleaved in arrival order), and a Redis list per stream for
 * the live tail. Offsets (`since`, `next_since`) are 0-based line numbers of a stream.
 */
export type LogStream = 'stdout' | 'stderr' | 'both';
export const LOG_STREAMS: LogStream[] = ['stdout', 'stderr', 'both'];

/** Redis keys WITHOUT the service prefix (the API's client adds "runs:"; workers add it). */
export const logCacheKeys = (trackId: string): string[] =>
  LOG_STREAMS.map((s) => logCacheKey(trackId, s));
/** The run's id as the keys' hash tag: its three lists in one Redis Cluster slot (one DEL, one pipeline). */
export const logCacheKey = (trackId: string, stream: LogStream): string =>
  `logs:{${trackId}}:${stream}`;
export const RUNS_REDIS_PREFIX = 'runs:';

/** Lines kept in the cache per stream; past it the API reads the file (the cache is a tail). */
export const LOG_CACHE_LINES_MAX = 100_000;
/** A live run's cache outlives a stalled worker by this much; a finished run's by LOG_CACHE_AFTER_END_SECONDS. */
export const LOG_CACHE_TTL_SECONDS = 24 * 3600;
export const LOG_CACHE_AFTER_END_SECONDS = 3600;

export function logFilePath(
  logDir: string,
  tenantId: string,
  trackId: string,
  stream: LogStream,
): string {
  return path.resolve(logDir, tenantId, `${trackId}.${stream}.log`);
}
