import { ApplicationFailure } from '@temporalio/activity';
import { isDomainError, isRetryable, type ErrorCatalogue } from '../../platform/errors';

/**
 * How an activity hands a service's refusal to its workflow: a refusal its catalogue calls final
 * becomes a non-retryable ApplicationFailure whose `type` is the code (a workflow branches on
 * it; retrying could not change the answer); a retryable one, and anything that is not a refusal,
 * is rethrown as it is, for the activity's retry policy.
 */
export function toActivityFailure(error: unknown, catalogue: ErrorCatalogue): unknown {
  if (!isDomainError(error) || isRetryable(error, catalogue)) return error;
  return ApplicationFailure.create({
    type: error.code,
    message: error.message,
    nonRetryable: true,
    details: error.details === undefined ? undefined : [error.details],
    cause: error.cause instanceof Error ? error.cause : undefined,
  });
}

/** Calls service or data logic from an activity, its refusals mapped by toActivityFailure. */
export async function callService<T>(
  catalogue: ErrorCatalogue,
  call: () => Promise<T>,
): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw toActivityFailure(error, catalogue);
  }
}
