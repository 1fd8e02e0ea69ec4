/**
 * Errors: service and data logic throw a DomainError named by a code of its service's catalogue,
 * with no HTTP in it; the edge (http/app.ts) looks the code up in the catalogue for its status,
 * and the service's envelope renders it. The catalogues are what the OpenAPI documents and the
 * agents' guides list.
 */

/** What a service promises about one of its error codes. */
export interface ErrorDefinition {
  status: number;
  /** The message when the thrower gives none. */
  message: string;
  /**
   * Whether the same request may succeed later. A refusal whose thrower says when
   * (retryAfterSeconds) is retryable whatever its code's default: a frozen account's
   * ACCOUNT_NOT_ACTIVE thaws, a closed one's does not.
   */
  retryable: boolean;
  /** One line for the documents (OpenAPI, /llms.txt) when the message does not say enough. */
  description?: string;
}

export type ErrorCatalogue<Code extends string = string> = Readonly<Record<Code, ErrorDefinition>>;

export interface DomainErrorInit {
  message?: string;
  details?: unknown;
  /** Seconds before a retry may succeed: the edge sends it as Retry-After. */
  retryAfterSeconds?: number;
  /** A bearer challenge the edge sends as WWW-Authenticate (RFC 6750: the scope a 403 lacks). */
  challenge?: string;
  cause?: unknown;
}

/** An expected failure, named by a code of its service's catalogue. */
export class DomainError<Code extends string = string> extends Error {
  readonly code: Code;
  readonly details?: unknown;
  readonly retryAfterSeconds?: number;
  readonly challenge?: string;

  constructor(code: Code, init: DomainErrorInit = {}) {
    super(init.message ?? code, { cause: init.cause });
    this.name = 'DomainError';
    this.code = code;
    this.details = init.details;
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.challenge = init.challenge;
  }
}

/**
 * Whether the same request may succeed later: its code's `retryable`, or a Retry-After from its
 * thrower. A code the catalogue lacks is a programmer's error (500 at the edge): retryable.
 */
export function isRetryable(error: DomainError, catalogue: ErrorCatalogue): boolean {
  if (error.retryAfterSeconds !== undefined) return true;
  return catalogue[error.code]?.retryable ?? true;
}

/** Whether a code (from the database, from a workflow) is one of a catalogue's. */
export function isCatalogueCode<Code extends string>(
  catalogue: ErrorCatalogue<Code>,
  code: string,
): code is Code {
  return Object.hasOwn(catalogue, code);
}

/** A typed factory per catalogue: codes outside it do not compile, messages default to it. */
export function errorFactory<Code extends string>(catalogue: ErrorCatalogue<Code>) {
  return (code: Code, init: DomainErrorInit = {}) =>
    new DomainError(code, { message: catalogue[code].message, ...init });
}

/** The codes the platform raises itself, for every service (each may override an entry). */
export const PLATFORM_ERRORS = {
  INTERNAL_ERROR: {
    status: 500,
    message: 'internal error',
    retryable: true,
    description: 'an unexpected failure; the message is constant, the log has the cause',
  },
  SERVICE_UNAVAILABLE: {
    status: 503,
    message: 'a backend is briefly unreachable; retry',
    retryable: true,
    description: 'Postgres or Redis out of reach (restarting, failing over); Retry-After',
  },
  NOT_FOUND: { status: 404, message: 'no route', retryable: false },
  METHOD_NOT_ALLOWED: {
    status: 405,
    message: 'method not allowed',
    retryable: false,
    description: 'the path does not serve this method; Allow names those it does',
  },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'request body too large', retryable: false },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    message: 'request body must be application/json',
    retryable: false,
  },
  MALFORMED_JSON: { status: 400, message: 'malformed JSON body', retryable: false },
  INVALID_JSON_DEPTH: { status: 422, message: 'JSON nested too deep', retryable: false },
  INVALID_REQUEST: {
    status: 422,
    message: 'invalid request',
    retryable: false,
    description: "the request failed validation; each service's envelope lists the issues",
  },
} as const satisfies ErrorCatalogue;
export type PlatformErrorCode = keyof typeof PLATFORM_ERRORS;
export const platformError = errorFactory<PlatformErrorCode>(PLATFORM_ERRORS);

/**
 * The platform's refusal of an operator route (metrics, diagnostics) to a caller outside loopback
 * and the private networks (http/private-network.ts). Each service files it under its own code:
 * the runs service's `forbidden`, the ledger's FORBIDDEN (which its roles answer too).
 */
export const PRIVATE_NETWORK_ONLY = {
  status: 403,
  message: 'forbidden',
  retryable: false,
  description: 'an operator route asked from outside loopback and the private networks',
} as const satisfies ErrorDefinition;

/** A method the path does not serve: the edge sends `Allow`. */
export class MethodNotAllowedError extends DomainError<'METHOD_NOT_ALLOWED'> {
  constructor(
    readonly allowed: string,
    message: string,
  ) {
    super('METHOD_NOT_ALLOWED', { message });
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
export class RequestValidationError extends DomainError<'INVALID_REQUEST'> {
  readonly issues: ValidationIssue[];

  constructor(issues: ValidationIssue[]) {
    super('INVALID_REQUEST', { message: issues.map((i) => i.message).join('; ') });
    this.name = 'RequestValidationError';
    this.issues = issues;
  }
}

export function isDomainError(error: unknown): error is DomainError {
  return error instanceof DomainError;
}
