import { isSafeNumber, parse, stringify } from 'lossless-json';

/**
 * JSON with integers of any size (lossless-json): a bigint is written as a plain JSON integer,
 * and an integer past 2^53 is read back as a bigint, so counters that outgrow a double keep
 * every unit on the wire and in storage.
 */
export function stringifyExact(value: unknown): string {
  // Most values hold no bigint: the native writer, many times faster, writes those the same, and
  // refuses a bigint with a TypeError.
  try {
    return JSON.stringify(value) ?? 'null';
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
  }
  return stringify(value) ?? 'null';
}

export function parseExact(text: string): unknown {
  return parse(text, null, (number: string) =>
    isSafeNumber(number)
      ? Number(number)
      : /^-?\d+$/.test(number)
        ? BigInt(number)
        : Number(number),
  );
}

/** An integer as a JSON number while a double holds it exactly, else as the bigint (written exact). */
export function exactInteger(value: bigint | string): number | bigint {
  const integer = BigInt(value);
  const safe =
    integer >= BigInt(Number.MIN_SAFE_INTEGER) && integer <= BigInt(Number.MAX_SAFE_INTEGER);
  return safe ? Number(integer) : integer;
}

/** exactInteger of an int8 or numeric column that may be null. */
export const exactIntegerOrNull = (value: string | null) =>
  value === null ? null : exactInteger(value);
