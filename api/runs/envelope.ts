import { RequestValidationError, type AppError } from '../platform/errors';
import type { ErrorEnvelope } from '../platform/http/app';

/**
 * The runs service's envelope: `{detail: "<code or message>"}`. Business errors carry their
 * spec code (e.g. `daily_quota_exceeded`) as the message.
 */
export const runsEnvelope: ErrorEnvelope = (error: AppError) => {
  if (error instanceof RequestValidationError)
    return { status: 422, body: { detail: error.message } };
  return { status: error.status, body: { detail: error.message } };
};
