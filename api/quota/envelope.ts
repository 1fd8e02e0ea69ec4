import { RequestValidationError } from '../platform/errors';
import type { ErrorEnvelope } from '../platform/http/app';

/** The quota service's envelope: 422 `{detail: [ValidationError]}`, else `{detail: "..."}`. */
export const quotaEnvelope: ErrorEnvelope = (error) => {
  if (error instanceof RequestValidationError) {
    const detail = error.issues.map((i) => ({
      loc: [i.location, ...i.path],
      msg: i.message,
      type: i.type,
    }));
    return { detail };
  }
  return { detail: error.message };
};
