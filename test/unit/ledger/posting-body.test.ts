import { isDomainError } from '../../../platform/errors';
import { TRANSACTION_CREATE } from '../../../api/ledger/routes/transactions';
import {
  parsedTransactionOf,
  parseTransaction,
  type ValidatedTransaction,
} from '../../../services/ledger/transactions';

/**
 * The posting route reads a body two ways: the one-statement path by hand (parseTransaction, no
 * joi walk), the general path with joi (TRANSACTION_CREATE, which the document is generated
 * from). A body the first refuses goes on to the second, so the two must accept the same bodies
 * with the same value and refuse the rest with the same code and message.
 */
const A = '01a210e5-82ca-748d-a366-8baee0b2f5bf';
const B = '01a210e5-82db-734a-9cf0-dfeed5fc8f9e';
const legs = (amount: unknown = '1.00') => [
  { account_id: A, direction: 'debit', amount },
  { account_id: B, direction: 'credit', amount },
];
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

function bodies(now: number): unknown[] {
  const long = (n: number) => 'a'.repeat(n);
  return [
    {},
    { entries: legs() },
    { entries: 'x' },
    { entries: [] },
    { entries: [legs()[0]] },
    { entries: Array.from({ length: 100 }, () => legs()[0]) },
    { entries: Array.from({ length: 101 }, () => 5) },
    { foo: 1, bar: 2, entries: 'x' },
    { pending: 'yes', expires_at: 'x' },
    { pending: true, entries: legs() },
    { pending: true, expires_at: 'x', entries: legs() },
    { pending: true, expires_at: '2020-01-01T00:00:00Z', entries: legs() },
    { pending: true, expires_at: iso(now + 400 * 24 * HOUR), entries: legs() },
    { pending: true, expires_at: iso(now + HOUR), entries: legs() },
    { pending: true, expires_at: '2026-01-01T00:00:00', entries: legs() },
    { pending: true, expires_at: null, entries: legs() },
    { pending: false, expires_at: iso(now + HOUR), entries: legs() },
    { pending: false, entries: legs() },
    { expires_at: null, entries: legs() },
    { effective_at: 'x', description: 5 },
    { effective_at: null, entries: legs() },
    { effective_at: '2020-01-01T00:00:00+01:00', entries: legs() },
    { effective_at: '2020-01-01T00:00+0100', entries: legs() },
    { description: 5, entries: legs() },
    { description: long(1024), external_id: long(255), entries: legs() },
    { description: long(1025), entries: legs() },
    { description: '😀'.repeat(1024), entries: legs() },
    { description: null, external_id: null, metadata: { a: [1, { b: null }] }, entries: legs() },
    { description: '', external_id: '', entries: legs() },
    { external_id: 5, entries: legs() },
    { external_id: long(256), entries: legs() },
    { metadata: 5, entries: legs() },
    { metadata: null, entries: legs() },
    { metadata: [], entries: legs() },
    { metadata: { x: long(16 * 1024 - 8) }, entries: legs() },
    { metadata: { x: long(16 * 1024 - 7) }, entries: legs() },
    { description: 5, external_id: 5, metadata: 5, entries: 5 },
    { entries: [5, legs()[1]] },
    { entries: [[], legs()[1]] },
    { entries: [null, null] },
    { entries: [{}, {}] },
    { entries: [{ ...legs()[0], x: 1, y: 2 }, legs()[1]] },
    { entries: [{ ...legs()[0], account_id: 'x' }, legs()[1]] },
    { entries: [{ ...legs()[0], account_id: A.toUpperCase() }, legs()[1]] },
    { entries: [{ ...legs()[0], direction: 'up' }, legs()[1]] },
    { entries: [{ ...legs()[0], amount: 1 }, legs()[1]] },
    { entries: [legs()[0], { ...legs()[1], amount: 5 }] },
    {
      entries: [
        { account_id: 'x', direction: 'up', amount: 1 },
        { ...legs()[1], amount: 5 },
      ],
    },
    { entries: legs('') },
    { entries: legs('1.001') },
    { entries: legs(), pending: 'x', foo: 1 },
  ];
}

type Outcome =
  { accepted: unknown } | { refused: { code: string; message: string; details: unknown } };

function byHand(body: Record<string, unknown>, now: number): Outcome {
  try {
    return { accepted: parseTransaction(body, now) };
  } catch (error) {
    if (!isDomainError(error)) throw error;
    return { refused: { code: error.code, message: error.message, details: error.details } };
  }
}

function byJoi(body: unknown): Outcome {
  const result: { error?: unknown; value: unknown } = TRANSACTION_CREATE.validate(body, {
    abortEarly: false,
  });
  if (!result.error) return { accepted: parsedTransactionOf(result.value as ValidatedTransaction) };
  if (!isDomainError(result.error)) throw result.error as Error;
  const { code, message, details } = result.error;
  return { refused: { code, message, details } };
}

describe('the posting body, read by hand (one-statement path) and by joi (general path)', () => {
  it('when the same body is read both ways, then both accept it with the same value or refuse it with the same code, message and details', () => {
    const now = Date.now();
    for (const body of bodies(now)) {
      expect([body, byJoi(body)]).toEqual([body, byHand(body as Record<string, unknown>, now)]);
    }
  });
});
