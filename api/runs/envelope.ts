import type { ErrorEnvelope } from '../http/app';

/**
 * The runs service's envelope: `{detail: "<code or message>"}`. Business errors carry their
 * spec code (e.g. `daily_quota_exceeded`) as the message; validation errors joi's message.
 */
export const runsEnvelope: ErrorEnvelope = (error) => ({ detail: error.message });
