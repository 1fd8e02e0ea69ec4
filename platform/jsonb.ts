/**
 * A JSON value as Postgres jsonb can store it: a NUL or a lone surrogate inside a string (which
 * jsonb refuses, failing the whole write) is kept as its escape text (`\u0000` as six
 * characters). Text that already reads `\u0000` (an escaped backslash) is left as it is.
 */
export function jsonbSafe<T>(value: T): T {
  const json = JSON.stringify(value).replace(
    /(?<!\\)((?:\\\\)*)\\u(0000|d[89a-f][0-9a-f]{2})/gi,
    '$1\\\\u$2',
  );
  return JSON.parse(json) as T;
}
