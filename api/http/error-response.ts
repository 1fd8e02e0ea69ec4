import {
  MethodNotAllowedError,
  type DomainError,
  type ErrorCatalogue,
} from '../../platform/errors';

/**
 * The one place a domain error becomes HTTP: its status from the service's catalogue (500 for a
 * code the catalogue lacks: a programmer's error), Retry-After from its retryAfterSeconds, Allow
 * for a method the path does not serve, the bearer challenge with a 401 (or the error's own, such
 * as the scope a 403 lacks).
 */
export function errorResponse(
  error: DomainError,
  catalogue: ErrorCatalogue,
): { status: number; headers: Record<string, string> } {
  const headers: Record<string, string> = {};
  if (error.retryAfterSeconds !== undefined)
    headers['Retry-After'] = String(error.retryAfterSeconds);
  if (error instanceof MethodNotAllowedError) headers.Allow = error.allowed;
  const status = catalogue[error.code]?.status ?? 500;
  // Every service authenticates with bearer tokens (RFC 6750 asks for the challenge on a 401).
  if (status === 401) headers['WWW-Authenticate'] = 'Bearer';
  if (error.challenge !== undefined) headers['WWW-Authenticate'] = error.challenge;
  return { status, headers };
}
