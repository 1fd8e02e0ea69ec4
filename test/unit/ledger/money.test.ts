/* eslint-disable @typescript-eslint/no-unsafe-argument -- JSON replies in tests */
import { decimalToMinor, floorToMinor, minorToDecimal } from '../../../services/ledger/money';
import { parseInstantWithOffset } from '../../../platform/instant';
import { availableBalance } from '../../../services/ledger/posting';

describe('money as integer minor units', () => {
  it('when a decimal string is at or under the scale, then it becomes exact minor units', () => {
    expect(decimalToMinor('12.34', 2)).toBe(1234n);
    expect(decimalToMinor('12.5', 2)).toBe(1250n);
    expect(decimalToMinor('7', 0)).toBe(7n);
    expect(decimalToMinor('0.000000000001', 12)).toBe(1n);
    expect(decimalToMinor('99999999999999999999999999999999999999', 0)).toBe(10n ** 38n - 1n);
  });

  it('when an amount has more decimals than the scale, then INVALID_AMOUNT_SCALE; when it is not a plain decimal, then INVALID_AMOUNT', () => {
    expect(() => decimalToMinor('1.234', 2)).toThrow(
      expect.objectContaining({ code: 'INVALID_AMOUNT_SCALE' }),
    );
    for (const bad of ['1e3', '-1', '+1', ' 1', '1.', '.5', '0x10', '', '1,5']) {
      expect(() => decimalToMinor(bad, 2)).toThrow(
        expect.objectContaining({ code: 'INVALID_AMOUNT' }),
      );
    }
    expect(() => decimalToMinor('1' + '0'.repeat(38), 0)).toThrow(
      expect.objectContaining({ code: 'INVALID_AMOUNT' }),
    );
  });

  it('formats minor units back at the scale, past 2^53 without loss', () => {
    expect(minorToDecimal(1234n, 2)).toBe('12.34');
    expect(minorToDecimal(-5n, 2)).toBe('-0.05');
    expect(minorToDecimal('9007199254740993', 0)).toBe('9007199254740993');
    expect(minorToDecimal(0n, 12)).toBe('0.000000000000');
  });

  it('reads a floor as omitted (0), null (unbounded), a decimal string or a safe integer', () => {
    expect(floorToMinor(undefined, 2)).toBe(0n);
    expect(floorToMinor(null, 2)).toBeNull();
    expect(floorToMinor('-10.00', 2)).toBe(-1000n);
    expect(floorToMinor(500, 2)).toBe(500n);
    for (const bad of [1.5, true, {}, '1.001', 2 ** 60]) {
      expect(() => floorToMinor(bad, 2)).toThrow(
        expect.objectContaining({ code: 'INVALID_FLOOR' }),
      );
    }
  });
});

describe('instants with an explicit offset (rule 5)', () => {
  it('accepts Z and ±hh:mm, refuses a missing offset and the decoded-plus space', () => {
    expect(parseInstantWithOffset('2026-01-02T03:04:05Z')).toBe(Date.UTC(2026, 0, 2, 3, 4, 5));
    expect(parseInstantWithOffset('2026-01-02T05:04:05.123+02:00')).toBe(
      Date.UTC(2026, 0, 2, 3, 4, 5, 123),
    );
    expect(parseInstantWithOffset('2026-01-02T03:04:05.123456789Z')).toBe(
      Date.UTC(2026, 0, 2, 3, 4, 5, 123),
    );
    expect(parseInstantWithOffset('2026-01-02T03:04:05')).toBeNull();
    expect(parseInstantWithOffset('2026-01-02T05:04:05 02:00')).toBeNull();
    expect(parseInstantWithOffset('2026-13-02T03:04:05Z')).toBeNull();
    expect(parseInstantWithOffset(12345)).toBeNull();
  });
});

describe('available balance', () => {
  it('rule 3: for a hold only the contra side is held; incoming pending funds do not count', () => {
    const c = { postedDebits: 0n, postedCredits: 100n, pendingDebits: 30n, pendingCredits: 50n };
    expect(availableBalance('credit', c)).toBe(70n);
    expect(availableBalance('debit', c)).toBe(-150n);
  });
});
