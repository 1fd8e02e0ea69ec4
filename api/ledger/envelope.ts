import { RequestValidationError, type DomainError } from '../../platform/errors';
import { LEDGER_ERRORS } from '../../services/ledger/errors';
import type { ErrorEnvelope } from '../http/app';
import { errorResponse } from '../http/error-response';

/** Codes the ledger's clients see as INVALID_REQUEST (the spec's code for an unreadable body). */
export const SHOWN_AS_INVALID_REQUEST = new Set(['MALFORMED_JSON', 'UNSUPPORTED_MEDIA_TYPE']);

/** The ledger's envelope: `{error: {code, message, details?}}` on every layer. */
export const ledgerBody: ErrorEnvelope = (error) => {
  if (error instanceof RequestValidationError) {
    const details = error.issues.map((i) => ({
      field: i.path.join('.'),
      location: i.location,
      message: i.message,
      type: i.type,
    }));
    return { error: { code: 'INVALID_REQUEST', message: error.message, details } };
  }
  if (SHOWN_AS_INVALID_REQUEST.has(error.code))
    return { error: { code: 'INVALID_REQUEST', message: error.message } };
  const body: { code: string; message: string; details?: unknown } = {
    code: error.code,
    message: error.message,
  };
  if (error.details !== undefined) body.details = error.details;
  return { error: body };
};

/** An error as the ledger answers it: status and body (the idempotency record keeps both). */
export function ledgerEnvelope(error: DomainError): { status: number; body: unknown } {
  const { status } = errorResponse(error, LEDGER_ERRORS);
  return { status, body: ledgerBody(error, status) };
}
