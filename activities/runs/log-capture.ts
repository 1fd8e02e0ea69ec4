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
  type LogStream,
} from '../../services/runs/log-store';
import { CHUNK_LINES, type LogObjects, type RunRef } from '../../services/runs/log-objects';
import { LineIndexBuilder, logIndexPath } from '../../services/runs/log-file';

/** result_summary: the last 1 KB of stdout. */
export const RESULT_SUMMARY_BYTES = 1024;

/** How often the chunk being filled is uploaded again while it grows (object store). */
const CHUNK_UPLOAD_EVERY_MS = 2_000;

/** Where a run's log is kept for good: files on this host, or an object store. */
interface LogSink {
  /** What the run's record names as each stream's log. */
  readonly files: Record<LogStream, string>;
  /** Bytes of stdout or stderr as they came. */
  raw(stream: 'stdout' | 'stderr', chunk: Buffer): void;
  /** Whole lines of a stream (and of `both`). */
  lines(stream: LogStream, lines: string[]): void;
  /** Forgets what an earlier attempt kept. */
  reset(): Promise<void>;
  /** Everything kept; throws if something could not be. */
  close(): Promise<void>;
  abandon(): void;
}

/**
 * Captures a container's two output streams into the run's log (files, or an object store) and
 * the Redis live tail, line by line. Made fresh on every attempt of the follow activity: it
 * forgets what a previous attempt kept and re-reads the container's log from its start (Docker
 * keeps it), so a worker that restarts mid-run ends with exactly one copy of each line.
 */
export class LogCapture {
  private readonly sink: LogSink;
  private readonly partial = { stdout: '', stderr: '' };
  private readonly bytes = { stdout: 0, stderr: 0 };
  private summary = Buffer.alloc(0);
  private pending: Promise<unknown> = Promise.resolve();
  private cachedLines = { stdout: 0, stderr: 0, both: 0 };

  constructor(
    private readonly redis: Redis,
    store: { logDir: string; logObjects: LogObjects | null },
    private readonly run: RunRef,
  ) {
    this.sink = store.logObjects
      ? new ObjectSink(store.logObjects, run)
      : new FileSink(store.logDir, run);
  }

  get files(): Record<LogStream, string> {
    return this.sink.files;
  }

  private key(stream: LogStream): string {
    return RUNS_REDIS_PREFIX + logCacheKey(this.run.trackId, stream);
  }

  /** Forgets what an earlier attempt kept and cached. */
  async reset(): Promise<void> {
    await this.redis.del(this.key('stdout'), this.key('stderr'), this.key('both'));
    await this.sink.reset();
  }

  write(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    this.sink.raw(stream, chunk);
    this.bytes[stream] += chunk.length;
    if (stream === 'stdout')
      this.summary = Buffer.concat([this.summary, chunk]).subarray(-RESULT_SUMMARY_BYTES);
    const text = this.partial[stream] + chunk.toString('utf8');
    const lines = text.split('\n');
    this.partial[stream] = lines.pop() ?? '';
    if (lines.length > 0) this.emit(stream, lines);
  }

  private emit(stream: 'stdout' | 'stderr', lines: string[]): void {
    this.sink.lines(stream, lines);
    this.sink.lines('both', lines);
    const pipeline = this.redis.pipeline();
    for (const target of [stream, 'both'] as const) {
      const room = LOG_CACHE_LINES_MAX - this.cachedLines[target];
      if (room <= 0) continue;
      const batch = lines.slice(0, room);
      this.cachedLines[target] += batch.length;
      pipeline.rpush(this.key(target), ...batch).expire(this.key(target), LOG_CACHE_TTL_SECONDS);
    }
    // The cache is a convenience: a Redis hiccup must not fail the run (the sink is the record).
    this.pending = this.pending.then(() => pipeline.exec().catch(() => undefined));
  }

  /** Flushes the trailing partial lines, closes the log, lets the cache expire later. */
  async close(): Promise<{ stdoutBytes: number; stderrBytes: number; resultSummary: string }> {
    for (const stream of ['stdout', 'stderr'] as const) {
      if (this.partial[stream] !== '') {
        this.emit(stream, [this.partial[stream]]);
        this.partial[stream] = '';
      }
    }
    await this.sink.close();
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

  /** Stops without marking the end (the attempt is abandoned; a retry takes over). */
  abandon(): void {
    this.sink.abandon();
  }
}

/**
 * One file per stream on this host (RUNS_LOG_DIR): stdout and stderr byte for byte. Beside each,
 * its line index (`<file>.idx`, services/runs/log-file.ts), so the API reads a page of a long log
 * without reading the whole file; each entry is appended after the log bytes it points past.
 */
class FileSink implements LogSink {
  readonly files: Record<LogStream, string>;
  private readonly fds: Record<LogStream, number>;
  private readonly indexes: Record<LogStream, { fd: number; builder: LineIndexBuilder }>;

  constructor(logDir: string, run: RunRef) {
    const file = (stream: LogStream) => logFilePath(logDir, run.tenantId, run.trackId, stream);
    this.files = { stdout: file('stdout'), stderr: file('stderr'), both: file('both') };
    fs.mkdirSync(path.dirname(this.files.stdout), { recursive: true });
    this.fds = {
      stdout: fs.openSync(this.files.stdout, 'w'),
      stderr: fs.openSync(this.files.stderr, 'w'),
      both: fs.openSync(this.files.both, 'w'),
    };
    // After the logs: while an earlier attempt's index outlives its truncated log, every entry
    // of it points past the log's end, which the reader refuses.
    const index = (stream: LogStream) => {
      const builder = new LineIndexBuilder();
      const fd = fs.openSync(logIndexPath(this.files[stream]), 'w');
      fs.writeSync(fd, builder.header());
      return { fd, builder };
    };
    this.indexes = { stdout: index('stdout'), stderr: index('stderr'), both: index('both') };
  }

  private append(stream: LogStream, bytes: Buffer): void {
    fs.writeSync(this.fds[stream], bytes);
    const index = this.indexes[stream];
    const entries = index.builder.advance(bytes);
    if (entries) fs.writeSync(index.fd, entries);
  }

  raw(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    this.append(stream, chunk);
  }

  lines(stream: LogStream, lines: string[]): void {
    if (stream === 'both') this.append('both', Buffer.from(lines.map((l) => `${l}\n`).join('')));
  }

  reset(): Promise<void> {
    // Opening the files with 'w' truncated them.
    return Promise.resolve();
  }

  private allFds(): number[] {
    return [...Object.values(this.fds), ...Object.values(this.indexes).map((i) => i.fd)];
  }

  close(): Promise<void> {
    for (const fd of this.allFds()) fs.closeSync(fd);
    return Promise.resolve();
  }

  abandon(): void {
    for (const fd of this.allFds()) {
      try {
        fs.closeSync(fd);
      } catch {
        // already closed
      }
    }
  }
}

/**
 * Chunks of CHUNK_LINES lines in an object store (services/runs/log-objects.ts): a full chunk is
 * uploaded at once, the one being filled every CHUNK_UPLOAD_EVERY_MS while it grows, each
 * upload after the one before it (a chunk's later version never overtaken by an earlier one).
 */
class ObjectSink implements LogSink {
  readonly files: Record<LogStream, string>;
  private readonly chunks: Record<LogStream, { index: number; lines: string[]; dirty: boolean }> = {
    stdout: { index: 0, lines: [], dirty: false },
    stderr: { index: 0, lines: [], dirty: false },
    both: { index: 0, lines: [], dirty: false },
  };
  private uploading: Promise<void> = Promise.resolve();
  private failure: Error | null = null;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly objects: LogObjects,
    private readonly run: RunRef,
  ) {
    const at = (stream: LogStream) => objects.location(run.tenantId, run.trackId, stream);
    this.files = { stdout: at('stdout'), stderr: at('stderr'), both: at('both') };
    this.timer = setInterval(() => this.uploadGrowing(), CHUNK_UPLOAD_EVERY_MS);
    this.timer.unref();
  }

  raw(): void {
    // Kept as lines.
  }

  lines(stream: LogStream, lines: string[]): void {
    const chunk = this.chunks[stream];
    for (const line of lines) {
      chunk.lines.push(line);
      chunk.dirty = true;
      if (chunk.lines.length === CHUNK_LINES) {
        this.upload(stream, chunk.index, chunk.lines);
        chunk.index += 1;
        chunk.lines = [];
        chunk.dirty = false;
      }
    }
  }

  private uploadGrowing(): void {
    for (const stream of ['stdout', 'stderr', 'both'] as const) {
      const chunk = this.chunks[stream];
      if (!chunk.dirty) continue;
      this.upload(stream, chunk.index, [...chunk.lines]);
      chunk.dirty = false;
    }
  }

  private upload(stream: LogStream, index: number, lines: string[]): void {
    this.uploading = this.uploading
      .then(() => this.objects.putChunk(this.run, stream, index, lines))
      .catch((error: unknown) => {
        this.failure ??= error instanceof Error ? error : new Error(String(error));
      });
  }

  async reset(): Promise<void> {
    await this.objects.deleteRun(this.run);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.uploadGrowing();
    await this.uploading;
    if (this.failure) throw this.failure;
  }

  abandon(): void {
    clearInterval(this.timer);
  }
}
