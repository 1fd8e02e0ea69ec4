import fs, { type FileHandle } from 'node:fs/promises';

/**
 * A page of a run's log file (file mode, RUNS_LOG_DIR) at a cost bounded by the page, not by
 * the file.
 *
 * Offsets (`since`, `next_since`) are line numbers, so a page needs the byte where line `since`
 * begins, and a tail (`since` null, the default) or an offset past the end needs the stream's
 * line count: neither can be had from the bytes without scanning them from the start. Of the ways
 * to find them:
 * - streaming lines with an early stop costs as much as the lines before `since`, and a tail must
 *   still count every line of the file;
 * - remembering where the previous page ended (fs.open + read from there) helps only the next
 *   page of one client on one API process: a first page, a tail, a jump, a restart or another
 *   process scans the file again;
 * - a sparse index of line offsets kept beside the log by the capture (chosen) serves every page
 *   the same: the worker sees every byte as it writes it, so it notes where each
 *   LINE_INDEX_EVERY-th line begins (one `indexOf` per newline, 8 bytes per LINE_INDEX_EVERY
 *   lines: ~0.1% of a log of 80-byte lines). A reader pread()s one or two entries and reads from
 *   there: fewer than LINE_INDEX_EVERY lines to skip, the page itself, and for a tail the lines
 *   after the last entry (fewer than LINE_INDEX_EVERY) to count them. A page of `limit` lines
 *   thus reads at most `limit + 2 * LINE_INDEX_EVERY` lines, in READ_BUFFER_BYTES pieces.
 *
 * The index, `<log>.idx`: an 8-byte header (`RLX1`, then the uint32 LE lines per entry), then
 * entry i (uint64 LE) = the byte offset where line (i + 1) * every begins, i.e. just past the
 * (i + 1) * every-th newline. Both files are append-only, and the capture appends an entry only
 * after the log bytes it points past; a reader takes the index's size before the log's, so every
 * entry it uses points inside the log it sees.
 *
 * The answers are the same as reading the whole file, splitting it on '\n' and dropping the
 * empty piece after a final newline: lines are the bytes between newlines, decoded as UTF-8 once
 * whole (a character cut by a buffer boundary is joined first; '\r' of CRLF stays, as it did); a
 * last line without its newline counts. The log's size is taken once when the page starts, and
 * nothing past it is read: a file still being appended to gives the page the whole-file read
 * would have given at that instant (its last line possibly incomplete, as before).
 *
 * An entry is used only if it lies within that size and the byte before it is a newline;
 * otherwise (an index being truncated by a retried capture, a torn write, an unknown header) and
 * for a log with no index (captured before indexes existed) the reader scans from the start:
 * the same answer at the old cost in time, still streamed, so memory stays that of the page.
 */

/** Lines per index entry: the most a page skips to reach `since`, or counts for a tail. */
export const LINE_INDEX_EVERY = 100;
/** Bytes read at a time; a longer line is read in several pieces and joined. */
export const READ_BUFFER_BYTES = 64 * 1024;

const INDEX_MAGIC = 'RLX1';
const INDEX_HEADER_BYTES = 8;
const INDEX_ENTRY_BYTES = 8;
const NEWLINE = 0x0a;

/** The line index kept beside a log file. */
export const logIndexPath = (logFile: string): string => `${logFile}.idx`;

/**
 * The capture's side of the index: fed every byte appended to one log, in order, it returns the
 * entries to append to the index once those bytes are in the log.
 */
export class LineIndexBuilder {
  private offset = 0;
  private lines = 0;
  readonly every: number;

  constructor(every = LINE_INDEX_EVERY) {
    this.every = every;
  }

  /** The index's first bytes. */
  header(): Buffer {
    const header = Buffer.alloc(INDEX_HEADER_BYTES);
    header.write(INDEX_MAGIC, 0, 'latin1');
    header.writeUInt32LE(this.every, 4);
    return header;
  }

  /** Entries for the lines `bytes` (appended to the log) starts, or null when none. */
  advance(bytes: Buffer): Buffer | null {
    const starts: number[] = [];
    for (let at = bytes.indexOf(NEWLINE); at !== -1; at = bytes.indexOf(NEWLINE, at + 1)) {
      this.lines += 1;
      if (this.lines % this.every === 0) starts.push(this.offset + at + 1);
    }
    this.offset += bytes.length;
    if (starts.length === 0) return null;
    const entries = Buffer.alloc(starts.length * INDEX_ENTRY_BYTES);
    starts.forEach((start, i) => entries.writeBigUInt64LE(BigInt(start), i * INDEX_ENTRY_BYTES));
    return entries;
  }
}

export interface LogFilePage {
  /** Lines [start, next) of the log; start is `since`, or for a tail `max(0, total - limit)`. */
  lines: string[];
  next: number;
  /** No line of the log after `next` (next >= its line count). */
  atEnd: boolean;
}

/**
 * Lines [since, since + limit) of a log file, or its last `limit` lines when `since` is null;
 * null when there is no such file.
 */
export async function readLogFilePage(
  file: string,
  since: number | null,
  limit: number,
  options: { bufferBytes?: number } = {},
): Promise<LogFilePage | null> {
  let log: FileHandle;
  try {
    log = await fs.open(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  let index: LineIndex | null = null;
  try {
    // The index's size before the log's: each entry counted then points inside the log's size.
    index = await LineIndex.open(logIndexPath(file));
    const size = (await log.stat()).size;
    const bufferBytes = options.bufferBytes ?? READ_BUFFER_BYTES;
    const cursorAt = async (line: number) => {
      const from = await checkpoint(log, size, index, line);
      return { line: from.line, cursor: new LineCursor(log, from.offset, size, bufferBytes) };
    };

    let start = since;
    if (start === null) {
      const last = await cursorAt(Number.MAX_SAFE_INTEGER);
      const total = last.line + (await last.cursor.skip(Number.MAX_SAFE_INTEGER));
      start = Math.max(0, total - limit);
    }
    const { line, cursor } = await cursorAt(start);
    if ((await cursor.skip(start - line)) < start - line)
      return { lines: [], next: start, atEnd: true };
    const lines: string[] = [];
    while (lines.length < limit) {
      const text = await cursor.line();
      if (text === null) break;
      lines.push(text);
    }
    return { lines, next: start + lines.length, atEnd: cursor.atEnd };
  } finally {
    await index?.close();
    await log.close();
  }
}

/** A log's index as the reader sees it: `count` entries, each read when needed. */
class LineIndex {
  private constructor(
    private readonly handle: FileHandle,
    readonly every: number,
    readonly count: number,
  ) {}

  /** The index beside a log, or null when there is none or it cannot be used (then: scan). */
  static async open(file: string): Promise<LineIndex | null> {
    let handle: FileHandle;
    try {
      handle = await fs.open(file, 'r');
    } catch {
      return null;
    }
    try {
      const { size } = await handle.stat();
      const header = Buffer.alloc(INDEX_HEADER_BYTES);
      const { bytesRead } = await handle.read(header, 0, INDEX_HEADER_BYTES, 0);
      const every = header.readUInt32LE(4);
      if (
        bytesRead === INDEX_HEADER_BYTES &&
        header.toString('latin1', 0, 4) === INDEX_MAGIC &&
        every > 0
      ) {
        const count = Math.floor((size - INDEX_HEADER_BYTES) / INDEX_ENTRY_BYTES);
        return new LineIndex(handle, every, count);
      }
    } catch {
      // unusable: scan
    }
    await handle.close();
    return null;
  }

  /** Where line (i + 1) * every begins, or null when the entry cannot be read whole. */
  async entry(i: number): Promise<number | null> {
    const bytes = Buffer.alloc(INDEX_ENTRY_BYTES);
    const position = INDEX_HEADER_BYTES + i * INDEX_ENTRY_BYTES;
    const { bytesRead } = await this.handle.read(bytes, 0, INDEX_ENTRY_BYTES, position);
    return bytesRead === INDEX_ENTRY_BYTES ? Number(bytes.readBigUInt64LE(0)) : null;
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

/** The nearest line at or before `line` whose start the index gives and the log confirms. */
async function checkpoint(
  log: FileHandle,
  size: number,
  index: LineIndex | null,
  line: number,
): Promise<{ line: number; offset: number }> {
  const origin = { line: 0, offset: 0 };
  if (index === null) return origin;
  const entries = Math.min(Math.floor(line / index.every), index.count);
  if (entries === 0) return origin;
  const offset = await index.entry(entries - 1);
  if (offset === null || offset < 1 || offset > size) return origin;
  const before = Buffer.alloc(1);
  const { bytesRead } = await log.read(before, 0, 1, offset - 1);
  if (bytesRead !== 1 || before[0] !== NEWLINE) return origin;
  return { line: entries * index.every, offset };
}

/** Lines of a log from a line's start up to a byte size, read forward a buffer at a time. */
class LineCursor {
  private readonly buffer: Buffer;
  private view: Buffer;
  /** The next unread byte of `view`. */
  private at = 0;
  /** The file offset just past `view`. */
  private position: number;
  private end: number;

  constructor(
    private readonly handle: FileHandle,
    from: number,
    end: number,
    bufferBytes: number,
  ) {
    this.buffer = Buffer.allocUnsafe(bufferBytes);
    this.view = this.buffer.subarray(0, 0);
    this.position = from;
    this.end = end;
  }

  /** Every byte up to the end has been passed. */
  get atEnd(): boolean {
    return this.at >= this.view.length && this.position >= this.end;
  }

  /** Reads the next piece once `view` is used up; false at the end. */
  private async fill(): Promise<boolean> {
    const want = Math.min(this.buffer.length, this.end - this.position);
    if (want <= 0) return false;
    const { bytesRead } = await this.handle.read(this.buffer, 0, want, this.position);
    if (bytesRead === 0) {
      // Shorter than its size was (truncated by a retried capture): it ends here.
      this.end = this.position;
      return false;
    }
    this.view = this.buffer.subarray(0, bytesRead);
    this.at = 0;
    this.position += bytesRead;
    return true;
  }

  /** Passes up to `count` lines without decoding them; how many there were. */
  async skip(count: number): Promise<number> {
    let passed = 0;
    let inLine = false;
    while (passed < count) {
      if (this.at >= this.view.length && !(await this.fill())) return passed + (inLine ? 1 : 0);
      const newline = this.view.indexOf(NEWLINE, this.at);
      if (newline === -1) {
        this.at = this.view.length;
        inLine = true;
      } else {
        this.at = newline + 1;
        inLine = false;
        passed += 1;
      }
    }
    return passed;
  }

  /** The next line, decoded once whole; null at the end. */
  async line(): Promise<string | null> {
    const pieces: Buffer[] = [];
    for (;;) {
      if (this.at >= this.view.length && !(await this.fill()))
        return pieces.length === 0 ? null : Buffer.concat(pieces).toString('utf8');
      const newline = this.view.indexOf(NEWLINE, this.at);
      if (newline !== -1) {
        const last = this.view.subarray(this.at, newline);
        this.at = newline + 1;
        return pieces.length === 0
          ? last.toString('utf8')
          : Buffer.concat([...pieces, last]).toString('utf8');
      }
      // Copied: the buffer is read into again for the rest of the line.
      pieces.push(Buffer.from(this.view.subarray(this.at)));
      this.at = this.view.length;
    }
  }
}
