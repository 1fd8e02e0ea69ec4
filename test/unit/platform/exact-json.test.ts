import fc from 'fast-check';
import { stringify } from 'lossless-json';
import { parseExact, stringifyExact } from '../../../platform/exact-json';

describe('stringifyExact', () => {
  it('writes a value without bigints as lossless-json does', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(stringifyExact(value)).toBe(stringify(value) ?? 'null');
      }),
    );
  });

  it('writes every bigint as its exact integer, wherever it is', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }), (rest, n) => {
        const text = stringifyExact({ rest, n, list: [n, { n }] });
        expect(text).toContain(`"n":${n}`);
        const { n: read, list } = parseExact(text) as { n: unknown; list: unknown };
        expect([read, list]).toEqual([exact(n), [exact(n), { n: exact(n) }]]);
      }),
    );
  });

  it('writes undefined as null (an answer is always JSON)', () => {
    expect(stringifyExact(undefined)).toBe('null');
  });
});

/** What parseExact reads back: a double while it is exact, else the bigint. */
const exact = (n: bigint) =>
  Number.isSafeInteger(Number(n)) && BigInt(Number(n)) === n ? Number(n) : n;
