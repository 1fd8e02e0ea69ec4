import fs from 'node:fs';
import path from 'node:path';
import type { Redis } from '../../db/redis';
import {
  LOG_CACHE_AFTER_END_SECONDS,
  LOG_CACHE_LINES_MAX,
  LOG_CACHE_TTL_SECONDS,
  RUNS_REDIS_PREFIX,
  logCacheKey,
  logFilePath,
} from '../../api/runs/log-store';

/** result_summary: the last 1 KB of stdout. */
export const RESULT_SUMMARY_BYTES = 1024;

/**
 * Captures a container's two output streams into the run's log files and the Redis live
 * tail, line by line. Made fresh on every attempt of the follow activity: it truncates what a
 * previous attempt wrote and re-reads the container's log from its start (Docker keeps it), so
 * a worker that restarts mid-run ends with exactly one copy of each line.
 */
export class LogCapture {
  readonly files: Record<'stdout' | 'stderr' | 'both', string>;
  private readonly fds: Record<'stdout' | 'stderr' | 'both', number>;
  private readonly partial = { stdout: '', stderr: '' };
  private readonly bytes = { stdout: 0, stderr: 0 };
  private summary = Buffer.alloc(0);
  private pending: Promise<unknown> = Promise.resolve();
  private cachedLines = { stdout: 0, stderr: 0, both: 0 };

  constructor(
    private readonly redis: Redis,
    logDir: string,
    tenantId: string,
    private readonly trackId: string,
  ) {
    this.files = {
      stdout: logFilePath(logDir, tenantId, trackId, 'stdout'),
      stderr: logFilePath(logDir, tenantId, trackId, 'stderr'),
      both: logFilePath(logDir, tenantId, trackId, 'both'),
    };
    fs.mkdirSync(path.dirname(this.files.stdout), { recursive: true });
    this.fds = {
      stdout: fs.openSync(this.files.stdout, 'w'),
      stderr: fs.openSync(this.files.stderr, 'w'),
      both: fs.openSync(this.files.both, 'w'),
    };
  }

  private key(stream: 'stdout' | 'stderr' | 'both'): string {
    return RUNS_REDIS_PREFIX + logCacheKey(this.trackId, stream);
  }

  /** Forgets what an earlier attempt cached. */
  async reset(): Promise<void> {
    await this.redis.del(this.key('stdout'), this.key('stderr'), this.key('both'));
  }

  write(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    fs.writeSync(this.fds[stream], chunk);
    this.bytes[stream] += chunk.length;
    if (stream === 'stdout')
      this.summary = Buffer.concat([this.summary, chunk]).subarray(-RESULT_SUMMARY_BYTES);
    const text = this.partial[stream] + chunk.toString('utf8');
    const lines = text.split('\n');
    this.partial[stream] = lines.pop() ?? '';
    if (lines.length > 0) this.emit(stream, lines);
  }

  private emit(stream: 'stdout' | 'stderr', lines: string[]): void {
    fs.writeSync(this.fds.both, lines.map((l) => `${l}\n`).join(''));
    const pipeline = this.redis.pipeline();
    for (const target of [stream, 'both'] as const) {
      const room = LOG_CACHE_LINES_MAX - this.cachedLines[target];
      if (room <= 0) continue;
      const batch = lines.slice(0, room);
      this.cachedLines[target] += batch.length;
      pipeline.rpush(this.key(target), ...batch).expire(this.key(target), LOG_CACHE_TTL_SECONDS);
    }
    // The cache is a convenience: a Redis hiccup must not fail the run (the files are the record).
    this.pending = this.pending.then(() => pipeline.exec().catch(() => undefined));
  }

  /** Flushes the trailing partial lines, closes the files, lets the cache expire later. */
  async close(): Promise<{ stdoutBytes: number; stderrBytes: number; resultSummary: string }> {
    for (const stream of ['stdout', 'stderr'] as const) {
      if (this.partial[stream] !== '') {
        this.emit(stream, [this.partial[stream]]);
        this.partial[stream] = '';
      }
    }
    for (const fd of Object.values(this.fds)) fs.closeSync(fd);
    await this.pending;
    const pipeline = this.redis.pipeline();
    for (const stream of ['stdout', 'stderr', 'both'] as const)
      pipeline.expire(this.key(stream), LOG_CACHE_AFTER_END_SECONDS);
    await pipeline.exec().catch(() => undefined);
    return {
      stdoutBytes: this.bytes.stdout,
      stderrBytes: this.bytes.stderr,
      resultSummary: this.summary.toString('utf8'),
    };
  }

  /** Closes the files without marking the end (the attempt is abandoned; a retry takes over). */
  abandon(): void {
    for (const fd of Object.values(this.fds)) {
      try {
        fs.closeSync(fd);
      } catch {
        // already closed
      }
    }
  }
}
