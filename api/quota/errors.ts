import { errorFactory, PLATFORM_ERRORS, type ErrorCatalogue } from '../platform/errors';

/**
 * The quota service's error codes. Its probes raise only the platform's (no route, method not
 * allowed, a body it cannot read, a backend out of reach); its own join them when its core lands.
 */
export const QUOTA_ERRORS = {
  ...PLATFORM_ERRORS,
} as const satisfies ErrorCatalogue;

export type QuotaErrorCode = keyof typeof QUOTA_ERRORS;
export const quotaError = errorFactory<QuotaErrorCode>(QUOTA_ERRORS);
