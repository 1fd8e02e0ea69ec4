/**
 * The answers of the quota service as a service of the platform takes them (metering): a body,
 * a refusal with its code, or the service not answering (QuotaUnavailable), which a caller may
 * turn into its own 503 or record for later.
 */

/** The quota service did not answer (after the client's tries), or answered 429 or 5xx. */
export class QuotaUnavailable extends Error {
  constructor(what: string, cause: unknown) {
    super(`quota service unavailable (${what}): ${describe(cause)}`, { cause });
    this.name = 'QuotaUnavailable';
  }
}

/** What an openapi-fetch call gives back. */
export interface QuotaReply<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** A call that did not get through is QuotaUnavailable; any answer is returned as it came. */
export async function quotaCall<T>(
  what: string,
  send: () => Promise<QuotaReply<T>>,
): Promise<QuotaReply<T>> {
  try {
    return await send();
  } catch (error) {
    throw new QuotaUnavailable(what, error);
  }
}

/** The answer's body; statuses in `tolerated` answer null (nothing to do). */
export async function quotaAnswer<T>(
  what: string,
  send: () => Promise<QuotaReply<T>>,
  tolerated: number[] = [],
): Promise<T> {
  const { data, error, response } = await quotaCall(what, send);
  if (data !== undefined && response.ok) return data;
  if (tolerated.includes(response.status)) return null as T;
  throw quotaRefusal(what, response, error);
}

/** 429 and 5xx (past the client's tries) are the service not answering; the rest a refusal. */
export function quotaRefusal(what: string, response: Response, error: unknown): Error {
  if (response.status === 429 || response.status >= 500)
    return new QuotaUnavailable(what, `${response.status} ${describe(error)}`);
  return new Error(`quota service refused ${what}: ${response.status} ${describe(error)}`);
}

/** A refusal's code (`{detail: "<code>"}`), or '' for any other body. */
export function refusalCode(error: unknown): string {
  const detail = (error as { detail?: unknown } | undefined)?.detail;
  return typeof detail === 'string' ? detail : '';
}

function describe(value: unknown): string {
  if (value instanceof Error) return value.message;
  return typeof value === 'string' ? value : JSON.stringify(value);
}
