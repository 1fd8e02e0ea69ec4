import { RequestValidationError, type AppError } from '../platform/errors';
import type { ErrorEnvelope } from '../platform/http/app';

/** The quota service's envelope: 422 `{detail: [ValidationError]}`, else `{detail: "..."}`. */
export const quotaEnvelope: ErrorEnvelope = (error: AppError) => {
  if (error instanceof RequestValidationError) {
    const detail = error.issues.map((i) => ({
      loc: [i.location, ...i.path],
      msg: i.message,
      type: i.type,
    }));
    return { status: 422, body: { detail } };
  }
  return { status: error.status, body: { detail: error.message } };
};
