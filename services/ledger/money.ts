import { ledgerError, type LedgerErrorCode } from './errors';

/** Largest number of decimal digits an amount may carry (numeric(38,0) in Postgres). */
export const AMOUNT_DIGITS_MAX = 38;
const DECIMAL = /^(-)?(\d+)(?:\.(\d+))?$/;

/**
 * "12.34" at scale 2 → 1234n. Fewer decimals than the scale are padded ("12.5" → 1250n);
 * more are refused with INVALID_AMOUNT_SCALE. Never goes through a JS number.
 */
export function decimalToMinor(
  text: string,
  scale: number,
  options: { allowNegative?: boolean; code?: LedgerErrorCode } = {},
): bigint {
  const code = options.code ?? 'INVALID_AMOUNT';
  const match = DECIMAL.exec(text);
  if (!match || (match[1] && !options.allowNegative)) {
    throw ledgerError(code, { message: `"${text}" is not a plain decimal string` });
  }
  const [, sign, whole = '', fraction = ''] = match;
  if (fraction.length > scale) {
    throw ledgerError(code === 'INVALID_AMOUNT' ? 'INVALID_AMOUNT_SCALE' : code, {
      message: `"${text}" has more than ${scale} decimals`,
    });
  }
  const digits = (whole + fraction.padEnd(scale, '0')).replace(/^0+(?=\d)/, '');
  if (digits.length > AMOUNT_DIGITS_MAX) {
    throw ledgerError(code, { message: `"${text}" has more than ${AMOUNT_DIGITS_MAX} digits` });
  }
  const minor = BigInt(digits);
  return sign ? -minor : minor;
}

/** 1234n at scale 2 → "12.34"; -5n at scale 2 → "-0.05"; scale 0 → "1234". */
export function minorToDecimal(minor: bigint | string, scale: number): string {
  const value = typeof minor === 'bigint' ? minor : BigInt(minor);
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(scale + 1, '0');
  const whole = digits.slice(0, digits.length - scale);
  const fraction = digits.slice(digits.length - scale);
  return `${negative ? '-' : ''}${whole}${scale > 0 ? `.${fraction}` : ''}`;
}

/**
 * A balance floor as given in a request: a decimal string at the asset's scale, an integer
 * (JSON number, minor units, safe range only), or null (unbounded). Omitted means 0.
 */
export function floorToMinor(value: unknown, scale: number): bigint | null {
  if (value === undefined) return 0n;
  if (value === null) return null;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) {
      throw ledgerError('INVALID_FLOOR', {
        message: 'balance_floor integer must be a safe integer of minor units',
      });
    }
    return BigInt(value);
  }
  if (typeof value === 'string')
    return decimalToMinor(value, scale, { allowNegative: true, code: 'INVALID_FLOOR' });
  throw ledgerError('INVALID_FLOOR', {
    message: 'balance_floor must be a decimal string, an integer or null',
  });
}
