import {
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  NoSuchKey,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import type { LogObjectsConfig } from '../../platform/config';
import type { LogStream } from './log-store';

/**
 * Run logs in an S3-compatible object store (RUNS_LOG_S3_*), for a platform of several hosts:
 * the worker that captures a run uploads its lines as it goes, and the runs API on any host
 * pages them from there. Each stream is cut into chunks of CHUNK_LINES lines, one object each,
 * named by the chunk's index: line n is in chunk floor(n / CHUNK_LINES), so a page is one or two
 * reads, and a capture that starts again writes the same objects over. The chunk being filled
 * is uploaded again as it grows (at most every few seconds), so a long run's log never waits
 * for its end.
 */
export const CHUNK_LINES = 1000;
const INDEX_DIGITS = 9;

export interface LogObjects {
  /** Where a stream's chunks are, as the run's record names it (s3://bucket/prefix). */
  location(tenantId: string, trackId: string, stream: LogStream): string;
  putChunk(run: RunRef, stream: LogStream, index: number, lines: string[]): Promise<void>;
  /** Lines [start, start + limit) and how many the stream has in all (null: nothing stored). */
  readPage(
    run: RunRef,
    stream: LogStream,
    since: number | null,
    limit: number,
  ): Promise<{ lines: string[]; start: number; total: number } | null>;
  deleteRun(run: RunRef): Promise<void>;
}

export interface RunRef {
  tenantId: string;
  trackId: string;
}

const runPrefix = (run: RunRef) => `${run.tenantId}/${run.trackId}/`;
const streamPrefix = (run: RunRef, stream: LogStream) => `${runPrefix(run)}${stream}/`;
const chunkKey = (run: RunRef, stream: LogStream, index: number) =>
  `${streamPrefix(run, stream)}${String(index).padStart(INDEX_DIGITS, '0')}`;

/** The object store of RUNS_LOG_S3_*, or null when run logs are files (one client per process). */
export const createLogObjectsIfOn = (config: LogObjectsConfig | null): LogObjects | null =>
  config && createLogObjects(config);

export function createLogObjects(config: LogObjectsConfig): LogObjects {
  const s3 = new S3Client({
    endpoint: config.endpoint,
    region: config.region,
    forcePathStyle: config.pathStyle,
    credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey },
  });
  const bucket = config.bucket;

  async function getChunk(run: RunRef, stream: LogStream, index: number): Promise<string[]> {
    try {
      const got = await s3.send(
        new GetObjectCommand({ Bucket: bucket, Key: chunkKey(run, stream, index) }),
      );
      const text = (await got.Body?.transformToString('utf8')) ?? '';
      return text === '' ? [] : text.replace(/\n$/, '').split('\n');
    } catch (error) {
      if (error instanceof NoSuchKey) return [];
      throw error;
    }
  }

  /** The index of the stream's last chunk, or null when it has none. */
  async function lastChunk(run: RunRef, stream: LogStream): Promise<number | null> {
    let last: string | null = null;
    let token: string | undefined;
    do {
      const page = await s3.send(
        new ListObjectsV2Command({
          Bucket: bucket,
          Prefix: streamPrefix(run, stream),
          ContinuationToken: token,
        }),
      );
      for (const object of page.Contents ?? []) if (object.Key) last = object.Key;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return last === null ? null : Number(last.slice(last.lastIndexOf('/') + 1));
  }

  return {
    location: (tenantId, trackId, stream) =>
      `s3://${bucket}/${streamPrefix({ tenantId, trackId }, stream)}`,

    async putChunk(run, stream, index, lines) {
      await s3.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: chunkKey(run, stream, index),
          Body: lines.map((line) => `${line}\n`).join(''),
          ContentType: 'text/plain; charset=utf-8',
        }),
      );
    },

    async readPage(run, stream, since, limit) {
      const last = await lastChunk(run, stream);
      if (last === null) return null;
      const tail = await getChunk(run, stream, last);
      const total = last * CHUNK_LINES + tail.length;
      const start = since ?? Math.max(0, total - limit);
      const end = Math.min(total, start + limit);
      const lines: string[] = [];
      for (let index = Math.floor(start / CHUNK_LINES); index * CHUNK_LINES < end; index++) {
        const chunk = index === last ? tail : await getChunk(run, stream, index);
        const from = Math.max(start, index * CHUNK_LINES) - index * CHUNK_LINES;
        const to = Math.min(end, (index + 1) * CHUNK_LINES) - index * CHUNK_LINES;
        lines.push(...chunk.slice(from, to));
      }
      return { lines, start, total };
    },

    async deleteRun(run) {
      let token: string | undefined;
      do {
        const page = await s3.send(
          new ListObjectsV2Command({
            Bucket: bucket,
            Prefix: runPrefix(run),
            ContinuationToken: token,
          }),
        );
        const keys = (page.Contents ?? []).flatMap((o) => (o.Key ? [{ Key: o.Key }] : []));
        if (keys.length > 0)
          await s3.send(
            new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys, Quiet: true } }),
          );
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
    },
  };
}
