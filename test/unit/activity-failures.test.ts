import { ApplicationFailure } from '@temporalio/activity';
import { callService, toActivityFailure } from '../../activities/shared/domain-failures';
import { LEDGER_ERRORS, ledgerError } from '../../services/ledger/errors';
import { DomainError } from '../../platform/errors';

/** An activity's answer to a service's refusal: final ones end it, retryable ones retry it. */
describe('toActivityFailure', () => {
  it('ends the activity on a final refusal: a non-retryable ApplicationFailure typed by the code', () => {
    const cause = new Error('from below');
    const failure = toActivityFailure(
      ledgerError('TRANSACTION_NOT_FOUND', { details: { id: 't' }, cause }),
      LEDGER_ERRORS,
    );
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({
      type: 'TRANSACTION_NOT_FOUND',
      message: LEDGER_ERRORS.TRANSACTION_NOT_FOUND.message,
      nonRetryable: true,
      details: [{ id: 't' }],
      cause,
    });
  });

  it('rethrows a retryable refusal as it is, and one its thrower gave a Retry-After', () => {
    const busy = ledgerError('LOCK_TIMEOUT', { retryAfterSeconds: 1 });
    const frozen = ledgerError('ACCOUNT_NOT_ACTIVE', { retryAfterSeconds: 5 });
    expect(toActivityFailure(busy, LEDGER_ERRORS)).toBe(busy);
    expect(toActivityFailure(frozen, LEDGER_ERRORS)).toBe(frozen);
  });

  it('rethrows what is not a refusal, and a code the catalogue lacks, as it is', () => {
    const crash = new Error('boom');
    const stranger = new DomainError('no_such_code');
    expect(toActivityFailure(crash, LEDGER_ERRORS)).toBe(crash);
    expect(toActivityFailure(stranger, LEDGER_ERRORS)).toBe(stranger);
  });
});

describe('callService', () => {
  it("passes a call's result through and maps its refusal", async () => {
    await expect(callService(LEDGER_ERRORS, () => Promise.resolve(7))).resolves.toBe(7);
    await expect(
      callService(LEDGER_ERRORS, () => Promise.reject(ledgerError('HOLD_EXPIRED'))),
    ).rejects.toMatchObject({ type: 'HOLD_EXPIRED', nonRetryable: true });
  });
});
