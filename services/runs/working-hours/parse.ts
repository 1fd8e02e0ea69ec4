/**
 * Parser for the TaskJuggler (TJP) subset accepted in `working_hours_tjp`:
 *
 * ```
 * # comment            // comment
 * timezone "Europe/Berlin"
 * shift office "Office hours" {
 *   workinghours mon - fri 9:00 - 12:00, 13:00 - 18:00
 *   workinghours sat - mon off
 * }
 * ```
 *
 * - `workinghours <days> <times>`: `<days>` is a comma-separated list of weekdays
 *   (`sun mon tue wed thu fri sat`) or inclusive ranges `a - b`, which wrap around the week
 *   (`sat - mon` is sat, sun, mon); `<times>` is `off` or a comma-separated list of
 *   `HH:MM - HH:MM` intervals (`H:MM` allowed; `24:00` allowed as an end). A list may continue on
 *   the next line after a trailing comma.
 * - Lines apply in order and each replaces the hours of the days it names. Days no line names keep
 *   TaskJuggler's default (mon–fri 9:00–12:00, 13:00–18:00; sat, sun off): in TaskJuggler,
 *   `workinghours` modifies the default calendar rather than starting from an empty week.
 * - `timezone "<IANA zone>"`, spelled as the tz database spells it and kept as written
 *   (platform/time-zone.ts; default UTC; a later line wins).
 * - At most one `shift [<id>] ["<name>"] [{ … }]` block, not nested; statements before, inside
 *   and after it all apply in textual order.
 * - Keywords, weekdays and `off` are matched case-insensitively. `#` and `//` start comments
 *   outside strings.
 */
import { isTimeZone, tzDatabaseSpellingOf } from '../../../platform/time-zone';
import {
  DEFAULT_WORKING_DAYS,
  WEEKDAYS,
  WorkingHoursSyntaxError,
  type MinuteInterval,
  type Weekday,
  type WorkingHours,
} from './types';

/** Longest accepted definition, in UTF-8 bytes (8 KiB). */
export const WORKING_HOURS_MAX_BYTES = 8192;
/** Most lines accepted in a definition (a trailing newline does not start another line). */
export const WORKING_HOURS_MAX_LINES = 100;

type TokenKind = 'word' | 'time' | 'string' | 'dash' | 'comma' | 'lbrace' | 'rbrace';

interface Token {
  readonly kind: TokenKind;
  /** Source text (for strings: the unquoted, unescaped value). */
  readonly text: string;
  readonly line: number;
  readonly column: number;
}

function fail(problem: string, at: { line: number; column: number }): never {
  throw new WorkingHoursSyntaxError(problem, at.line, at.column);
}

function utf8Length(s: string): number {
  let bytes = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

function checkBounds(text: string): void {
  if (text.trim() === '') throw new WorkingHoursSyntaxError('the definition is empty', 1);
  const lines = text.split(/\r\n|\r|\n/);
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  if (lines.length > WORKING_HOURS_MAX_LINES) {
    throw new WorkingHoursSyntaxError(
      `too many lines (${lines.length}); at most ${WORKING_HOURS_MAX_LINES} are allowed`,
      WORKING_HOURS_MAX_LINES + 1,
    );
  }
  const total = utf8Length(text);
  if (total > WORKING_HOURS_MAX_BYTES) {
    // Name the line on which the limit is crossed (line breaks count as one byte each).
    let seen = 0;
    let line = lines.length;
    for (let i = 0; i < lines.length; i++) {
      seen += utf8Length(lines[i] ?? '') + 1;
      if (seen > WORKING_HOURS_MAX_BYTES) {
        line = i + 1;
        break;
      }
    }
    throw new WorkingHoursSyntaxError(
      `the definition is too long (${total} bytes); at most ${WORKING_HOURS_MAX_BYTES} bytes are allowed`,
      line,
    );
  }
}

const isLetter = (c: string): boolean => /[A-Za-z_]/.test(c);
const isWordChar = (c: string): boolean => /[A-Za-z0-9_]/.test(c);
const isDigit = (c: string): boolean => c >= '0' && c <= '9';

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  let line = 1;
  let column = 1;
  const advance = (n: number): void => {
    i += n;
    column += n;
  };
  const skipToEndOfLine = (): void => {
    while (i < text.length && text[i] !== '\n' && text[i] !== '\r') advance(1);
  };

  while (i < text.length) {
    const c = text[i] as string;
    const start = { line, column };
    if (c === '\r' || c === '\n') {
      i += c === '\r' && text[i + 1] === '\n' ? 2 : 1;
      line++;
      column = 1;
    } else if (c === ' ' || c === '\t' || c === '\f' || c === '\v') {
      advance(1);
    } else if (c === '#' || (c === '/' && text[i + 1] === '/')) {
      skipToEndOfLine();
    } else if (c === '"' || c === "'") {
      advance(1);
      let value = '';
      for (;;) {
        const d = text[i];
        if (d === undefined || d === '\n' || d === '\r') {
          fail('unterminated string (a string must end on the line it starts)', start);
        } else if (d === c) {
          advance(1);
          break;
        } else if (d === '\\' && text[i + 1] !== undefined && !/[\r\n]/.test(text[i + 1] ?? '')) {
          value += text[i + 1];
          advance(2);
        } else {
          value += d;
          advance(1);
        }
      }
      tokens.push({ kind: 'string', text: value, ...start });
    } else if (isLetter(c)) {
      let j = i + 1;
      while (j < text.length && isWordChar(text[j] as string)) j++;
      tokens.push({ kind: 'word', text: text.slice(i, j), ...start });
      advance(j - i);
    } else if (isDigit(c)) {
      let j = i + 1;
      while (j < text.length && (isDigit(text[j] as string) || text[j] === ':')) j++;
      tokens.push({ kind: 'time', text: text.slice(i, j), ...start });
      advance(j - i);
    } else if (c === '-') {
      tokens.push({ kind: 'dash', text: c, ...start });
      advance(1);
    } else if (c === ',') {
      tokens.push({ kind: 'comma', text: c, ...start });
      advance(1);
    } else if (c === '{') {
      tokens.push({ kind: 'lbrace', text: c, ...start });
      advance(1);
    } else if (c === '}') {
      tokens.push({ kind: 'rbrace', text: c, ...start });
      advance(1);
    } else {
      fail(`unexpected character ${JSON.stringify(c)}`, start);
    }
  }
  return tokens;
}

const describe = (t: Token | undefined): string => {
  if (t === undefined) return 'end of text';
  if (t.kind === 'string') return JSON.stringify(t.text);
  return `'${t.text}'`;
};

const formatMinute = (m: number): string =>
  `${Math.floor(m / 60)}:${String(m % 60).padStart(2, '0')}`;

const KEYWORDS = new Set(['workinghours', 'timezone', 'shift']);

interface PositionedInterval {
  readonly start: number;
  readonly end: number;
  readonly at: Token;
}

class Parser {
  private pos = 0;
  private readonly days: Record<Weekday, readonly MinuteInterval[]> = { ...DEFAULT_WORKING_DAYS };
  private timezone = 'UTC';
  private shift: { id: string | null; name: string | null } | null = null;

  constructor(
    private readonly tokens: readonly Token[],
    private readonly lastLine: number,
    private readonly stored: boolean,
  ) {}

  parse(): WorkingHours {
    if (this.tokens.length === 0) {
      throw new WorkingHoursSyntaxError('the definition has no statements, only comments', 1);
    }
    while (this.peek() !== undefined) this.statement(false);
    const days = {} as Record<Weekday, readonly MinuteInterval[]>;
    for (const day of WEEKDAYS) days[day] = this.days[day].map(([s, e]) => [s, e] as const);
    return { version: 1, timezone: this.timezone, days, shift: this.shift };
  }

  private peek(offset = 0): Token | undefined {
    return this.tokens[this.pos + offset];
  }

  private next(): Token | undefined {
    const t = this.tokens[this.pos];
    if (t !== undefined) this.pos++;
    return t;
  }

  /** Where to report a token, or a missing one (just after the last token). */
  private where(t: Token | undefined): { line: number; column: number } {
    if (t !== undefined) return t;
    const last = this.tokens[this.tokens.length - 1];
    return last !== undefined
      ? { line: last.line, column: last.column + last.text.length }
      : { line: this.lastLine, column: 1 };
  }

  private statement(inShift: boolean): void {
    const t = this.next() as Token;
    if (t.kind === 'rbrace') {
      fail("unbalanced braces: '}' without a matching '{'", t);
    }
    if (t.kind !== 'word') {
      fail(
        `expected a keyword (workinghours, timezone or shift), found ${describe(t)}`,
        this.where(t),
      );
    }
    switch (t.text.toLowerCase()) {
      case 'workinghours':
        this.workinghours();
        return;
      case 'timezone':
        this.timezoneStatement();
        return;
      case 'shift':
        this.shiftBlock(t, inShift);
        return;
      default:
        fail(
          `unknown keyword '${t.text}' (expected workinghours, timezone or shift)`,
          this.where(t),
        );
    }
  }

  private weekday(): number {
    const t = this.next();
    const index =
      t?.kind === 'word' ? (WEEKDAYS as readonly string[]).indexOf(t.text.toLowerCase()) : -1;
    if (index < 0) {
      fail(
        `bad weekday ${describe(t)} (expected one of sun, mon, tue, wed, thu, fri, sat)`,
        this.where(t),
      );
    }
    return index;
  }

  private dayList(): Set<Weekday> {
    const days = new Set<Weekday>();
    for (;;) {
      const first = this.weekday();
      let last = first;
      if (this.peek()?.kind === 'dash') {
        this.next();
        last = this.weekday();
      }
      // Inclusive, wrapping around the week like TaskJuggler: `sat - mon` is sat, sun, mon.
      for (let d = first; ; d = (d + 1) % 7) {
        days.add(WEEKDAYS[d] as Weekday);
        if (d === last) break;
      }
      if (this.peek()?.kind !== 'comma') return days;
      this.next();
    }
  }

  private time(role: 'start' | 'end'): { minute: number; at: Token } {
    const t = this.next();
    if (t?.kind !== 'time') {
      fail(`expected the ${role} time of an interval (HH:MM), found ${describe(t)}`, this.where(t));
    }
    const token = t;
    const m = /^(\d{1,2}):(\d{2})$/.exec(token.text);
    if (m === null) fail(`bad time '${token.text}' (expected HH:MM)`, token);
    const hour = Number(m[1]);
    const minute = Number(m[2]);
    if (hour > 24) fail(`bad time '${token.text}': the hour must be 0 to 24`, token);
    if (minute >= 60) fail(`bad time '${token.text}': the minutes must be 00 to 59`, token);
    if (hour === 24 && minute !== 0) {
      fail(`bad time '${token.text}': with hour 24 only 24:00 is allowed`, token);
    }
    return { minute: hour * 60 + minute, at: token };
  }

  private intervalList(): MinuteInterval[] {
    const first = this.peek();
    if (first?.kind === 'word' && first.text.toLowerCase() === 'off') {
      this.next();
      return [];
    }
    const parsed: PositionedInterval[] = [];
    for (;;) {
      const start = this.time('start');
      const dash = this.next();
      if (dash?.kind !== 'dash') {
        fail(
          `expected '-' between the times of an interval, found ${describe(dash)}`,
          this.where(dash),
        );
      }
      const end = this.time('end');
      if (end.minute <= start.minute) {
        fail(`interval ${start.at.text} - ${end.at.text} does not end after it starts`, start.at);
      }
      parsed.push({ start: start.minute, end: end.minute, at: start.at });
      if (this.peek()?.kind !== 'comma') break;
      this.next();
    }
    const sorted = [...parsed].sort((a, b) => a.start - b.start);
    const merged: [number, number][] = [];
    for (let i = 0; i < sorted.length; i++) {
      const cur = sorted[i] as PositionedInterval;
      const prev = sorted[i - 1];
      if (prev !== undefined && cur.start < prev.end) {
        const later = parsed.indexOf(cur) > parsed.indexOf(prev) ? cur : prev;
        fail(
          `intervals ${formatMinute(prev.start)} - ${formatMinute(prev.end)} and ` +
            `${formatMinute(cur.start)} - ${formatMinute(cur.end)} overlap`,
          later.at,
        );
      }
      const last = merged[merged.length - 1];
      if (last !== undefined && last[1] === cur.start) last[1] = cur.end;
      else merged.push([cur.start, cur.end]);
    }
    return merged;
  }

  private workinghours(): void {
    const days = this.dayList();
    const intervals = this.intervalList();
    for (const day of days) this.days[day] = intervals;
  }

  private timezoneStatement(): void {
    const t = this.next();
    if (t?.kind !== 'string') {
      fail(
        `timezone needs a quoted zone name such as "Europe/Berlin", found ${describe(t)}`,
        this.where(t),
      );
    }
    // A definition stored before zones were judged by their exact spelling may name one in
    // another case (`europe/berlin`): it is read with the tz database's spelling, never refused.
    const zone = isTimeZone(t.text) ? t.text : this.stored ? tzDatabaseSpellingOf(t.text) : null;
    if (zone === null) fail(`unknown timezone ${describe(t)}`, t);
    this.timezone = zone;
  }

  private shiftBlock(keyword: Token, inShift: boolean): void {
    if (inShift) fail('nested shift blocks are not supported', keyword);
    if (this.shift !== null) fail('only one shift block is supported', keyword);
    let id: string | null = null;
    let name: string | null = null;
    const idToken = this.peek();
    // A keyword right after `shift` starts the next statement (`shift` alone has no id).
    if (idToken?.kind === 'word' && !KEYWORDS.has(idToken.text.toLowerCase())) {
      id = idToken.text;
      this.next();
    }
    if (this.peek()?.kind === 'string') name = (this.next() as Token).text;
    this.shift = { id, name };
    const open = this.peek();
    if (open?.kind !== 'lbrace') return;
    this.next();
    for (;;) {
      const t = this.peek();
      if (t === undefined) {
        fail(`unbalanced braces: the '{' of this shift block is never closed`, open);
      }
      if (t.kind === 'rbrace') {
        this.next();
        return;
      }
      this.statement(true);
    }
  }
}

/**
 * Parses a working-hours definition. Throws {@link WorkingHoursSyntaxError} (naming line and,
 * where known, column) for anything invalid, including text over
 * {@link WORKING_HOURS_MAX_BYTES} bytes or {@link WORKING_HOURS_MAX_LINES} lines.
 */
/**
 * `stored`: the definition is a tenant's stored one read again (at a submit, by an activity), not
 * one being set: a zone it names in another case than the tz database's is read in its spelling.
 */
export function parseWorkingHours(text: string, { stored = false } = {}): WorkingHours {
  if (typeof text !== 'string') {
    throw new WorkingHoursSyntaxError('the definition must be a string', 1);
  }
  checkBounds(text);
  const tokens = tokenize(text);
  return new Parser(tokens, text.split(/\r\n|\r|\n/).length, stored).parse();
}
