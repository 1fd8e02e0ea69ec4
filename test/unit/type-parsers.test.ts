import { postgresTimestampToIso, typeParsers } from '../../db/type-parsers';

describe('postgres type parsers', () => {
  const parser = (name: string) => typeParsers.find((p) => p.name === name)!.parse;

  it('keeps int8 and numeric exact, past 2^53', () => {
    expect(parser('int8')('9223372036854775807')).toBe('9223372036854775807');
    expect(parser('numeric')('123456789012345678901234.000000000001')).toBe(
      '123456789012345678901234.000000000001',
    );
  });

  it('turns timestamptz text in any offset into ISO-8601 UTC', () => {
    expect(postgresTimestampToIso('2026-11-21 20:01:02.123456+00')).toBe(
      '2026-11-21T20:01:02.123Z',
    );
    expect(postgresTimestampToIso('2026-11-21 20:01:02+05:30')).toBe('2026-11-21T14:31:02.000Z');
    expect(postgresTimestampToIso('2026-11-21 20:01:02.5-08')).toBe('2026-11-22T04:01:02.500Z');
  });

  it('parses timestamp without zone as UTC', () => {
    expect(parser('timestamp')('2026-01-02 03:04:05.006')).toBe('2026-01-02T03:04:05.006Z');
  });

  it('refuses a format it does not understand rather than guess', () => {
    expect(() => postgresTimestampToIso('yesterday')).toThrow(/unexpected timestamp/);
  });
});
