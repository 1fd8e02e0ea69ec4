import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../../support/stack-env';

/** How long a restart of one part of the stack may take before the test gives up. */
export const RESTART_TIMEOUT_MS = 120_000;
/** A retried request waits Retry-After, but never longer than this (the outage is short). */
const RETRY_WAIT_MAX_MS = 1_000;
/** Wait between retries of a request that got no answer at all (connection refused or reset). */
const NO_ANSWER_WAIT_MS = 200;

/**
 * Restarts one part of the local stack with the repo's own script, as an operator would:
 * `immediate` stops Postgres without a checkpoint, like a crash, and kills Temporal's server.
 */
export async function restartStackPart(
  part: 'postgres' | 'redis' | 'temporal',
  options: { immediate?: boolean } = {},
): Promise<void> {
  await promisify(execFile)(
    path.join(REPO_ROOT, 'scripts', 'stack'),
    ['restart', part, ...(options.immediate ? ['--immediate'] : [])],
    { timeout: RESTART_TIMEOUT_MS },
  );
}

/** Every answer a fault test's clients saw, by status ('no answer' for a failed connection). */
export class Answers {
  readonly counts = new Map<number | 'no answer', number>();

  add(status: number | 'no answer'): void {
    this.counts.set(status, (this.counts.get(status) ?? 0) + 1);
  }

  get total(): number {
    return [...this.counts.values()].reduce((a, b) => a + b, 0);
  }

  /** Statuses no client should ever see: a server error other than 503. */
  serverErrors(): number[] {
    return [...this.counts.keys()].filter(
      (s): s is number => typeof s === 'number' && s >= 500 && s !== 503,
    );
  }

  toString(): string {
    return [...this.counts.entries()].map(([s, n]) => `${s}: ${n}`).join(', ');
  }
}

/**
 * Sends a request until its answer is final, by the services' retry rule: a 503, and a 409 or
 * 429 with Retry-After, is sent again as it was (same Idempotency-Key) after Retry-After; so is
 * a request that got no answer (the service or its backend restarting). Gives up at the deadline.
 */
export async function sendUntilFinal(
  send: () => Promise<Response>,
  answers: Answers,
  deadlineMs: number,
): Promise<{ status: number; body: unknown }> {
  for (;;) {
    let response: Response | null = null;
    try {
      response = await send();
    } catch {
      answers.add('no answer');
    }
    if (response) {
      answers.add(response.status);
      const text = await response.text();
      const retryAfter = response.headers.get('retry-after');
      const transient =
        response.status === 503 ||
        ((response.status === 409 || response.status === 429) && retryAfter !== null);
      if (!transient)
        return { status: response.status, body: text ? (JSON.parse(text) as unknown) : null };
    }
    if (Date.now() > deadlineMs) throw new Error('no final answer before the deadline');
    const waitMs = response
      ? Math.min(Number(response.headers.get('retry-after') ?? 1) * 1000, RETRY_WAIT_MAX_MS)
      : NO_ANSWER_WAIT_MS;
    await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
}
