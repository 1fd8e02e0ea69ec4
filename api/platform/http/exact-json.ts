import { isSafeNumber, parse, stringify } from 'lossless-json';

/**
 * JSON with integers of any size (lossless-json): a bigint is written as a plain JSON integer,
 * and an integer past 2^53 is read back as a bigint, so counters that outgrow a double keep
 * every unit on the wire and in storage.
 */
export function stringifyExact(value: unknown): string {
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
