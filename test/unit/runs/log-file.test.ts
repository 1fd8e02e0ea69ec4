import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LogCapture } from '../../../activities/runs/log-capture';
import type { Redis } from '../../../db/redis';
import {
  LINE_INDEX_EVERY,
  LineIndexBuilder,
  READ_BUFFER_BYTES,
  logIndexPath,
  readLogFilePage,
  type LogFilePage,
} from '../../../services/runs/log-file';
import { logFilePath } from '../../../services/runs/log-store';

/**
 * The file-mode page reader against real files: its answers must be those of the reader it
 * replaces (the whole file read, split on '\n', the empty piece after a final newline dropped,
 * then sliced), for every query, index or none, buffer size, and a file still growing.
 */

/** The replaced reader, verbatim but for taking bytes (services/runs/logs.ts before). */
function reference(bytes: Buffer, since: number | null, limit: number): LogFilePage {
  const text = bytes.toString('utf8');
  const all = text === '' ? [] : text.split('\n');
  if (all.length > 0 && all[all.length - 1] === '') all.pop();
  const start = since === null ? Math.max(0, all.length - limit) : since;
  const lines = all.slice(start, start + limit);
  const next = start + lines.length;
  return { lines, next, atEnd: next >= all.length };
}

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'log-file-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

let files = 0;
/** A log written as the capture writes it: in `chunks`, each followed by its index entries. */
function writeLog(
  bytes: Buffer,
  options: { index?: boolean; every?: number; chunk?: number } = {},
): string {
  const file = path.join(dir, `log-${files++}.log`);
  const log = fs.openSync(file, 'w');
  const builder = new LineIndexBuilder(options.every);
  const index = options.index === false ? null : fs.openSync(logIndexPath(file), 'w');
  if (index !== null) fs.writeSync(index, builder.header());
  const step = options.chunk ?? Math.max(1, bytes.length);
  for (let at = 0; at < bytes.length; at += step) {
    const piece = bytes.subarray(at, at + step);
    fs.writeSync(log, piece);
    const entries = builder.advance(piece);
    if (index !== null && entries) fs.writeSync(index, entries);
  }
  fs.closeSync(log);
  if (index !== null) fs.closeSync(index);
  return file;
}

const lineCount = (bytes: Buffer) => reference(bytes, 0, Number.MAX_SAFE_INTEGER).next;

/** Every `since` from null through past the end, with small and large limits. */
function queries(bytes: Buffer): [number | null, number][] {
  const total = lineCount(bytes);
  const sinces = [null, 0, 1, 2, total - 2, total - 1, total, total + 1, total + 1000];
  for (let s = 0; s < Math.min(total, 30); s++) sinces.push(s);
  const out: [number | null, number][] = [];
  for (const since of new Set(sinces))
    if (since === null || since >= 0) for (const limit of [1, 3, 1000]) out.push([since, limit]);
  return out;
}

async function expectSameAsReference(
  file: string,
  bytes: Buffer,
  options: { bufferBytes?: number } = {},
): Promise<void> {
  for (const [since, limit] of queries(bytes)) {
    const page = await readLogFilePage(file, since, limit, options);
    expect({ since, limit, page }).toEqual({ since, limit, page: reference(bytes, since, limit) });
  }
}

const EDGES: Record<string, Buffer> = {
  empty: Buffer.alloc(0),
  'one newline': Buffer.from('\n'),
  'blank lines': Buffer.from('\n\n\na\n\n'),
  'no final newline': Buffer.from('a\nbb\nccc'),
  'one line, no newline': Buffer.from('only'),
  CRLF: Buffer.from('one\r\ntwo\r\n\r\nthree\r\n'),
  'CRLF, no final newline': Buffer.from('one\r\ntwo\r'),
  'multi-byte': Buffer.from('é\n€uro\n😀 grin\nmixé€😀\n'),
  BOM: Buffer.from('\ufeffstarts with a BOM\nsecond\n'),
  'invalid UTF-8': Buffer.from([
    0x61, 0xff, 0x0a, 0xe2, 0x82, 0x0a, 0xf0, 0x9f, 0x98, 0x0a, 0xc3, 0x0a, 0xed, 0xa0, 0x80, 0x0a,
    0xe2, 0x82,
  ]),
  'long lines': Buffer.from(`${'x'.repeat(300)}\n${'€'.repeat(200)}\n\n${'y'.repeat(90)}`),
};

describe('readLogFilePage', () => {
  it('answers null for a log that does not exist', async () => {
    await expect(readLogFilePage(path.join(dir, 'absent.log'), 0, 10)).resolves.toBeNull();
    await expect(readLogFilePage(path.join(dir, 'absent.log'), null, 10)).resolves.toBeNull();
  });

  it('answers an empty log with no lines, next at since (0 for a tail), at its end', async () => {
    for (const index of [true, false]) {
      const file = writeLog(Buffer.alloc(0), { index });
      expect(await readLogFilePage(file, null, 1000)).toEqual({ lines: [], next: 0, atEnd: true });
      expect(await readLogFilePage(file, 0, 1000)).toEqual({ lines: [], next: 0, atEnd: true });
      expect(await readLogFilePage(file, 5, 1)).toEqual({ lines: [], next: 5, atEnd: true });
    }
    // An index holding its header only (a capture that has just begun).
    const file = writeLog(Buffer.alloc(0));
    expect(fs.statSync(logIndexPath(file)).size).toBe(8);
    expect(await readLogFilePage(file, null, 10)).toEqual({ lines: [], next: 0, atEnd: true });
  });

  it.each(Object.keys(EDGES))(
    'answers as the whole-file read for %s, any index spacing, buffer size or write chunking',
    async (name) => {
      const bytes = EDGES[name]!;
      for (const every of [1, 2, 3, LINE_INDEX_EVERY])
        for (const chunk of [1, 3, 1 << 20]) {
          const file = writeLog(bytes, { every, chunk });
          // 1-byte reads of the long lines would only make the test slow.
          for (const bufferBytes of bytes.length > 200
            ? [7, 64, READ_BUFFER_BYTES]
            : [1, 2, 3, 5, 8, READ_BUFFER_BYTES])
            await expectSameAsReference(file, bytes, { bufferBytes });
        }
      await expectSameAsReference(writeLog(bytes, { index: false }), bytes, { bufferBytes: 4 });
    },
  );

  it('keeps CR of CRLF and counts a last line without its newline, as before', async () => {
    const file = writeLog(EDGES['CRLF, no final newline']!);
    expect(await readLogFilePage(file, 0, 10)).toEqual({
      lines: ['one\r', 'two\r'],
      next: 2,
      atEnd: true,
    });
  });

  it('marks the last page: at its end exactly when no line follows it', async () => {
    const bytes = Buffer.from(
      Array.from({ length: 2500 }, (_, i) => `out ${i + 1}\n`).join(''),
      'utf8',
    );
    const file = writeLog(bytes, { chunk: 4096 });
    expect(await readLogFilePage(file, 0, 1000)).toMatchObject({ next: 1000, atEnd: false });
    const last = await readLogFilePage(file, 2000, 1000);
    expect(last).toMatchObject({ next: 2500, atEnd: true });
    expect(last!.lines).toHaveLength(500);
    expect(last!.lines[499]).toBe('out 2500');
    expect(await readLogFilePage(file, 2000, 500)).toMatchObject({ next: 2500, atEnd: true });
    expect(await readLogFilePage(file, 2000, 499)).toMatchObject({ next: 2499, atEnd: false });
    expect(await readLogFilePage(file, 2499, 1000)).toEqual({
      lines: ['out 2500'],
      next: 2500,
      atEnd: true,
    });
    expect(await readLogFilePage(file, null, 2)).toEqual({
      lines: ['out 2499', 'out 2500'],
      next: 2500,
      atEnd: true,
    });
  });

  it('answers an offset past the end with no lines and next at the offset, with or without an index', async () => {
    const bytes = Buffer.from(Array.from({ length: 250 }, (_, i) => `l${i}\n`).join(''));
    for (const index of [true, false]) {
      const file = writeLog(bytes, { index });
      for (const since of [250, 251, 399, 1_000_000, Number.MAX_SAFE_INTEGER])
        expect(await readLogFilePage(file, since, 1000)).toEqual({
          lines: [],
          next: since,
          atEnd: true,
        });
    }
  });

  it('reads a line longer than its buffer, a character cut by the buffer boundary joined first', async () => {
    // Multi-byte characters across every boundary of a default buffer: '€' is 3 bytes, so
    // 65536 = 3 * 21845 + 1 puts one across the first boundary; a 4-byte one across the second.
    const long = `${'€'.repeat(21_846)}${'😀'.repeat(20_000)}${'a'.repeat(3 * READ_BUFFER_BYTES)}é`;
    expect(Buffer.byteLength(long)).toBeGreaterThan(4 * READ_BUFFER_BYTES);
    const bytes = Buffer.from(`short\n${long}\n${'é'.repeat(READ_BUFFER_BYTES)}\nend`);
    const file = writeLog(bytes, { every: 1, chunk: 10_000 });
    const page = await readLogFilePage(file, 0, 1000);
    expect(page).toEqual(reference(bytes, 0, 1000));
    expect(page!.lines[1]).toBe(long);
    expect(page!.lines[1]).not.toContain('\ufffd');
    expect(await readLogFilePage(file, 2, 1)).toEqual(reference(bytes, 2, 1));
    expect(await readLogFilePage(file, null, 2)).toEqual(reference(bytes, null, 2));
    // A character straddling the boundary at the page's start.
    const cut = Buffer.concat([Buffer.from('x'.repeat(READ_BUFFER_BYTES - 1)), bytes]);
    await expectSameAsReference(writeLog(cut), cut);
  });

  it('answers random logs as the whole-file read (seeded)', async () => {
    let seed = 42;
    const random = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    const pieces = ['a', 'bc', '\n', '\n', '\r\n', 'é', '€', '😀', '\ufeff', ' ', 'word'];
    for (let round = 0; round < 60; round++) {
      const parts: Buffer[] = [];
      const length = random(80);
      for (let i = 0; i < length; i++)
        parts.push(
          random(15) === 0
            ? Buffer.from([0x80 + random(0x80)]) // a stray byte: invalid UTF-8
            : Buffer.from(pieces[random(pieces.length)]!),
        );
      const bytes = Buffer.concat(parts);
      const file = writeLog(bytes, { every: 1 + random(4), chunk: 1 + random(9) });
      await expectSameAsReference(file, bytes, { bufferBytes: 1 + random(9) });
    }
  });

  it('answers from the bytes there when it starts while the log grows, its index a step behind', async () => {
    // The capture's order: log bytes, then the entries they complete. Each state a reader can
    // meet is checked: after the bytes and before their entries, then after both.
    const text = Array.from({ length: 40 }, (_, i) => `line ${i} é€😀 ${'z'.repeat(i % 7)}\r\n`)
      .join('')
      .concat('tail without newline');
    const bytes = Buffer.from(text);
    const file = path.join(dir, `growing-${files++}.log`);
    const log = fs.openSync(file, 'w');
    const index = fs.openSync(logIndexPath(file), 'w');
    const builder = new LineIndexBuilder(3);
    fs.writeSync(index, builder.header());
    for (let at = 0; at < bytes.length;) {
      const step = 1 + ((at * 7) % 23); // cuts lines and characters anywhere
      const piece = bytes.subarray(at, at + step);
      at += piece.length;
      fs.writeSync(log, piece);
      const prefix = bytes.subarray(0, at);
      for (const [since, limit] of [
        [null, 5],
        [0, 1000],
        [lineCount(prefix) - 1, 3],
        [lineCount(prefix), 1],
      ] as const)
        expect(await readLogFilePage(file, since, limit, { bufferBytes: 16 })).toEqual(
          reference(prefix, since, limit),
        );
      const entries = builder.advance(piece);
      if (entries) fs.writeSync(index, entries);
      if (entries || at === bytes.length)
        await expectSameAsReference(file, prefix, { bufferBytes: 16 });
    }
    fs.closeSync(log);
    fs.closeSync(index);
  });

  it('answers a consistent page while appends race the reads', async () => {
    const lines = Array.from({ length: 3000 }, (_, i) => `${i} ${'€'.repeat(i % 11)} end`);
    const bytes = Buffer.from(lines.map((l) => `${l}\n`).join(''));
    const file = path.join(dir, `racing-${files++}.log`);
    const log = await fsp.open(file, 'w');
    const index = await fsp.open(logIndexPath(file), 'w');
    const builder = new LineIndexBuilder(10);
    await index.write(builder.header());
    let written = 0;
    const writer = (async () => {
      while (written < bytes.length) {
        const piece = bytes.subarray(written, written + 1 + (written % 997));
        await log.write(piece);
        written += piece.length;
        const entries = builder.advance(piece);
        if (entries) await index.write(entries);
      }
    })();
    let pages = 0;
    while (written < bytes.length) {
      const from = Math.max(0, Math.floor(written / bytes.length) * 3000 - 20);
      for (const since of [null, from, 0]) {
        const page = (await readLogFilePage(file, since, 50, { bufferBytes: 64 }))!;
        pages += 1;
        const start = page.next - page.lines.length;
        page.lines.forEach((line, i) => {
          const whole = lines[start + i]!;
          if (i < page.lines.length - 1) expect(line).toBe(whole);
          // The last line may be cut where the log ended when the page began (as before).
          else expect(isCutOf(line, whole)).toBe(true);
        });
      }
    }
    await writer;
    await log.close();
    await index.close();
    expect(pages).toBeGreaterThan(3);
    await expectSameAsReference(file, bytes);
  });

  it('does not trust an index that disagrees with its log: the answer is the scanned one', async () => {
    const bytes = Buffer.from(Array.from({ length: 500 }, (_, i) => `row ${i}\n`).join(''));
    const other = Buffer.from(Array.from({ length: 900 }, (_, i) => `x${i * 13}\n`).join(''));
    const cases: Record<string, (file: string) => void> = {
      // An earlier attempt's index beside a log a retry truncated and writes again.
      "another log's index": (file) => {
        const stale = writeLog(other, { every: 7 });
        fs.copyFileSync(logIndexPath(stale), logIndexPath(file));
      },
      'entries past the end': (file) => {
        const entries = Buffer.alloc(16);
        entries.writeBigUInt64LE(BigInt(bytes.length + 100), 0);
        entries.writeBigUInt64LE(BigInt(bytes.length + 900), 8);
        fs.appendFileSync(logIndexPath(file), entries);
      },
      'a torn last entry': (file) => fs.appendFileSync(logIndexPath(file), Buffer.from([1, 2, 3])),
      'an unknown header': (file) => {
        const index = fs.readFileSync(logIndexPath(file));
        index.write('ZZZZ', 0, 'latin1');
        fs.writeFileSync(logIndexPath(file), index);
      },
      'zero lines per entry': (file) => {
        const index = fs.readFileSync(logIndexPath(file));
        index.writeUInt32LE(0, 4);
        fs.writeFileSync(logIndexPath(file), index);
      },
      'a cut header': (file) => fs.writeFileSync(logIndexPath(file), Buffer.from('RLX')),
    };
    for (const [name, spoil] of Object.entries(cases)) {
      const file = writeLog(bytes, { every: 10 });
      spoil(file);
      for (const [since, limit] of [
        [null, 1000],
        [null, 3],
        [0, 10],
        [37, 5],
        [250, 1000],
        [499, 1],
        [500, 1],
        [777, 2],
      ] as const)
        expect({ name, since, page: await readLogFilePage(file, since, limit) }).toEqual({
          name,
          since,
          page: reference(bytes, since, limit),
        });
    }
  });

  it("reads about a page's bytes with the index, whatever the log's size", async () => {
    const lineBytes = 100;
    const count = 100_000; // 10 MB
    const bytes = Buffer.from(
      Array.from({ length: count }, (_, i) => `${String(i).padStart(lineBytes - 2, '.')}\n`).join(
        '',
      ),
    );
    const file = writeLog(bytes, { chunk: 1 << 16 });
    const legacy = writeLog(bytes, { index: false });
    const read = await bytesReadBy(async () => {
      expect(await readLogFilePage(file, 50_000, 1000)).toEqual(reference(bytes, 50_000, 1000));
    });
    const tail = await bytesReadBy(async () => {
      expect(await readLogFilePage(file, null, 1000)).toEqual(reference(bytes, null, 1000));
    });
    const past = await bytesReadBy(async () => {
      expect(await readLogFilePage(file, count + 5, 1000)).toEqual(
        reference(bytes, count + 5, 1000),
      );
    });
    // The page, fewer than LINE_INDEX_EVERY lines either side, a buffer's slack, and the index's few bytes.
    const bound = (1000 + 2 * LINE_INDEX_EVERY) * lineBytes + READ_BUFFER_BYTES + 1024;
    expect(read).toBeLessThan(bound);
    expect(tail).toBeLessThan(bound + (LINE_INDEX_EVERY * lineBytes + READ_BUFFER_BYTES));
    expect(past).toBeLessThan(LINE_INDEX_EVERY * lineBytes + READ_BUFFER_BYTES + 1024);
    // Without an index (a log captured before indexes) it scans, with the same answer.
    const scanned = await bytesReadBy(async () => {
      expect(await readLogFilePage(legacy, null, 1000)).toEqual(reference(bytes, null, 1000));
    });
    expect(scanned).toBeGreaterThanOrEqual(bytes.length);
  });
});

describe('the capture keeps the index beside each log file', () => {
  it("indexes stdout, stderr and both as it writes them, and pages of them read as the files' whole", async () => {
    const logDir = path.join(dir, 'capture');
    const run = { tenantId: 'tenant-a', trackId: '01JTESTTRACK' };
    const capture = new LogCapture(fakeRedis(), { logDir, logObjects: null }, run);
    await capture.reset();
    const euro = Buffer.from('€');
    for (let i = 0; i < 450; i++) {
      // A character cut across two writes, CRLF, and stderr between.
      capture.write('stdout', Buffer.concat([Buffer.from(`out ${i} `), euro.subarray(0, 1)]));
      capture.write('stdout', Buffer.concat([euro.subarray(1), Buffer.from('\r\n')]));
      if (i % 4 === 0) capture.write('stderr', Buffer.from(`err ${i}\n`));
    }
    capture.write('stdout', Buffer.from('no final newline'));
    await capture.close();

    for (const stream of ['stdout', 'stderr', 'both'] as const) {
      const file = logFilePath(logDir, run.tenantId, run.trackId, stream);
      expect(capture.files[stream]).toBe(file);
      const bytes = fs.readFileSync(file);
      const total = lineCount(bytes);
      const index = fs.statSync(logIndexPath(file)).size;
      expect(index).toBe(
        8 + 8 * Math.floor(Buffer.from(bytes).filter((b) => b === 10).length / LINE_INDEX_EVERY),
      );
      for (const [since, limit] of [
        [null, 1000],
        [null, 7],
        [0, 1000],
        [99, 3],
        [100, 100],
        [total - 1, 10],
        [total, 10],
        [total + 50, 10],
      ] as const)
        expect(await readLogFilePage(file, since, limit)).toEqual(reference(bytes, since, limit));
    }
    const stdout = await readLogFilePage(capture.files.stdout, 0, 2);
    expect(stdout!.lines).toEqual(['out 0 €\r', 'out 1 €\r']);
    expect((await readLogFilePage(capture.files.stdout, null, 1))!.lines).toEqual([
      'no final newline',
    ]);
  });
});

/** `line` is `whole`, or what a prefix of its bytes decodes to. */
function isCutOf(line: string, whole: string): boolean {
  const bytes = Buffer.from(whole);
  for (let n = bytes.length; n >= 0; n--)
    if (bytes.subarray(0, n).toString('utf8') === line) return true;
  return false;
}

/** Bytes read through file handles while `fn` runs. */
async function bytesReadBy(fn: () => Promise<void>): Promise<number> {
  const probe = await fsp.open(__filename, 'r');
  const proto = Object.getPrototypeOf(probe) as {
    read: (...args: unknown[]) => Promise<{ bytesRead: number }>;
  };
  await probe.close();
  const original = proto.read;
  let total = 0;
  const spy = jest.spyOn(proto, 'read').mockImplementation(async function (this: unknown, ...args) {
    const result = await original.apply(this, args);
    total += result.bytesRead;
    return result;
  });
  try {
    await fn();
  } finally {
    spy.mockRestore();
  }
  return total;
}

/** The Redis calls the capture makes, answered and forgotten (the cache is not under test). */
function fakeRedis(): Redis {
  const pipeline = {
    rpush: () => pipeline,
    expire: () => pipeline,
    exec: () => Promise.resolve([]),
  };
  return { del: () => Promise.resolve(0), pipeline: () => pipeline } as unknown as Redis;
}
