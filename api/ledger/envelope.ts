import { RequestValidationError, type AppError } from '../platform/errors';
import type { ErrorEnvelope } from '../platform/http/app';

/** The ledger's envelope: `{error: {code, message, details?}}` on every layer. */
export const ledgerEnvelope: ErrorEnvelope = (error: AppError) => {
  if (error instanceof RequestValidationError) {
    const details = error.issues.map((i) => ({
      field: i.path.join('.'),
      location: i.location,
      message: i.message,
      type: i.type,
    }));
    return {
      status: 422,
      body: { error: { code: 'INVALID_REQUEST', message: error.message, details } },
    };
  }
  if (error.code === 'MALFORMED_JSON' || error.code === 'UNSUPPORTED_MEDIA_TYPE') {
    return { status: 422, body: { error: { code: 'INVALID_REQUEST', message: error.message } } };
  }
  const body: { code: string; message: string; details?: unknown } = {
    code: error.code,
    message: error.message,
  };
  if (error.details !== undefined) body.details = error.details;
  return { status: error.status, body: { error: body } };
};
