import type { PlatformDeps } from '../../platform/deps';
import type { LogObjects, RunRef } from './log-objects';
import { isTerminal } from '../../db/runs/runs';
import { loadRun } from './reads';
import { LOG_CACHE_LINES_MAX, logCacheKey, logFilePath, type LogStream } from './log-store';
import { readLogFilePage } from './log-file';

export { logCacheKeys } from './log-store';

export const LOGS_LIMIT_DEFAULT = 1000;
export const LOGS_LIMIT_MAX = 1000;

export interface LogPage {
  lines: string[];
  next_since: number;
  eof: boolean;
}

/** Where the lines came from, for the X-Log-Source header. */
export type LogSource = 'cache' | 'file' | 'object' | 'none';

/** What reading a run's logs needs: the run logs' object store (RUNS_LOG_S3_*); null: files. */
export type LogReadDeps = PlatformDeps & { logObjects: LogObjects | null };

/** A page from the object store's chunks, whichever host captured the run. */
async function readObjectPage(
  objects: LogObjects,
  run: RunRef,
  query: { stream: LogStream; since: number | null; limit: number },
  terminal: boolean,
): Promise<{ page: LogPage; source: LogSource }> {
  const found = await objects.readPage(run, query.stream, query.since, query.limit);
  if (found === null)
    return { page: { lines: [], next_since: query.since ?? 0, eof: terminal }, source: 'none' };
  const next = found.start + found.lines.length;
  return {
    page: { lines: found.lines, next_since: next, eof: terminal && next >= found.total },
    source: 'object',
  };
}

/**
 * A page of a run's log: from the Redis cache while it holds the lines asked for (the live
 * tail), else from the stream's file (services/runs/log-file.ts: only the lines the page
 * needs), or from the object store when run logs go there. `since` null tails the last `limit`
 * lines. `eof` is true once the run is terminal and the page reaches the end.
 */
export async function readRunLogs(
  deps: LogReadDeps,
  tenantId: string,
  trackId: string,
  query: { stream: LogStream; since: number | null; limit: number },
): Promise<{ page: LogPage; source: LogSource }> {
  const run = await loadRun(deps, tenantId, trackId);
  const terminal = isTerminal(run.state);
  const key = logCacheKey(trackId, query.stream);
  const cached = await deps.redis.llen(key);
  if (cached > 0 && cached < LOG_CACHE_LINES_MAX) {
    const start = query.since === null ? Math.max(0, cached - query.limit) : query.since;
    const lines =
      start >= cached ? [] : await deps.redis.lrange(key, start, start + query.limit - 1);
    const next = start + lines.length;
    return { page: { lines, next_since: next, eof: terminal && next >= cached }, source: 'cache' };
  }
  if (deps.logObjects)
    return readObjectPage(deps.logObjects, { tenantId, trackId }, query, terminal);
  // Only the lines the page needs, through the index the capture keeps beside the file.
  const found = await readLogFilePage(
    logFilePath(deps.config.runs.logDir, tenantId, trackId, query.stream),
    query.since,
    query.limit,
  );
  if (found === null)
    return { page: { lines: [], next_since: query.since ?? 0, eof: terminal }, source: 'none' };
  return {
    page: { lines: found.lines, next_since: found.next, eof: terminal && found.atEnd },
    source: 'file',
  };
}
