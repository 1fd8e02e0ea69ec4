/**
 * The one error type that service logic throws for an expected failure. It carries what every
 * service envelope needs; each service maps it to its own body shape in one place
 * (see `ErrorEnvelope` in http/app.ts).
 */
export interface AppErrorInit {
  status: number;
  code: string;
  message?: string;
  details?: unknown;
  headers?: Record<string, string>;
  cause?: unknown;
}

export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details?: unknown;
  readonly headers: Record<string, string>;

  constructor(init: AppErrorInit) {
    super(init.message ?? init.code, { cause: init.cause });
    this.name = 'AppError';
    this.status = init.status;
    this.code = init.code;
    this.details = init.details;
    this.headers = init.headers ?? {};
  }
}

/** One failed rule of request validation, independent of any envelope. */
export interface ValidationIssue {
  location: 'body' | 'query' | 'params' | 'headers';
  path: (string | number)[];
  message: string;
  type: string;
}

/** Request validation failed; each service envelope renders the issues its own way. */
export class RequestValidationError extends AppError {
  readonly issues: ValidationIssue[];

  constructor(issues: ValidationIssue[], init: Partial<AppErrorInit> = {}) {
    super({
      status: 422,
      code: 'INVALID_REQUEST',
      message: issues.map((i) => i.message).join('; '),
      ...init,
    });
    this.name = 'RequestValidationError';
    this.issues = issues;
  }
}

export function isAppError(error: unknown): error is AppError {
  return error instanceof AppError;
}
