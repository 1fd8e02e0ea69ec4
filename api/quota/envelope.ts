import { RequestValidationError, type DomainError } from '../../platform/errors';
import type { ErrorEnvelope } from '../http/app';

/** FastAPI's ValidationError item. */
export interface ValidationErrorItem {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/**
 * The quota service's envelope: a 422 is `{detail: [ValidationError]}` (FastAPI's shape: a body
 * that is not JSON too, as FastAPI answers `json_invalid`); any other refusal is
 * `{detail: "<code>"}`, the platform's codes in lower case (`not_found`, `method_not_allowed`).
 */
export const quotaEnvelope: ErrorEnvelope = (error, status) => {
  if (error instanceof RequestValidationError) {
    const detail: ValidationErrorItem[] = error.issues.map((i) => ({
      loc: [i.location, ...i.path],
      msg: i.message,
      type: i.type,
    }));
    return { detail };
  }
  if (status === 422)
    return { detail: [{ loc: ['body'], msg: error.message, type: validationType(error) }] };
  return { detail: error.code.toLowerCase() };
};

function validationType(error: DomainError): string {
  return error.code === 'MALFORMED_JSON' ? 'json_invalid' : error.code.toLowerCase();
}
